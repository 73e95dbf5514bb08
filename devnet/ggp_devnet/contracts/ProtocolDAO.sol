// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Base} from "./Base.sol";
import {Storage} from "./Storage.sol";

/// @title Protocol settings with mainnet getter names and keys
/// @dev Values live here rather than in Storage so that Storage can stay owner-write-only;
///      keys keep the mainnet scheme keccak256("ProtocolDAO." + name).
contract ProtocolDAO is Base {
	mapping(bytes32 => uint256) private uints;
	mapping(bytes32 => bool) private bools;

	constructor(Storage store_) Base(store_) {
		_set("RewardsCycleSeconds", 30 days);
		_set("RewardsEligibilityMinSeconds", 15 days);
		_set("InflationIntervalRate", 1000133680617113500);
		_set("InflationIntervalSeconds", 1 days);
		_set("ClaimingContractPct.ClaimNodeOp", 0.70 ether);
		_set("ClaimingContractPct.MultisigManager", 0.10 ether);
		_set("ClaimingContractPct.ClaimProtocolDAO", 0.20 ether);
		_set("MinCollateralizationRatio", 0.1 ether);
		_set("MaxCollateralizationRatio", 1.5 ether);
		_set("MinipoolNodeCommissionFeePct", 0);
		_set("MinipoolMinAVAXAssignment", 1000 ether);
		_set("MinipoolMaxAVAXAssignment", 1000 ether);
		_set("MinipoolMinAVAXStakingAmt", 2000 ether);
		_set("MinipoolMinDuration", 14 days);
		_set("MinipoolMaxDuration", 365 days);
		_set("MinipoolCycleDuration", 14 days);
		_set("MinipoolCancelMoratoriumSeconds", 5 days);
		_set("MinipoolCycleDelayTolerance", 1 days);
		_set("ExpectedAVAXRewardsRate", 0.1 ether);
		_set("TargetGGAVAXReserveRate", 0.1 ether);
		_set("FeeBips", 1000);
	}

	// ---- seeding ----

	/// @param name Setting name without the "ProtocolDAO." prefix, e.g. "ClaimingContractPct.ClaimNodeOp".
	function setUint(string calldata name, uint256 value) external onlyOwnerOrNetwork {
		_set(name, value);
	}

	function setBool(string calldata name, bool value) external onlyOwnerOrNetwork {
		bools[_key(name)] = value;
	}

	// ---- getters ----

	function getRewardsCycleSeconds() external view returns (uint256) {
		return _get("RewardsCycleSeconds");
	}

	function getRewardsEligibilityMinSeconds() external view returns (uint256) {
		return _get("RewardsEligibilityMinSeconds");
	}

	/// @dev Floored at 1 ether so inflation can never shrink the supply (mainnet behaviour).
	function getInflationIntervalRate() external view returns (uint256) {
		uint256 rate = _get("InflationIntervalRate");
		return rate < 1 ether ? 1 ether : rate;
	}

	function getInflationIntervalSeconds() external view returns (uint256) {
		return _get("InflationIntervalSeconds");
	}

	function getClaimingContractPct(string calldata claimingContract) external view returns (uint256) {
		return uints[keccak256(abi.encodePacked("ProtocolDAO.ClaimingContractPct.", claimingContract))];
	}

	function getMinCollateralizationRatio() external view returns (uint256) {
		return _get("MinCollateralizationRatio");
	}

	function getMaxCollateralizationRatio() external view returns (uint256) {
		return _get("MaxCollateralizationRatio");
	}

	function getMinipoolNodeCommissionFeePct() external view returns (uint256) {
		return _get("MinipoolNodeCommissionFeePct");
	}

	function getMinipoolMinAVAXAssignment() external view returns (uint256) {
		return _get("MinipoolMinAVAXAssignment");
	}

	function getMinipoolMaxAVAXAssignment() external view returns (uint256) {
		return _get("MinipoolMaxAVAXAssignment");
	}

	function getMinipoolMinAVAXStakingAmt() external view returns (uint256) {
		return _get("MinipoolMinAVAXStakingAmt");
	}

	function getMinipoolMinDuration() external view returns (uint256) {
		return _get("MinipoolMinDuration");
	}

	function getMinipoolMaxDuration() external view returns (uint256) {
		return _get("MinipoolMaxDuration");
	}

	function getMinipoolCycleDuration() external view returns (uint256) {
		return _get("MinipoolCycleDuration");
	}

	function getMinipoolCycleDelayTolerance() external view returns (uint256) {
		return _get("MinipoolCycleDelayTolerance");
	}

	function getMinipoolCancelMoratoriumSeconds() external view returns (uint256) {
		return _get("MinipoolCancelMoratoriumSeconds");
	}

	function getExpectedAVAXRewardsRate() external view returns (uint256) {
		return _get("ExpectedAVAXRewardsRate");
	}

	function getTargetGGAVAXReserveRate() external view returns (uint256) {
		return _get("TargetGGAVAXReserveRate");
	}

	function getFeeBips() external view returns (uint256) {
		return _get("FeeBips");
	}

	/// @dev Pause flags live in Storage, where every contract checks them.
	function getContractPaused(string calldata contractName) external view returns (bool) {
		return _paused(contractName);
	}

	function getWithdrawForDelegationEnabled() external view returns (bool) {
		return bools[_key("WithdrawForDelegationEnabled")];
	}

	// ---- internals ----

	function _key(string memory name) private pure returns (bytes32) {
		return keccak256(abi.encodePacked("ProtocolDAO.", name));
	}

	function _get(string memory name) private view returns (uint256) {
		return uints[_key(name)];
	}

	function _set(string memory name, uint256 value) private {
		uints[_key(name)] = value;
	}
}
