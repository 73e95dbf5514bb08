"""The protocol's view functions, written as mainnet signatures (DESIGN §4.2).

The reader encodes and decodes with these alone, so the same code reads mainnet and the devnet;
tests check that every signature here exists in the devnet's compiled ABI.
"""
from __future__ import annotations

import functools
import json

from .abi import Fn
from .codec import decode, keccak

STAKER_FIELDS = (
    ("stakerAddr", "address"), ("avaxAssigned", "uint256"), ("avaxStaked", "uint256"),
    ("avaxValidating", "uint256"), ("avaxValidatingHighWater", "uint256"), ("ggpRewards", "uint256"),
    ("ggpStaked", "uint256"), ("lastRewardsCycleCompleted", "uint256"), ("rewardsStartTime", "uint256"),
    ("ggpLockedUntil", "uint256"),
)
MINIPOOL_FIELDS = (
    ("index", "int256"), ("nodeID", "address"), ("status", "uint256"), ("duration", "uint256"),
    ("delegationFee", "uint256"), ("owner", "address"), ("multisigAddr", "address"),
    ("avaxNodeOpAmt", "uint256"), ("avaxNodeOpInitialAmt", "uint256"), ("avaxLiquidStakerAmt", "uint256"),
    ("blsPubkeyAndSig", "bytes"), ("txID", "bytes32"), ("creationTime", "uint256"),
    ("initialStartTime", "uint256"), ("startTime", "uint256"), ("endTime", "uint256"),
    ("avaxTotalRewardAmt", "uint256"), ("errorCode", "bytes32"), ("ggpSlashAmt", "uint256"),
    ("avaxNodeOpRewardAmt", "uint256"), ("avaxLiquidStakerRewardAmt", "uint256"),
    ("hardwareProvider", "bytes32"),
)
STAKER = "(" + ",".join(t for _, t in STAKER_FIELDS) + ")"
MINIPOOL = "(" + ",".join(t for _, t in MINIPOOL_FIELDS) + ")"

# Storage registry
storage_getAddress = Fn("getAddress(bytes32)", "address")
storage_getBool = Fn("getBool(bytes32)", "bool")

# ERC-20 (TokenGGP, WAVAX, TokenggAVAX)
totalSupply = Fn("totalSupply()", "uint256")
balanceOf = Fn("balanceOf(address)", "uint256")
name = Fn("name()", "string")
symbol = Fn("symbol()", "string")
decimals = Fn("decimals()", "uint8")
MAX_SUPPLY = Fn("MAX_SUPPLY()", "uint256")

# TokenggAVAX
totalAssets = Fn("totalAssets()", "uint256")
totalReleasedAssets = Fn("totalReleasedAssets()", "uint256")
stakingTotalAssets = Fn("stakingTotalAssets()", "uint256")
amountAvailableForStaking = Fn("amountAvailableForStaking()", "uint256")
lastRewardsAmt = Fn("lastRewardsAmt()", "uint192")
lastSync = Fn("lastSync()", "uint32")
rewardsCycleEnd = Fn("rewardsCycleEnd()", "uint32")
rewardsCycleLength = Fn("rewardsCycleLength()", "uint32")
convertToAssets = Fn("convertToAssets(uint256)", "uint256")
convertToShares = Fn("convertToShares(uint256)", "uint256")
asset = Fn("asset()", "address")

# Staking
getStakerCount = Fn("getStakerCount()", "uint256")
getStakers = Fn("getStakers(uint256,uint256)", STAKER + "[]")
getTotalGGPStake = Fn("getTotalGGPStake()", "uint256")
getEffectiveGGPStaked = Fn("getEffectiveGGPStaked(address)", "uint256")
getCollateralizationRatio = Fn("getCollateralizationRatio(address)", "uint256")
getEffectiveRewardsRatio = Fn("getEffectiveRewardsRatio(address)", "uint256")

# MinipoolManager
getMinipoolCount = Fn("getMinipoolCount()", "uint256")
getMinipool = Fn("getMinipool(int256)", MINIPOOL)
getMinipools = Fn("getMinipools(uint8,uint256,uint256)", MINIPOOL + "[]")
getMinipoolByNodeID = Fn("getMinipoolByNodeID(address)", MINIPOOL)
getTotalAVAXLiquidStakerAmt = Fn("getTotalAVAXLiquidStakerAmt()", "uint256")

# Oracle
getGGPPriceInAVAX = Fn("getGGPPriceInAVAX()", "uint256,uint256")

