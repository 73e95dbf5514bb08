// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Base} from "./Base.sol";
import {ClaimNodeOp} from "./ClaimNodeOp.sol";
import {ProtocolDAO} from "./ProtocolDAO.sol";
import {Storage} from "./Storage.sol";
import {TokenGGP} from "./TokenGGP.sol";

/// @title GGP inflation and rewards cycles
/// @dev Minted GGP stays in this contract: there is no Vault on the devnet, only the accounting matters.
contract RewardsPool is Base {
	error UnableToStartRewardsCycle();
	error ContractHasNotBeenInitialized();
	error IncorrectRewardsDistribution();

	event GGPInflated(uint256 newTokens);
	event NewRewardsCycleStarted(uint256 totalRewardsAmt);
	event ClaimNodeOpRewardsTransferred(uint256 value);
	event ProtocolDAORewardsTransferred(uint256 value);
	event MultisigRewardsTransferred(uint256 value);

	bool private initialized;
	uint256 private rewardsCycleCount;
	uint256 private rewardsCycleStartTime;
	uint256 private rewardsCycleTotalAmt;
	uint256 private inflationIntervalStartTime;

	constructor(Storage store_) Base(store_) {}

	// ---- views ----

	function getRewardsCycleCount() external view returns (uint256) {
		return rewardsCycleCount;
	}

	function getRewardsCycleStartTime() external view returns (uint256) {
		return rewardsCycleStartTime;
	}

	function getRewardsCycleTotalAmt() external view returns (uint256) {
		return rewardsCycleTotalAmt;
	}

	function getInflationIntervalStartTime() external view returns (uint256) {
		return inflationIntervalStartTime;
	}

	function getInflationIntervalsElapsed() public view returns (uint256) {
		uint256 start = inflationIntervalStartTime;
		if (start == 0) revert ContractHasNotBeenInitialized();
		return (block.timestamp - start) / _dao().getInflationIntervalSeconds();
	}

	function getRewardsCyclesElapsed() public view returns (uint256) {
		return (block.timestamp - rewardsCycleStartTime) / _dao().getRewardsCycleSeconds();
	}

	/// @notice Supply now and after compounding the per-interval rate over every elapsed interval.
	function getInflationAmt() public view returns (uint256 currentTotalSupply, uint256 newTotalSupply) {
		uint256 rate = _dao().getInflationIntervalRate();
		uint256 intervals = getInflationIntervalsElapsed();
		currentTotalSupply = TokenGGP(_contract("TokenGGP")).totalSupply();
		newTotalSupply = currentTotalSupply;
		for (uint256 i; i < intervals; ++i) {
			newTotalSupply = mulWadDown(newTotalSupply, rate);
		}
	}

	function getClaimingContractDistribution(string memory claimingContract) public view returns (uint256) {
		return mulWadDown(_dao().getClaimingContractPct(claimingContract), rewardsCycleTotalAmt);
	}

	/// @dev The very first cycle may start without waiting a full cycle, so a fresh devnet can reach cycle 1.
	function canStartRewardsCycle() public view returns (bool) {
		if (_paused("RewardsPool")) return false;
		return (rewardsCycleCount == 0 || getRewardsCyclesElapsed() > 0) && getInflationIntervalsElapsed() > 0;
	}

	// ---- actions ----

	function initialize() external onlyOwnerOrNetwork {
		if (initialized) return;
		initialized = true;
		rewardsCycleStartTime = block.timestamp;
		inflationIntervalStartTime = block.timestamp;
	}

	function startRewardsCycle() external onlyOwnerOrNetwork {
		if (!canStartRewardsCycle()) revert UnableToStartRewardsCycle();

		// Mainnet reports the previous cycle's total here, before inflating.
		emit NewRewardsCycleStarted(rewardsCycleTotalAmt);

		rewardsCycleStartTime = block.timestamp;
		rewardsCycleCount += 1;
		_inflate();

		uint256 daoAmt = getClaimingContractDistribution("ClaimProtocolDAO");
		uint256 multisigAmt = getClaimingContractDistribution("MultisigManager");
		uint256 nopAmt = getClaimingContractDistribution("ClaimNodeOp");
		if (daoAmt + multisigAmt + nopAmt > rewardsCycleTotalAmt) revert IncorrectRewardsDistribution();

		if (daoAmt > 0) emit ProtocolDAORewardsTransferred(daoAmt);
		if (multisigAmt > 0) emit MultisigRewardsTransferred(multisigAmt);
		if (nopAmt > 0) {
			emit ClaimNodeOpRewardsTransferred(nopAmt);
			ClaimNodeOp(_contract("ClaimNodeOp")).setRewardsCycleTotal(nopAmt);
		}
	}

	/// @notice Put the pool into an arbitrary state (e.g. mid-history for large scenarios).
	function setState(uint256 count, uint256 cycleStart, uint256 totalAmt, uint256 inflationStart) external onlyOwner {
		initialized = true;
		rewardsCycleCount = count;
		rewardsCycleStartTime = cycleStart;
		rewardsCycleTotalAmt = totalAmt;
		inflationIntervalStartTime = inflationStart;
	}

	// ---- internals ----

	function _inflate() private {
		(uint256 currentTotalSupply, uint256 newTotalSupply) = getInflationAmt();
		TokenGGP ggp = TokenGGP(_contract("TokenGGP"));
		uint256 maxSupply = ggp.MAX_SUPPLY();
		uint256 newTokens = newTotalSupply > maxSupply ? maxSupply - currentTotalSupply : newTotalSupply - currentTotalSupply;

		emit GGPInflated(newTokens);
		ggp.mint(address(this), newTokens);

		// Mainnet advances the start by all elapsed seconds, dropping any partial interval.
		inflationIntervalStartTime = block.timestamp;
		rewardsCycleTotalAmt = newTokens;
	}

	function _dao() private view returns (ProtocolDAO) {
		return ProtocolDAO(_contract("ProtocolDAO"));
	}
}
