// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Base} from "./Base.sol";
import {Oracle} from "./Oracle.sol";
import {ProtocolDAO} from "./ProtocolDAO.sol";
import {Staking} from "./Staking.sol";
import {Storage} from "./Storage.sol";
import {TokenggAVAX} from "./TokenggAVAX.sol";

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
	error InvalidStateTransition();
	error InvalidAVAXAssignmentRequest();
	error InsufficientAVAXForMinipoolCreation();
	error DurationOutOfBounds();
	error DelegationFeeOutOfBounds();
	error InsufficientGGPCollateralization();
	error CancellationTooEarly();
	error WithdrawAmountTooLarge();
	error InvalidStartTime();
	error InvalidEndTime();

	event MinipoolStatusChanged(address indexed nodeID, MinipoolStatus indexed status);
	event GGPSlashed(address indexed nodeID, uint256 ggp);

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

	function getExpectedAVAXRewardsAmt(uint256 duration, uint256 avaxAmt) public view returns (uint256) {
		uint256 rate = ProtocolDAO(_contract("ProtocolDAO")).getExpectedAVAXRewardsRate();
		return (mulWadDown(avaxAmt, rate) * duration) / 365 days;
	}

	function calculateGGPSlashAmt(uint256 avaxRewardAmt) public view returns (uint256) {
		(uint256 price, ) = Oracle(_contract("Oracle")).getGGPPriceInAVAX();
		return divWadDown(avaxRewardAmt, price);
	}

	// ---- life cycle (mainnet semantics; AVAX moves are accounting only, the caller acts as owner and Rialto) ----

	/// @notice An operator's deposit matched 1:1 by liquid stakers (mainnet createMinipool, on the owner's behalf).
	function createMinipool(address owner_, address nodeID, uint256 duration, uint256 delegationFee, uint256 avaxAssignmentRequest)
		external
		onlyOwnerOrNetwork
		whenNotPaused("MinipoolManager")
	{
		if (nodeID == address(0)) revert InvalidNodeID();
		ProtocolDAO dao = _dao();
		if (avaxAssignmentRequest > dao.getMinipoolMaxAVAXAssignment() || avaxAssignmentRequest < dao.getMinipoolMinAVAXAssignment()) {
			revert InvalidAVAXAssignmentRequest();
		}
		if (2 * avaxAssignmentRequest < dao.getMinipoolMinAVAXStakingAmt()) revert InsufficientAVAXForMinipoolCreation();
		if (duration < dao.getMinipoolMinDuration() || duration > dao.getMinipoolMaxDuration()) revert DurationOutOfBounds();
		if (delegationFee < 20_000 || delegationFee > 1_000_000) revert DelegationFeeOutOfBounds();

		Staking staking = _staking();
		staking.increaseAVAXStake(owner_, avaxAssignmentRequest);
		staking.increaseAVAXAssigned(owner_, avaxAssignmentRequest);
		if (staking.getRewardsStartTime(owner_) == 0) staking.setRewardsStartTime(owner_, block.timestamp);
		if (staking.getCollateralizationRatio(owner_) < dao.getMinCollateralizationRatio()) revert InsufficientGGPCollateralization();

		uint256 pos = indexPlusOne[nodeID];
		if (pos == 0) {
			pools.push();
			pos = pools.length;
			indexPlusOne[nodeID] = pos;
		} else {
			_requireTransition(pools[pos - 1], MinipoolStatus.Prelaunch);
			_resetCycleData(pools[pos - 1]);
		}
		Minipool storage mp = pools[pos - 1];
		mp.index = int256(pos - 1);
		mp.nodeID = nodeID;
		mp.status = uint256(MinipoolStatus.Prelaunch);
		mp.duration = duration;
		mp.delegationFee = delegationFee;
		mp.owner = owner_;
		mp.multisigAddr = msg.sender;
		mp.avaxNodeOpInitialAmt = avaxAssignmentRequest;
		mp.avaxNodeOpAmt = avaxAssignmentRequest;
		mp.avaxLiquidStakerAmt = avaxAssignmentRequest;
		mp.creationTime = block.timestamp;
		mp.initialStartTime = 0;
		emit MinipoolStatusChanged(nodeID, MinipoolStatus.Prelaunch);
	}

	/// @notice The owner cancels a Prelaunch minipool after the moratorium.
	function cancelMinipool(address nodeID) external onlyOwnerOrNetwork {
		Minipool storage mp = _pool(nodeID);
		if (block.timestamp - mp.creationTime < _dao().getMinipoolCancelMoratoriumSeconds()) revert CancellationTooEarly();
		_requireTransition(mp, MinipoolStatus.Canceled);
		mp.status = uint256(MinipoolStatus.Canceled);
		Staking staking = _staking();
		staking.decreaseAVAXStake(mp.owner, mp.avaxNodeOpAmt);
		staking.decreaseAVAXAssigned(mp.owner, mp.avaxLiquidStakerAmt);
		// Not due rewards this cycle and nothing else queued: the operator starts over.
		if (staking.getAVAXValidatingHighWater(mp.owner) == 0 && staking.getAVAXAssigned(mp.owner) == 0) {
			staking.setRewardsStartTime(mp.owner, 0);
		}
		emit MinipoolStatusChanged(nodeID, MinipoolStatus.Canceled);
	}

	/// @notice Rialto takes the liquid stakers' AVAX out of ggAVAX to register the validator.
	function claimAndInitiateStaking(address nodeID) external onlyOwnerOrNetwork {
		_claim(_pool(nodeID), false);
	}

	function recordStakingStart(address nodeID, bytes32 txID, uint256 startTime) external onlyOwnerOrNetwork {
		Minipool storage mp = _pool(nodeID);
		_requireTransition(mp, MinipoolStatus.Staking);
		if (startTime > block.timestamp) revert InvalidStartTime();
		mp.status = uint256(MinipoolStatus.Staking);
		mp.txID = txID;
		mp.startTime = startTime;
		if (mp.initialStartTime == 0) mp.initialStartTime = startTime;
		Staking staking = _staking();
		staking.increaseAVAXValidating(mp.owner, mp.avaxLiquidStakerAmt);
		uint256 validating = staking.getAVAXValidating(mp.owner);
		if (staking.getAVAXValidatingHighWater(mp.owner) < validating) staking.setAVAXValidatingHighWater(mp.owner, validating);
		emit MinipoolStatusChanged(nodeID, MinipoolStatus.Staking);
	}

	/// @notice The validation period ended with `avaxTotalRewardAmt` paid by the network; a zero reward slashes GGP.
	function recordStakingEnd(address nodeID, uint256 endTime, uint256 avaxTotalRewardAmt) public onlyOwnerOrNetwork {
		Minipool storage mp = _pool(nodeID);
		_requireTransition(mp, MinipoolStatus.Withdrawable);
		if (endTime <= mp.startTime || endTime > block.timestamp) revert InvalidEndTime();
		mp.status = uint256(MinipoolStatus.Withdrawable);
		mp.endTime = endTime;
		mp.avaxTotalRewardAmt = avaxTotalRewardAmt;

		// Equal halves on equal principals; the operator's commission comes out of the stakers' half.
		uint256 half = avaxTotalRewardAmt / 2;
		uint256 lsReward = half - mulWadDown(half, _dao().getMinipoolNodeCommissionFeePct());
		mp.avaxLiquidStakerRewardAmt = lsReward;
		mp.avaxNodeOpRewardAmt = avaxTotalRewardAmt - lsReward;
		if (avaxTotalRewardAmt == 0) _slash(mp);

		uint256 ls = mp.avaxLiquidStakerAmt;
		TokenggAVAX(_contract("TokenggAVAX")).depositFromStaking(ls, lsReward);
		totalAVAXLiquidStakerAmt -= ls;
		Staking staking = _staking();
		staking.decreaseAVAXAssigned(mp.owner, ls);
		staking.decreaseAVAXValidating(mp.owner, ls);
		emit MinipoolStatusChanged(nodeID, MinipoolStatus.Withdrawable);
	}

	/// @notice End a validation and, while the requested duration has another cycle left, start the next one
	///         with both principals compounded by the stakers' reward; otherwise flag EC1 if one was due.
	function recordStakingEndThenMaybeCycle(address nodeID, uint256 endTime, uint256 avaxTotalRewardAmt)
		external
		onlyOwnerOrNetwork
		whenNotPaused("MinipoolManager")
	{
		Minipool storage mp = _pool(nodeID);
		uint256 initialStart = mp.initialStartTime;
		uint256 duration = mp.duration;
		recordStakingEnd(nodeID, endTime, avaxTotalRewardAmt);
		ProtocolDAO dao = _dao();
		uint256 poolEnd = initialStart + duration;
		uint256 nextCycleEnd = block.timestamp + dao.getMinipoolCycleDuration();
		if (nextCycleEnd <= poolEnd + dao.getMinipoolCycleDelayTolerance()) {
			_recreate(mp);
			_claim(mp, true);
		} else if (nextCycleEnd - poolEnd < dao.getMinipoolCycleDuration()) {
			mp.errorCode = "EC1";
		}
	}

	/// @notice Rialto could not start the validator: everything goes back, no reward.
	function recordStakingError(address nodeID, bytes32 errorCode) external onlyOwnerOrNetwork {
		Minipool storage mp = _pool(nodeID);
		_requireTransition(mp, MinipoolStatus.Error);
		mp.errorCode = errorCode;
		mp.status = uint256(MinipoolStatus.Error);
		mp.avaxTotalRewardAmt = 0;
		mp.avaxNodeOpRewardAmt = 0;
		mp.avaxLiquidStakerRewardAmt = 0;
		uint256 ls = mp.avaxLiquidStakerAmt;
		TokenggAVAX(_contract("TokenggAVAX")).depositFromStaking(ls, 0);
		_staking().decreaseAVAXAssigned(mp.owner, ls);
		totalAVAXLiquidStakerAmt -= ls;
		emit MinipoolStatusChanged(nodeID, MinipoolStatus.Error);
	}

	/// @notice The owner takes its AVAX and rewards back (Withdrawable or Error to Finished).
	function withdrawMinipoolFunds(address nodeID) external onlyOwnerOrNetwork {
		Minipool storage mp = _pool(nodeID);
		_requireTransition(mp, MinipoolStatus.Finished);
		mp.status = uint256(MinipoolStatus.Finished);
		_staking().decreaseAVAXStake(mp.owner, mp.avaxNodeOpAmt);
		emit MinipoolStatusChanged(nodeID, MinipoolStatus.Finished);
	}

	function _claim(Minipool storage mp, bool isCycling) private {
		_requireTransition(mp, MinipoolStatus.Launched);
		uint256 ls = mp.avaxLiquidStakerAmt;
		TokenggAVAX ggAVAX = TokenggAVAX(_contract("TokenggAVAX"));
		if (!isCycling && ls > ggAVAX.amountAvailableForStaking()) revert WithdrawAmountTooLarge();
		ggAVAX.withdrawForStaking(ls);
		totalAVAXLiquidStakerAmt += ls;
		mp.status = uint256(MinipoolStatus.Launched);
		emit MinipoolStatusChanged(mp.nodeID, MinipoolStatus.Launched);
	}

	function _recreate(Minipool storage mp) private whenNotPaused("MinipoolManager") {
		if (mp.status != uint256(MinipoolStatus.Withdrawable)) revert InvalidStateTransition();
		// Only the stakers' reward compounds, into both principals (1:1 matching).
		uint256 compounded = mp.avaxNodeOpAmt + mp.avaxLiquidStakerRewardAmt;
		Staking staking = _staking();
		staking.increaseAVAXStake(mp.owner, mp.avaxLiquidStakerRewardAmt);
		staking.increaseAVAXAssigned(mp.owner, compounded);
		mp.avaxNodeOpAmt = compounded;
		mp.avaxLiquidStakerAmt = compounded;
		if (staking.getCollateralizationRatio(mp.owner) < _dao().getMinCollateralizationRatio()) revert InsufficientGGPCollateralization();
		_resetCycleData(mp);
		mp.status = uint256(MinipoolStatus.Prelaunch);
		emit MinipoolStatusChanged(mp.nodeID, MinipoolStatus.Prelaunch);
	}

	/// @dev Mainnet's resetMinipoolData: the last cycle's record is overwritten, so it survives only in events.
	function _resetCycleData(Minipool storage mp) private {
		mp.txID = 0;
		mp.startTime = 0;
		mp.endTime = 0;
		mp.avaxTotalRewardAmt = 0;
		mp.avaxNodeOpRewardAmt = 0;
		mp.avaxLiquidStakerRewardAmt = 0;
		mp.ggpSlashAmt = 0;
		mp.errorCode = 0;
	}

	/// @dev Slash the GGP the stakers' AVAX should have earned at ExpectedAVAXRewardsRate, capped at the stake.
	function _slash(Minipool storage mp) private {
		uint256 expected = getExpectedAVAXRewardsAmt(mp.endTime - mp.startTime, mp.avaxLiquidStakerAmt);
		uint256 amount = calculateGGPSlashAmt(expected);
		Staking staking = _staking();
		uint256 stake = staking.getGGPStake(mp.owner);
		if (stake < amount) amount = stake;
		mp.ggpSlashAmt = amount;
		emit GGPSlashed(mp.nodeID, amount);
		staking.slashGGP(mp.owner, amount);
	}

	function _requireTransition(Minipool storage mp, MinipoolStatus to) private view {
		MinipoolStatus from = MinipoolStatus(mp.status);
		bool ok;
		if (from == MinipoolStatus.Prelaunch) ok = to == MinipoolStatus.Launched || to == MinipoolStatus.Canceled;
		else if (from == MinipoolStatus.Launched) ok = to == MinipoolStatus.Staking || to == MinipoolStatus.Error;
		else if (from == MinipoolStatus.Staking) ok = to == MinipoolStatus.Withdrawable;
		else if (from == MinipoolStatus.Withdrawable || from == MinipoolStatus.Error) ok = to == MinipoolStatus.Finished;
		else ok = to == MinipoolStatus.Prelaunch; // Finished or Canceled: relaunch with the same nodeID
		if (!ok) revert InvalidStateTransition();
	}

	function _pool(address nodeID) private view returns (Minipool storage) {
		uint256 pos = indexPlusOne[nodeID];
		if (pos == 0) revert MinipoolNotFound();
		return pools[pos - 1];
	}

	function _staking() private view returns (Staking) {
		return Staking(_contract("Staking"));
	}

	function _dao() private view returns (ProtocolDAO) {
		return ProtocolDAO(_contract("ProtocolDAO"));
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