# RewardsPool
getRewardsCycleCount = Fn("getRewardsCycleCount()", "uint256")
getRewardsCycleStartTime = Fn("getRewardsCycleStartTime()", "uint256")
getRewardsCycleTotalAmt = Fn("getRewardsCycleTotalAmt()", "uint256")
getInflationIntervalStartTime = Fn("getInflationIntervalStartTime()", "uint256")
getInflationAmt = Fn("getInflationAmt()", "uint256,uint256")
getClaimingContractDistribution = Fn("getClaimingContractDistribution(string)", "uint256")

# ClaimNodeOp
getRewardsCycleTotal = Fn("getRewardsCycleTotal()", "uint256")
isEligible = Fn("isEligible(address)", "bool")

# ProtocolDAO: plain uint256 getters, by setting name
DAO_SETTINGS = (
    "RewardsCycleSeconds", "RewardsEligibilityMinSeconds", "InflationIntervalRate",
    "InflationIntervalSeconds", "MinCollateralizationRatio", "MaxCollateralizationRatio",
    "MinipoolNodeCommissionFeePct", "MinipoolMinAVAXAssignment", "MinipoolMaxAVAXAssignment",
    "MinipoolMinAVAXStakingAmt", "TargetGGAVAXReserveRate", "FeeBips", "ExpectedAVAXRewardsRate",
)
dao_setting = {s: Fn(f"get{s}()", "uint256") for s in DAO_SETTINGS}
# Settings read when the ProtocolDAO has them (None otherwise): a minipool's cycle length and the
# delay its next cycle may start after, which decide whether a validation end cycles it again.
OPTIONAL_DAO_SETTINGS = ("MinipoolCycleDuration", "MinipoolCycleDelayTolerance")
dao_optional_setting = {s: Fn(f"get{s}()", "uint256") for s in OPTIONAL_DAO_SETTINGS}
getClaimingContractPct = Fn("getClaimingContractPct(string)", "uint256")
getContractPaused = Fn("getContractPaused(string)", "bool")
getWithdrawForDelegationEnabled = Fn("getWithdrawForDelegationEnabled()", "bool")
CLAIMING_CONTRACTS = ("ClaimNodeOp", "MultisigManager", "ClaimProtocolDAO")

# Chainlink aggregator
latestRoundData = Fn("latestRoundData()", "uint80,int256,uint256,uint256,uint80")

# v2-style DEX pair
getReserves = Fn("getReserves()", "uint112,uint112,uint32")
token0 = Fn("token0()", "address")
token1 = Fn("token1()", "address")

# WithdrawQueue (its own proxy, not in the Storage registry; reference: withdrawals.md §3)
REQUEST = "address,uint256,uint256,uint48,uint48,uint48,uint256"
wq_nextRequestId = Fn("nextRequestId()", "uint256")
wq_totalAllocatedFunds = Fn("totalAllocatedFunds()", "uint256")
wq_requests = Fn("requests(uint256)", REQUEST)
wq_unstakeDelay = Fn("unstakeDelay()", "uint48")
wq_maxExpirationDelay = Fn("maxExpirationDelay()", "uint48")
wq_paused = Fn("paused()", "bool")
wq_tokenggAVAX = Fn("tokenggAVAX()", "address")
wq_getPendingRequestsCount = Fn("getPendingRequestsCount()", "uint256")
wq_getFulfilledRequestsCount = Fn("getFulfilledRequestsCount()", "uint256")
wq_isRequestPending = Fn("isRequestPending(uint256)", "bool")
wq_getAllPendingRequests = Fn("getAllPendingRequests()", "uint256[]")
wq_getAllFulfilledRequests = Fn("getAllFulfilledRequests()", "uint256[]")
wq_isFulfilledRequest = Fn("isFulfilledRequest(uint256)", "bool")
wq_canClaimRequest = Fn("canClaimRequest(uint256)", "bool")
wq_getRequestsByOwner = Fn("getRequestsByOwner(address,uint256,uint256)", "uint256[]")
wq_getMaxRequestsPerStakingDeposit = Fn("getMaxRequestsPerStakingDeposit()", "uint256")
wq_getMinUnstakeOnBehalfOfAmt = Fn("getMinUnstakeOnBehalfOfAmt()", "uint256")

# Multicall3
aggregate3 = Fn("aggregate3((address,bool,bytes)[])", "(bool,bytes)[]")
getCurrentBlockTimestamp = Fn("getCurrentBlockTimestamp()", "uint256")

