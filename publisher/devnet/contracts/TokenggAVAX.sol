// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Base} from "./Base.sol";
import {ERC20} from "./ERC20.sol";
import {ProtocolDAO} from "./ProtocolDAO.sol";
import {Storage} from "./Storage.sol";
import {WAVAX} from "./WAVAX.sol";

/// @title Liquid staking vault (xERC4626 streaming rewards), mainnet view surface
/// @dev Instead of moving AVAX, seeding mints/burns WAVAX held by this contract, so
///      asset.balanceOf(this) behaves exactly as on mainnet for syncRewards().
contract TokenggAVAX is ERC20, Base {
	error SyncError();
	error ZeroShares();
	error ZeroAssets();
	error InvalidStakingDeposit();
	error WithdrawAmountTooLarge();
	error InvalidRewardsCycleLength();
	error RewardsOverflow();

	event Deposit(address indexed caller, address indexed owner, uint256 assets, uint256 shares);
	event Withdraw(address indexed caller, address indexed receiver, address indexed owner, uint256 assets, uint256 shares);
	// Mainnet TokenggAVAX declares cycleEnd as uint256 (not xERC4626's uint32), which fixes topic0.
	event NewRewardsCycle(uint256 indexed cycleEnd, uint256 rewardsAmt);
	event DepositedFromStaking(bytes32 indexed source, address indexed caller, uint256 baseAmt, uint256 rewardsAmt);
	event FeeCollected(bytes32 indexed source, uint256 feeAmount);
	event WithdrawnForStaking(bytes32 indexed purpose, address indexed caller, uint256 assets);

	uint8 public constant version = 3;
	bytes32 public constant MINIPOOL_SOURCE = bytes32("MINIPOOL_SOURCE");

	WAVAX public immutable asset;
	uint32 public immutable rewardsCycleLength;

	uint32 public lastSync;
	uint32 public rewardsCycleEnd;
	uint192 public lastRewardsAmt;
	uint256 public totalReleasedAssets;
	uint256 public stakingTotalAssets;

	constructor(Storage store_, WAVAX asset_, uint32 rewardsCycleLength_) ERC20("Hypha Staked AVAX", "stAVAX", 18) Base(store_) {
		if (rewardsCycleLength_ == 0) revert InvalidRewardsCycleLength();
		asset = asset_;
		rewardsCycleLength = rewardsCycleLength_;
		// Aligned to a cycle boundary, as mainnet initialize() does.
		rewardsCycleEnd = (uint32(block.timestamp) / rewardsCycleLength_) * rewardsCycleLength_;
	}

	// ---- views ----

	function totalAssets() public view returns (uint256) {
		uint256 released = totalReleasedAssets;
		uint256 rewards = lastRewardsAmt;
		uint256 end = rewardsCycleEnd;
		if (block.timestamp >= end) return released + rewards;
		uint256 sync = lastSync;
		return released + (rewards * (block.timestamp - sync)) / (end - sync);
	}

	function amountAvailableForStaking() public view returns (uint256) {
		uint256 assets = totalAssets();
		uint256 reserved = mulWadDown(assets, ProtocolDAO(_contract("ProtocolDAO")).getTargetGGAVAXReserveRate());
		uint256 committed = reserved + stakingTotalAssets;
		return committed > assets ? 0 : assets - committed;
	}

	function convertToShares(uint256 assets) public view returns (uint256) {
		uint256 supply = totalSupply;
		return supply == 0 ? assets : mulDivDown(assets, supply, totalAssets());
	}

	function convertToAssets(uint256 shares) public view returns (uint256) {
		uint256 supply = totalSupply;
		return supply == 0 ? shares : mulDivDown(shares, totalAssets(), supply);
	}

	function previewDeposit(uint256 assets) public view returns (uint256) {
		if (assets > 0 && _paused("TokenggAVAX")) revert ContractPaused();
		return convertToShares(assets);
	}

	function previewMint(uint256 shares) public view returns (uint256) {
		if (shares > 0 && _paused("TokenggAVAX")) revert ContractPaused();
		uint256 supply = totalSupply;
		return supply == 0 ? shares : mulDivUp(shares, totalAssets(), supply);
	}

	function previewWithdraw(uint256 assets) public view returns (uint256) {
		uint256 supply = totalSupply;
		return supply == 0 ? assets : mulDivUp(assets, supply, totalAssets());
	}

	function previewRedeem(uint256 shares) public view returns (uint256) {
		return convertToAssets(shares);
	}

	function maxDeposit(address) public view returns (uint256) {
		return _paused("TokenggAVAX") ? 0 : type(uint256).max;
	}

	function maxMint(address) public view returns (uint256) {
		return _paused("TokenggAVAX") ? 0 : type(uint256).max;
	}

	function maxWithdraw(address _owner) public view returns (uint256) {
		uint256 assets = convertToAssets(balanceOf[_owner]);
		uint256 avail = _liquidAssets();
		return assets > avail ? avail : assets;
	}

	function maxRedeem(address _owner) public view returns (uint256) {
		uint256 shares = balanceOf[_owner];
		uint256 avail = convertToShares(_liquidAssets());
		return shares > avail ? avail : shares;
	}

	/// @dev Assets not out on validators; mainnet would underflow-revert where this returns 0.
	function _liquidAssets() internal view returns (uint256) {
		uint256 assets = totalAssets();
		uint256 staking = stakingTotalAssets;
		return assets > staking ? assets - staking : 0;
	}

	// ---- rewards ----

	function syncRewards() external onlyOwnerOrNetwork {
		if (block.timestamp < rewardsCycleEnd) revert SyncError();

		uint256 lastRewards = lastRewardsAmt;
		uint256 released = totalReleasedAssets;
		// Checked: a WAVAX shortfall against the books must revert, never wrap.
		uint256 nextRewards = asset.balanceOf(address(this)) + stakingTotalAssets - released - lastRewards;
		if (nextRewards > type(uint192).max) revert RewardsOverflow();
		uint256 len = rewardsCycleLength;
		uint256 end = ((block.timestamp + len) / len) * len;

		totalReleasedAssets = released + lastRewards;
		lastRewardsAmt = uint192(nextRewards);
		lastSync = uint32(block.timestamp);
		rewardsCycleEnd = uint32(end);
		emit NewRewardsCycle(end, nextRewards);
	}

	// ---- seeding ----

	function depositFor(address receiver, uint256 assets) external onlyOwnerOrNetwork whenNotPaused("TokenggAVAX") returns (uint256 shares) {
		shares = convertToShares(assets);
		if (shares == 0) revert ZeroShares();
		asset.mint(address(this), assets);
		totalReleasedAssets += assets;
		_mint(receiver, shares);
		emit Deposit(msg.sender, receiver, assets, shares);
	}

	function redeemFor(address _owner, uint256 shares) external onlyOwnerOrNetwork returns (uint256 assets) {
		assets = convertToAssets(shares);
		if (assets == 0) revert ZeroAssets();
		_burn(_owner, shares);
		totalReleasedAssets -= assets;
		asset.burn(address(this), assets);
		emit Withdraw(msg.sender, _owner, _owner, assets, shares);
	}

	function withdrawForStaking(uint256 assets) external onlyOwnerOrNetwork {
		if (assets > amountAvailableForStaking()) revert WithdrawAmountTooLarge();
		stakingTotalAssets += assets;
		asset.burn(address(this), assets);
		emit WithdrawnForStaking(MINIPOOL_SOURCE, msg.sender, assets);
	}

	/// @dev The fee goes to the protocol on mainnet, so only the remainder re-enters the vault.
	function depositFromStaking(uint256 baseAmt, uint256 rewardsAmt) external onlyOwnerOrNetwork {
		if (baseAmt > stakingTotalAssets) revert InvalidStakingDeposit();
		uint256 fee = mulDivDown(rewardsAmt, ProtocolDAO(_contract("ProtocolDAO")).getFeeBips(), 10000);
		stakingTotalAssets -= baseAmt;
		asset.mint(address(this), baseAmt + rewardsAmt - fee);
		if (fee > 0) emit FeeCollected(MINIPOOL_SOURCE, fee);
		emit DepositedFromStaking(MINIPOOL_SOURCE, msg.sender, baseAmt, rewardsAmt - fee);
	}
}
