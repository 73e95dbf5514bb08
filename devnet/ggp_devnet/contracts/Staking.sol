// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Base} from "./Base.sol";
import {Oracle} from "./Oracle.sol";
import {ProtocolDAO} from "./ProtocolDAO.sol";
import {Storage} from "./Storage.sol";

/// @title GGP stakers with the mainnet view surface and collateral math
/// @dev Stakers are kept in a plain array (index = mainnet staker index) so bulk seeding is cheap.
contract Staking is Base {
	error StakerNotFound();
	error InvalidStakerAddress();
	error InsufficientBalance();
	error GGPLocked();
	error CannotWithdrawUnder150CollateralizationRatio();
	error InvalidAmount();

	event GGPStaked(address indexed from, uint256 amount);
	event GGPWithdrawn(address indexed to, uint256 amount);

	struct Staker {
		address stakerAddr;
		uint256 avaxAssigned;
		uint256 avaxStaked;
		uint256 avaxValidating;
		uint256 avaxValidatingHighWater;
		uint256 ggpRewards;
		uint256 ggpStaked;
		uint256 lastRewardsCycleCompleted;
		uint256 rewardsStartTime;
		uint256 ggpLockedUntil;
	}

	uint256 internal constant TENTH = 0.1 ether;

	Staker[] private stakers;
	mapping(address => uint256) private indexPlusOne;
	uint256 private totalGGPStake;
	/// @dev Never written: unknown addresses read from it, giving mainnet's all-zero answers.
	Staker private none;

	constructor(Storage store_) Base(store_) {}

	// ---- registry views ----

	function getStakerCount() external view returns (uint256) {
		return stakers.length;
	}

	function getTotalGGPStake() external view returns (uint256) {
		return totalGGPStake;
	}

	function getIndexOf(address stakerAddr) public view returns (int256) {
		return int256(indexPlusOne[stakerAddr]) - 1;
	}

	function requireValidStaker(address stakerAddr) public view returns (int256 index) {
		index = getIndexOf(stakerAddr);
		if (index == -1) revert StakerNotFound();
	}

	/// @dev Out-of-range indices return an all-zero struct, as mainnet's key/value reads do.
	function getStaker(int256 stakerIndex) public view returns (Staker memory staker) {
		if (stakerIndex >= 0 && uint256(stakerIndex) < stakers.length) staker = stakers[uint256(stakerIndex)];
	}

	/// @dev Same paging as mainnet, including the checked `max - offset` (offset past the end reverts).
	function getStakers(uint256 offset, uint256 limit) external view returns (Staker[] memory result) {
		uint256 total = stakers.length;
		uint256 max = offset + limit;
		if (max > total || limit == 0) max = total;
		result = new Staker[](max - offset);
		for (uint256 i = offset; i < max; ++i) {
			result[i - offset] = stakers[i];
		}
	}

	// ---- per-staker views ----

	function getGGPStake(address stakerAddr) public view returns (uint256) {
		return stakers[uint256(requireValidStaker(stakerAddr))].ggpStaked;
	}

	function getAVAXStake(address stakerAddr) external view returns (uint256) {
		return stakers[uint256(requireValidStaker(stakerAddr))].avaxStaked;
	}

	function getAVAXAssigned(address stakerAddr) public view returns (uint256) {
		return _staker(stakerAddr).avaxAssigned;
	}

	function getAVAXValidating(address stakerAddr) external view returns (uint256) {
		return _staker(stakerAddr).avaxValidating;
	}

	function getAVAXValidatingHighWater(address stakerAddr) public view returns (uint256) {
		return _staker(stakerAddr).avaxValidatingHighWater;
	}

	function getRewardsStartTime(address stakerAddr) external view returns (uint256) {
		return _staker(stakerAddr).rewardsStartTime;
	}

	function getGGPRewards(address stakerAddr) external view returns (uint256) {
		return _staker(stakerAddr).ggpRewards;
	}

	function getLastRewardsCycleCompleted(address stakerAddr) external view returns (uint256) {
		return _staker(stakerAddr).lastRewardsCycleCompleted;
	}

	function getGGPLockedUntil(address stakerAddr) external view returns (uint256) {
		return _staker(stakerAddr).ggpLockedUntil;
	}

	// ---- collateral math (mainnet order of operations, solmate rounding) ----

	function getMinimumGGPStake(address stakerAddr) external view returns (uint256) {
		uint256 price = _ggpPrice();
		uint256 ggp100pct = divWadDown(getAVAXAssigned(stakerAddr), price);
		return mulWadDown(ggp100pct, _dao().getMinCollateralizationRatio());
	}

	function getCollateralizationRatio(address stakerAddr) public view returns (uint256) {
		uint256 avaxAssigned = getAVAXAssigned(stakerAddr);
		if (avaxAssigned == 0) return type(uint256).max;
		return divWadDown(mulWadDown(getGGPStake(stakerAddr), _ggpPrice()), avaxAssigned);
	}

	function getEffectiveRewardsRatio(address stakerAddr) public view returns (uint256) {
		uint256 highWater = getAVAXValidatingHighWater(stakerAddr);
		if (highWater == 0) return 0;
		if (getCollateralizationRatio(stakerAddr) < TENTH) return 0;
		uint256 ratio = divWadDown(mulWadDown(getGGPStake(stakerAddr), _ggpPrice()), highWater);
		uint256 maxRatio = _dao().getMaxCollateralizationRatio();
		return ratio > maxRatio ? maxRatio : ratio;
	}

	function getEffectiveGGPStaked(address stakerAddr) external view returns (uint256) {
		uint256 price = _ggpPrice();
		uint256 highWater = getAVAXValidatingHighWater(stakerAddr);
		return divWadDown(mulWadDown(highWater, getEffectiveRewardsRatio(stakerAddr)), price);
	}

	// ---- network mutators (MinipoolManager, ClaimNodeOp; mainnet's onlyRegisteredNetworkContract) ----

	function increaseAVAXStake(address stakerAddr, uint256 amount) external onlyOwnerOrNetwork {
		_existing(stakerAddr).avaxStaked += amount;
	}

	function decreaseAVAXStake(address stakerAddr, uint256 amount) external onlyOwnerOrNetwork {
		_existing(stakerAddr).avaxStaked -= amount;
	}

	function increaseAVAXAssigned(address stakerAddr, uint256 amount) external onlyOwnerOrNetwork {
		_existing(stakerAddr).avaxAssigned += amount;
	}

	function decreaseAVAXAssigned(address stakerAddr, uint256 amount) external onlyOwnerOrNetwork {
		_existing(stakerAddr).avaxAssigned -= amount;
	}

	function increaseAVAXValidating(address stakerAddr, uint256 amount) external onlyOwnerOrNetwork {
		_existing(stakerAddr).avaxValidating += amount;
	}

	function decreaseAVAXValidating(address stakerAddr, uint256 amount) external onlyOwnerOrNetwork {
		_existing(stakerAddr).avaxValidating -= amount;
	}

	function setAVAXValidatingHighWater(address stakerAddr, uint256 amount) external onlyOwnerOrNetwork {
		_existing(stakerAddr).avaxValidatingHighWater = amount;
	}

	function increaseGGPRewards(address stakerAddr, uint256 amount) external onlyOwnerOrNetwork {
		_existing(stakerAddr).ggpRewards += amount;
	}

	function setRewardsStartTime(address stakerAddr, uint256 time) external onlyOwnerOrNetwork {
		_existing(stakerAddr).rewardsStartTime = time;
	}

	function setLastRewardsCycleCompleted(address stakerAddr, uint256 cycle) external onlyOwnerOrNetwork {
		_existing(stakerAddr).lastRewardsCycleCompleted = cycle;
	}

	/// @dev Slashed GGP leaves the staker (to the protocol DAO on mainnet), so the total stake shrinks.
	function slashGGP(address stakerAddr, uint256 amount) external onlyOwnerOrNetwork {
		_existing(stakerAddr).ggpStaked -= amount;
		totalGGPStake -= amount;
	}

	/// @notice Stake GGP for an operator, registering it on first stake (mainnet's stakeGGPOnBehalfOf).
	function stakeGGPFor(address stakerAddr, uint256 amount) external onlyOwnerOrNetwork whenNotPaused("Staking") {
		if (stakerAddr == address(0)) revert InvalidStakerAddress();
		if (indexPlusOne[stakerAddr] == 0) {
			stakers.push();
			stakers[stakers.length - 1].stakerAddr = stakerAddr;
			indexPlusOne[stakerAddr] = stakers.length;
		}
		_existing(stakerAddr).ggpStaked += amount;
		totalGGPStake += amount;
		emit GGPStaked(stakerAddr, amount);
	}

	/// @notice The staker takes GGP out, as mainnet's withdrawGGP checks it (no pause: mainnet has none
	///         here): no more than it has staked, not while locked, and only while the GGP left keeps its
	///         collateralization at the maximum ratio or above (none assigned: any). A zero amount is
	///         refused as mainnet's Vault refuses it. The devnet keeps no GGP tokens: bookkeeping only.
	function withdrawGGP(uint256 amount) external {
		Staker storage s = _staker(msg.sender);
		if (amount > s.ggpStaked) revert InsufficientBalance();
		if (s.ggpLockedUntil > block.timestamp) revert GGPLocked();
		emit GGPWithdrawn(msg.sender, amount);
		s.ggpStaked -= amount;
		totalGGPStake -= amount;
		if (getCollateralizationRatio(msg.sender) < _dao().getMaxCollateralizationRatio()) {
			revert CannotWithdrawUnder150CollateralizationRatio();
		}
		if (amount == 0) revert InvalidAmount();
	}

	// ---- seeding ----

	/// @notice Insert or overwrite stakers keyed by stakerAddr, keeping getTotalGGPStake() in sync.
	function setStakers(Staker[] calldata items) external onlyOwnerOrNetwork {
		uint256 total = totalGGPStake;
		for (uint256 i; i < items.length; ++i) {
			Staker calldata item = items[i];
			address addr = item.stakerAddr;
			if (addr == address(0)) revert InvalidStakerAddress();

			uint256 pos = indexPlusOne[addr];
			uint256 prev;
			if (pos == 0) {
				stakers.push(item);
				indexPlusOne[addr] = stakers.length;
			} else {
				Staker storage s = stakers[pos - 1];
				prev = s.ggpStaked;
				s.avaxAssigned = item.avaxAssigned;
				s.avaxStaked = item.avaxStaked;
				s.avaxValidating = item.avaxValidating;
				s.avaxValidatingHighWater = item.avaxValidatingHighWater;
				s.ggpRewards = item.ggpRewards;
				s.ggpStaked = item.ggpStaked;
				s.lastRewardsCycleCompleted = item.lastRewardsCycleCompleted;
				s.rewardsStartTime = item.rewardsStartTime;
				s.ggpLockedUntil = item.ggpLockedUntil;
			}

			uint256 next = item.ggpStaked;
			if (next > prev) {
				total += next - prev;
				emit GGPStaked(addr, next - prev);
			} else if (next < prev) {
				total -= prev - next;
				emit GGPWithdrawn(addr, prev - next);
			}
		}
		totalGGPStake = total;
	}

	// ---- internals ----

	function _existing(address stakerAddr) private view returns (Staker storage) {
		return stakers[uint256(requireValidStaker(stakerAddr))];
	}

	function _staker(address stakerAddr) private view returns (Staker storage) {
		uint256 pos = indexPlusOne[stakerAddr];
		return pos == 0 ? none : stakers[pos - 1];
	}

	function _ggpPrice() private view returns (uint256 price) {
		(price, ) = Oracle(_contract("Oracle")).getGGPPriceInAVAX();
	}

	function _dao() private view returns (ProtocolDAO) {
		return ProtocolDAO(_contract("ProtocolDAO"));
	}
}
