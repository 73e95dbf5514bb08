// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Base} from "./Base.sol";
import {ProtocolDAO} from "./ProtocolDAO.sol";
import {Staking} from "./Staking.sol";
import {Storage} from "./Storage.sol";

/// @title Node operator GGP rewards: cycle total and eligibility
contract ClaimNodeOp is Base {
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
}
