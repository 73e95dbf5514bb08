// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Base} from "./Base.sol";
import {ProtocolDAO} from "./ProtocolDAO.sol";
import {RewardsPool} from "./RewardsPool.sol";
import {Staking} from "./Staking.sol";
import {Storage} from "./Storage.sol";

/// @title Node operator GGP rewards: cycle total and eligibility
contract ClaimNodeOp is Base {
	error InvalidAmount();
	error RewardsAlreadyDistributedToStaker(address staker);
	error RewardsCycleNotStarted();

	uint256 private rewardsCycleTotal;

	constructor(Storage store_) Base(store_) {}

	function getRewardsCycleTotal() external view returns (uint256) {
		return rewardsCycleTotal;
	}

	function setRewardsCycleTotal(uint256 amount) external onlyOwnerOrNetwork {
		rewardsCycleTotal = amount;
	}

	function isEligible(address stakerAddr) external view returns (bool) {
		Staking staking = Staking(_contract("Staking"));
		uint256 start = staking.getRewardsStartTime(stakerAddr);
		// A start time in the future would underflow on mainnet; treat it as not yet eligible.
		if (start == 0 || start > block.timestamp) return false;
		uint256 minSeconds = ProtocolDAO(_contract("ProtocolDAO")).getRewardsEligibilityMinSeconds();
		return block.timestamp - start >= minSeconds && staking.getAVAXValidatingHighWater(stakerAddr) > 0;
	}

	/// @notice Rialto's per-staker distribution: a pro-rata share of this cycle's node-operator GGP
	///         against the total eligible stake the caller worked out off-chain.
	/// @dev Mainnet order: mark the cycle done, share = divWad(effective, TEGS), reward = mulWad(share, total),
	///      then reset the high-water mark to what validates now, and the start time when nothing is assigned.
	function calculateAndDistributeRewards(address stakerAddr, uint256 totalEligibleGGPStaked) external onlyOwnerOrNetwork {
		Staking staking = Staking(_contract("Staking"));
		staking.requireValidStaker(stakerAddr);
		uint256 cycle = RewardsPool(_contract("RewardsPool")).getRewardsCycleCount();
		if (cycle == 0) revert RewardsCycleNotStarted();
		if (staking.getLastRewardsCycleCompleted(stakerAddr) == cycle) revert RewardsAlreadyDistributedToStaker(stakerAddr);
		staking.setLastRewardsCycleCompleted(stakerAddr, cycle);

		uint256 percentage = divWadDown(staking.getEffectiveGGPStaked(stakerAddr), totalEligibleGGPStaked);
		uint256 total = rewardsCycleTotal;
		uint256 amount = mulWadDown(percentage, total);
		if (amount > total) revert InvalidAmount();

		staking.setAVAXValidatingHighWater(stakerAddr, staking.getAVAXValidating(stakerAddr));
		staking.increaseGGPRewards(stakerAddr, amount);
		if (staking.getAVAXAssigned(stakerAddr) == 0) staking.setRewardsStartTime(stakerAddr, 0);
	}
}