# Events used for history
EV_GGP_PRICE_UPDATED = "GGPPriceUpdated(uint256,uint256)"
EV_ANSWER_UPDATED = "AnswerUpdated(int256,uint256,uint256)"
EV_NEW_REWARDS_CYCLE = "NewRewardsCycle(uint256,uint256)"
EV_MINIPOOL_STATUS_CHANGED = "MinipoolStatusChanged(address,uint8)"

# WithdrawQueue events the depositor's calls leave (sources/queuelog.py). All but QueueCleaned are
# emitted only by depositFromStaking (DepositedFromStaking also by rescueStuckAVAX, source "RESCUE");
# QueueCleaned also by getNextPendingRequestAmount, under its own reason.
EV_WQ_DEPOSITED_FROM_STAKING = "DepositedFromStaking(uint256,uint256,bytes32,uint256)"
EV_WQ_STAKE_DEPOSITED = "StakeDeposited(bytes32,address,uint256)"
EV_WQ_REQUEST_FULFILLED = "RequestFulfilled(bytes32,uint256,uint256)"
EV_WQ_INSUFFICIENT_LIQUIDITY = "InsufficientLiquidity(uint256,uint256)"
EV_WQ_QUEUE_CLEANED = "QueueCleaned(bytes32,uint256)"
EV_WQ_PENDING_NOT_PROCESSED = "PendingRequestsNotProcesses(uint256)"
EV_WQ_YIELD_DEPOSITED = "YieldDeposited(uint256)"
# WithdrawQueue events of one request's life (sources/queuelog.py receipts): filed, then closed by
# a claim, a cancel (ExcessSharesBurnt first when shares are burnt) or a reclaim (ExpiredFundsReclaimed
# then ExpiredSharesReturned); RequestFulfilled above is its funding.
EV_WQ_UNSTAKE_REQUESTED = "UnstakeRequested(uint256,address,uint256,uint256,uint48)"
EV_WQ_UNSTAKE_CLAIMED = "UnstakeClaimed(uint256,address,uint256)"
EV_WQ_REQUEST_CANCELLED = "RequestCancelled(uint256,address,uint256)"
EV_WQ_EXCESS_SHARES_BURNT = "ExcessSharesBurnt(uint256,uint256)"
EV_WQ_EXPIRED_FUNDS_RECLAIMED = "ExpiredFundsReclaimed(uint256,uint256)"
EV_WQ_EXPIRED_SHARES_RETURNED = "ExpiredSharesReturned(uint256,address,uint256)"

# Protocol contracts resolved through the Storage registry.
REGISTRY_NAMES = (
    "TokenGGP", "TokenggAVAX", "Staking", "MinipoolManager", "RewardsPool", "ClaimNodeOp",
    "ProtocolDAO", "Oracle",
)
# Contracts whose paused flag lives in Storage ("contract.paused", name), set by the protocol's
# pauser; contracts with their own paused() (WithdrawQueue) are not among them.
PAUSABLE = ("TokenggAVAX", "Staking", "MinipoolManager", "RewardsPool", "ClaimNodeOp", "Oracle")


# Custom errors (Solidity `error X(...)`): a revert carries only the 4-byte selector and the
# arguments, so messages name the error from the contracts' compiled ABIs, whose errors mirror
# mainnet's. custom_errors.json holds them ([name, [types]]; the devnet's ggp_devnet.custom_errors
# writes it from its artifacts, which the runtime package does not carry).
@functools.lru_cache(maxsize=1)
def _errors() -> dict[bytes, tuple[str, tuple[str, ...]]]:
    from pathlib import Path

    out: dict[bytes, tuple[str, tuple[str, ...]]] = {}
    try:
        known = json.loads(Path(__file__).with_name("custom_errors.json").read_text())
    except (OSError, ValueError):
        return out
    for name, types in known:
        out[keccak(f"{name}({','.join(types)})".encode())[:4]] = (name, tuple(types))
    return out


def abi_type(param: dict) -> str:
    """The canonical type of an ABI parameter (a tuple spelled out as its components)."""
    if param["type"].startswith("tuple"):
        return "(" + ",".join(abi_type(c) for c in param.get("components", ())) + ")" + param["type"][5:]
    return param["type"]


def custom_error(data: bytes) -> str | None:
    """``Name(args)`` for revert data that is a known custom error, else None."""
    known = _errors().get(bytes(data[:4]))
    if known is None:
        return None
    name, types = known
    try:
        args = decode(list(types), bytes(data[4:])) if types else ()
    except Exception:  # arguments that do not decode: the name alone still says what happened
        return f"{name}(…)"
    shown = ", ".join(("0x" + a.hex()) if isinstance(a, bytes) else repr(a) for a in args)
    return f"{name}({shown})"
