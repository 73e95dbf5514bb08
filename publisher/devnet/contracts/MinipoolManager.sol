// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Base} from "./Base.sol";
import {ProtocolDAO} from "./ProtocolDAO.sol";
import {Storage} from "./Storage.sol";

/// @dev File-level like mainnet's types/MinipoolStatus.sol, so the ABI internalType matches.
enum MinipoolStatus {
	Prelaunch,
	Launched,
	Staking,
	Withdrawable,
	Finished,
	Canceled,
	Error
}

/// @title Minipools with the mainnet view surface
/// @dev Pools are kept in a plain array (index = mainnet minipool index) so bulk seeding is cheap.
contract MinipoolManager is Base {
	error InvalidNodeID();
	error InvalidStatus();
	error MinipoolNotFound();

	event MinipoolStatusChanged(address indexed nodeID, MinipoolStatus indexed status);

	struct Minipool {
		int256 index;
		address nodeID;
		uint256 status;
		uint256 duration;
		uint256 delegationFee;
		address owner;
		address multisigAddr;
		uint256 avaxNodeOpAmt;
		uint256 avaxNodeOpInitialAmt;
		uint256 avaxLiquidStakerAmt;
		bytes blsPubkeyAndSig;
		bytes32 txID;
		uint256 creationTime;
		uint256 initialStartTime;
		uint256 startTime;
		uint256 endTime;
		uint256 avaxTotalRewardAmt;
		bytes32 errorCode;
		uint256 ggpSlashAmt;
		uint256 avaxNodeOpRewardAmt;
		uint256 avaxLiquidStakerRewardAmt;
		bytes32 hardwareProvider;
	}

	/// @dev The stored `index` field is whatever the seeder sent; readers always overwrite it with the position.
	Minipool[] private pools;
	mapping(address => uint256) private indexPlusOne;
	uint256 private totalAVAXLiquidStakerAmt;

	constructor(Storage store_) Base(store_) {}

	// ---- views ----

	function getMinipoolCount() external view returns (uint256) {
		return pools.length;
	}

	function getIndexOf(address nodeID) public view returns (int256) {
		return int256(indexPlusOne[nodeID]) - 1;
	}

	/// @dev Out-of-range indices return an empty struct carrying the requested index, as on mainnet.
	function getMinipool(int256 index) public view returns (Minipool memory mp) {
		if (index >= 0 && uint256(index) < pools.length) mp = pools[uint256(index)];
		mp.index = index;
	}

	function getMinipoolByNodeID(address nodeID) external view returns (Minipool memory) {
		return getMinipool(getIndexOf(nodeID));
	}

	/// @notice Page over all indices [offset, offset+limit) and keep those in `status` (limit 0 = to the end).
	function getMinipools(MinipoolStatus status, uint256 offset, uint256 limit) external view returns (Minipool[] memory result) {
		uint256 total = pools.length;
		uint256 max = offset + limit;
		if (max > total || limit == 0) max = total;
		// Checked like mainnet: an offset past the end reverts.
		result = new Minipool[](max - offset);
		uint256 found;
		for (uint256 i = offset; i < max; ++i) {
			// Test the status before copying the whole record to keep wide pages cheap.
			if (pools[i].status == uint256(status)) {
				Minipool memory mp = pools[i];
				mp.index = int256(i);
				result[found++] = mp;
			}
		}
		assembly ("memory-safe") {
			mstore(result, found)
		}
	}

	function getTotalAVAXLiquidStakerAmt() external view returns (uint256) {
		return totalAVAXLiquidStakerAmt;
	}

	function getExpectedAVAXRewardsAmt(uint256 duration, uint256 avaxAmt) external view returns (uint256) {
		uint256 rate = ProtocolDAO(_contract("ProtocolDAO")).getExpectedAVAXRewardsRate();
		return (mulWadDown(avaxAmt, rate) * duration) / 365 days;
	}

	// ---- seeding ----

	/// @notice Insert or overwrite minipools keyed by nodeID; the input `index` is ignored.
	function setMinipools(Minipool[] calldata items) external onlyOwnerOrNetwork {
		for (uint256 i; i < items.length; ++i) {
			Minipool calldata item = items[i];
			address nodeID = item.nodeID;
			uint256 status = item.status;
			if (nodeID == address(0)) revert InvalidNodeID();
			if (status > uint256(MinipoolStatus.Error)) revert InvalidStatus();

			uint256 pos = indexPlusOne[nodeID];
			bool changed = true;
			if (pos == 0) {
				pools.push(item);
				indexPlusOne[nodeID] = pools.length;
			} else {
				Minipool storage mp = pools[pos - 1];
				changed = mp.status != status;
				pools[pos - 1] = item;
			}
			if (changed) emit MinipoolStatusChanged(nodeID, MinipoolStatus(status));
		}
	}

	function setStatus(address nodeID, uint256 status) external onlyOwnerOrNetwork {
		uint256 pos = indexPlusOne[nodeID];
		if (pos == 0) revert MinipoolNotFound();
		if (status > uint256(MinipoolStatus.Error)) revert InvalidStatus();
		pools[pos - 1].status = status;
		emit MinipoolStatusChanged(nodeID, MinipoolStatus(status));
	}

	function setTotalAVAXLiquidStakerAmt(uint256 amount) external onlyOwnerOrNetwork {
		totalAVAXLiquidStakerAmt = amount;
	}
}
