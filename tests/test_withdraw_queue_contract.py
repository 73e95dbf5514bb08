"""The devnet WithdrawQueue, TokenggAVAX's exits and pstAVAX on anvil, against the mainnet
interface and life cycle (reference: withdrawals.md §2-§7).

Life-cycle tests run on a fresh chain of their own (contracts deployed, nothing seeded) where the
vault's liquidity is set exactly; each test moves it inside ``checkpoint``. The seeded scenarios
are checked for every request state at ``now`` and for views that agree with each other.
"""
from __future__ import annotations

import time

import eth_abi
import pytest
from eth_utils import keccak, to_checksum_address
from ggp_devnet import running
from ggp_devnet.anvil import GENESIS_TIME, Anvil
from ggp_devnet.scenarios import (
    QUEUE_COVERED,
    QUEUE_MAX_EXPIRATION_DELAY,
    QUEUE_MIN_EXPIRATION_DELAY,
    QUEUE_UNSTAKE_DELAY,
)
from ggp_devnet.seed import DEPLOYER, deploy, deposit_for, withdraw_for_staking
from support.chain import DAY, WAD, artifacts, checkpoint, eth_call, head, mine_at
from support.queue import (
    REQUEST_FIELDS,
    all_fulfilled,
    all_pending,
    by_owner,
    can_claim,
    check_views_agree,
    expired_count,
    fulfilled_count,
    is_pending,
    liquidity,
    next_request_id,
    pending_count,
    request_info,
    requests_,
    total_allocated,
)

from publisher.chain import abis
from publisher.chain.abi import Fn, event_topic
from publisher.chain.rpc import RpcClient, RpcError

next_amount = Fn("getNextPendingRequestAmount()", "uint256")
paused = Fn("paused()", "bool")
has_role = Fn("hasRole(bytes32,address)", "bool")
unstake_delay = Fn("unstakeDelay()", "uint48")
max_expiration = Fn("maxExpirationDelay()", "uint48")
max_per_deposit = Fn("getMaxRequestsPerStakingDeposit()", "uint256")
min_on_behalf = Fn("getMinUnstakeOnBehalfOfAmt()", "uint256")
token_ggavax = Fn("tokenggAVAX()", "address")

approve = Fn("approve(address,uint256)")
request_unstake = Fn("requestUnstake(uint256,uint48)")
request_for = Fn("requestUnstakeOnBehalfOf(uint256,address,uint48)")
serve = Fn("depositFromStaking(uint256,uint256,bytes32)")
claim = Fn("claimUnstake(uint256)")
cancel = Fn("cancelRequest(uint256)")
reclaim = Fn("reclaimExpiredRequest(uint256)")
pause, unpause = Fn("pause()"), Fn("unpause()")
set_limit = Fn("setMaxRequestsPerStakingDeposit(uint256)")
set_delay = Fn("setUnstakeDelay(uint48)")
set_max_expiration = Fn("setMaxExpirationDelay(uint48)")
donate = Fn("donateYield(uint256,bytes32)")
redeem_avax, withdraw_avax = Fn("redeemAVAX(uint256)"), Fn("withdrawAVAX(uint256)")
redeem4626, withdraw4626 = Fn("redeem(uint256,address,address)"), Fn("withdraw(uint256,address,address)")
grant = Fn("grantRole(bytes32,address)")
preview_deposit = Fn("previewDeposit(uint256)", "uint256")
staker_deposit = Fn("depositFromStaking(uint256,uint256,bytes32)")

SOURCE = b"TEST".ljust(32, b"\0")
WITHDRAW_QUEUE_ROLE, STAKER_ROLE = keccak(text="WITHDRAW_QUEUE_ROLE"), keccak(text="STAKER_ROLE")
DEPOSITOR_ROLE, PAUSER_ROLE = keccak(text="DEPOSITOR_ROLE"), keccak(text="PAUSER_ROLE")
A, B, C = (to_checksum_address("0x" + keccak(text=f"queue test holder {n}").hex()[-40:]) for n in "ABC")
HOLDING = 1000 * WAD
STAKED = 2500 * WAD  # of the 3000 deposited: the vault's liquidity is 500 AVAX


# ---- a chain of its own --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chain():
    with Anvil() as node:
        client = RpcClient([node.url])
        a = deploy(client, GENESIS_TIME + 60)
        for who in (A, B, C):
            act(client, a["TokenggAVAX"], deposit_for.encode(who, HOLDING))
            act(client, a["TokenggAVAX"], approve.encode(a["WithdrawQueue"], 2**256 - 1), who)
        act(client, a["TokenggAVAX"], withdraw_for_staking.encode(STAKED))
        yield client, a


def act(client: RpcClient, to: str, data: bytes, sender: str = DEPLOYER, at: int | None = None) -> dict:
    """A transaction from ``sender`` (automine), optionally in a block at ``at``; its receipt."""
    if at is not None:
        client.request("evm_setNextBlockTimestamp", [hex(at)])
    tx = {"from": sender, "to": to, "data": "0x" + data.hex(), "gas": hex(30_000_000)}
    if sender != DEPLOYER:
        tx["gasPrice"] = "0x0"
    tx_hash = client.request("eth_sendTransaction", [tx])
    deadline = time.monotonic() + 30
    while not (receipt := client.request("eth_getTransactionReceipt", [tx_hash])):
        assert time.monotonic() < deadline, "transaction was not mined"
        time.sleep(0.01)
    assert receipt["status"] == "0x1", f"transaction to {to} from {sender} reverted"
    return receipt


def refused(client: RpcClient, to: str, data: bytes, error: str, sender: str = DEPLOYER, block="latest") -> bool:
    """The call from ``sender`` (at ``block``) reverts with custom error ``error`` (e.g. "ZeroShares()")."""
    tag = block if isinstance(block, str) else hex(block)
    try:
        client.request("eth_call", [{"from": sender, "to": to, "data": "0x" + data.hex()}, tag])
    except RpcError as exc:
        return (exc.data or "").startswith("0x" + keccak(text=error)[:4].hex())
    return False


def logs(receipt: dict, address: str, event: str) -> list[dict]:
    return [lg for lg in receipt["logs"] if lg["address"].lower() == address.lower() and lg["topics"][0] == event_topic(event)]


def words(log: dict) -> list[int]:
    data = bytes.fromhex(log["data"][2:])
    return [int.from_bytes(data[i : i + 32], "big") for i in range(0, len(data), 32)]


def record(client, a, request_id: int, block="latest") -> dict:
    return dict(zip(REQUEST_FIELDS, eth_call(client, a["WithdrawQueue"], requests_, request_id, block=block), strict=True))


def file(client, a, who: str, shares: int, expiration_delay: int = 0) -> int:
    """``who`` files a request; its id (from the event)."""
    receipt = act(client, a["WithdrawQueue"], request_unstake.encode(shares, expiration_delay), who)
    (log,) = logs(receipt, a["WithdrawQueue"], "UnstakeRequested(uint256,address,uint256,uint256,uint48)")
    return int(log["topics"][1], 16)


def served(client, a) -> dict:
    return act(client, a["WithdrawQueue"], serve.encode(0, 0, SOURCE))


# ---- interface -----------------------------------------------------------------------------------

# Reference §3: the read interface with the selectors mainnet answers to.
SELECTORS = {
    "nextRequestId()": "6a84a985", "totalAllocatedFunds()": "dc92d9d9", "requests(uint256)": "81d12c58",
    "getRequestInfo(uint256)": "0b816045", "unstakeDelay()": "3222012f", "maxExpirationDelay()": "60dcecb0",
    "paused()": "5c975abb", "getPendingRequestsCount()": "188c26cc", "getAllPendingRequests()": "6bd05f35",
    "isRequestPending(uint256)": "16221fdf", "getFulfilledRequestsCount()": "c6fef75d",
    "getAllFulfilledRequests()": "c54d4f43", "isFulfilledRequest(uint256)": "693ccb9d",
    "getExpiredRequestsCount()": "58aeaf13", "canClaimRequest(uint256)": "58fde720",
    "getRequestsByOwner(address,uint256,uint256)": "72787e26", "getNextPendingRequestAmount()": "69331c1e",
    "getMaxRequestsPerStakingDeposit()": "2a87ff9c", "getMinUnstakeOnBehalfOfAmt()": "7068df52",
    "tokenggAVAX()": "6a22c22d",
}
QUEUE_EVENTS = (
    "UnstakeRequested(uint256,address,uint256,uint256,uint48)", "RequestFulfilled(bytes32,uint256,uint256)",
    "StakeDeposited(bytes32,address,uint256)", "UnstakeClaimed(uint256,address,uint256)",
    "ExpiredFundsReclaimed(uint256,uint256)", "ExpiredSharesReturned(uint256,address,uint256)",
    "RequestCancelled(uint256,address,uint256)", "ExcessSharesBurnt(uint256,uint256)",
    "BatchExpiredFundsReclaimed(address,uint256,uint256)", "QueueCleaned(bytes32,uint256)",
    "ContractInitialized(address,uint48,uint48)", "InsufficientLiquidity(uint256,uint256)",
    "PendingRequestsNotProcesses(uint256)", "ContractPaused(address)", "ContractUnpaused(address)",
    "DepositedFromStaking(uint256,uint256,bytes32,uint256)", "YieldDeposited(uint256)",
)


def _abi(contract: str) -> dict[str, dict]:
    def canonical(p: dict) -> str:
        t = p["type"]
        return "(" + ",".join(canonical(c) for c in p["components"]) + ")" + t[5:] if t.startswith("tuple") else t

    return {f"{i['name']}({','.join(canonical(p) for p in i['inputs'])})": i
            for i in artifacts()[contract]["abi"] if i["type"] in ("function", "event")}


def test_the_queue_answers_to_mainnet_selectors_with_mainnet_outputs():
    abi = _abi("WithdrawQueue")
    for signature, selector in SELECTORS.items():
        assert keccak(text=signature)[:4].hex() == selector, signature
        assert signature in abi, signature
        # Views, except the one mainnet declares non-view (it pops a stale front entry).
        want = "nonpayable" if signature == "getNextPendingRequestAmount()" else "view"
        assert abi[signature]["stateMutability"] == want, signature
    outputs = lambda sig: tuple(o["type"] for o in abi[sig]["outputs"])  # noqa: E731
    assert outputs("requests(uint256)") == ("address", "uint256", "uint256", "uint48", "uint48", "uint48", "uint256")
    assert [c["type"] for c in abi["getRequestInfo(uint256)"]["outputs"][0]["components"]] == list(outputs("requests(uint256)"))
    for sig in ("unstakeDelay()", "maxExpirationDelay()", "MIN_EXPIRATION_DELAY()"):
        assert outputs(sig) == ("uint48",)
    for sig in QUEUE_EVENTS:
        assert sig in abi, sig
    for sig in ("hasRole(bytes32,address)", "DEPOSITOR_ROLE()", "PAUSER_ROLE()", "requestUnstake(uint256,uint48)",
                "requestUnstakeOnBehalfOf(uint256,address,uint48)", "depositFromStaking(uint256,uint256,bytes32)",
                "claimUnstake(uint256)", "cancelRequest(uint256)", "reclaimExpiredRequest(uint256)", "pause()", "unpause()",
                "setUnstakeDelay(uint48)", "setMaxExpirationDelay(uint48)", "setMaxRequestsPerStakingDeposit(uint256)",
                "setMinUnstakeOnBehalfOfAmt(uint256)"):
        assert sig in abi, sig
    gg = _abi("TokenggAVAX")
    assert "redeemFor(address,uint256)" not in gg  # no exit outside the queue
    for sig in ("hasRole(bytes32,address)", "WITHDRAW_QUEUE_ROLE()", "STAKER_ROLE()", "redeemAVAX(uint256)",
                "withdrawAVAX(uint256)", "depositFromStaking(uint256,uint256,bytes32)", "depositAVAX()",
                "depositYield(bytes32)", "donateYield(uint256,bytes32)"):
        assert sig in gg, sig
    pst = _abi("TokenpstAVAX")
    for sig in ("vault()", "withdrawQueue()", "totalSupply()", "paused()", "withdrawViaQueue(uint256,uint48)",
                "WithdrawnViaQueue(address,uint256,uint256,uint256)"):
        assert sig in pst, sig


def test_deployed_queue_parameters_and_roles(chain):
    client, a = chain
    q, gg = a["WithdrawQueue"], a["TokenggAVAX"]
    assert eth_call(client, q, token_ggavax).lower() == gg.lower()
    assert eth_call(client, q, unstake_delay) == QUEUE_UNSTAKE_DELAY == 7 * DAY
    assert eth_call(client, q, max_expiration) == QUEUE_MAX_EXPIRATION_DELAY == 30 * DAY
    assert eth_call(client, q, Fn("MIN_EXPIRATION_DELAY()", "uint48")) == 3 * DAY
    assert eth_call(client, q, max_per_deposit) == 50 and eth_call(client, q, min_on_behalf) == WAD // 100
    assert eth_call(client, q, Fn("DEPOSITOR_ROLE()", "bytes32")) == DEPOSITOR_ROLE
    assert eth_call(client, gg, Fn("WITHDRAW_QUEUE_ROLE()", "bytes32")) == WITHDRAW_QUEUE_ROLE
    assert eth_call(client, gg, has_role, WITHDRAW_QUEUE_ROLE, q) and eth_call(client, gg, has_role, STAKER_ROLE, q)
    assert not eth_call(client, gg, has_role, WITHDRAW_QUEUE_ROLE, A)
    assert eth_call(client, q, has_role, DEPOSITOR_ROLE, DEPLOYER) and eth_call(client, q, has_role, PAUSER_ROLE, DEPLOYER)
    assert not eth_call(client, q, has_role, DEPOSITOR_ROLE, A)
    assert eth_call(client, a["TokenpstAVAX"], Fn("vault()", "address")).lower() == gg.lower()
    assert eth_call(client, a["TokenpstAVAX"], Fn("withdrawQueue()", "address")).lower() == q.lower()


# ---- requests ------------------------------------------------------------------------------------


def test_a_request_holds_the_shares_at_the_rate_of_the_day(chain):
    client, a = chain
    q, gg = a["WithdrawQueue"], a["TokenggAVAX"]
    with checkpoint(client):
        first = eth_call(client, q, next_request_id)
        assert first == 0  # ids start at 0: id 0 is a real request
        rid = file(client, a, A, 100 * WAD)  # expirationDelay 0: raised to 3 days
        r = record(client, a, rid)
        _, now = head(client)
        assert rid == 0 and eth_call(client, q, next_request_id) == 1
        assert r["requester"].lower() == A.lower() and r["shares"] == 100 * WAD
        assert r["expectedAssets"] == eth_call(client, gg, abis.convertToAssets, 100 * WAD)
        assert (r["requestTime"], r["claimableTime"], r["expirationTime"]) == (now, now + 7 * DAY, now + 10 * DAY)
        assert r["allocatedFunds"] == 0
        assert eth_call(client, q, request_info, rid) == eth_call(client, q, requests_, rid)
        assert eth_call(client, gg, abis.balanceOf, q) == 100 * WAD
        assert eth_call(client, gg, abis.balanceOf, A) == HOLDING - 100 * WAD
        assert list(eth_call(client, q, all_pending)) == [rid] and eth_call(client, q, is_pending, rid)
        rid2 = file(client, a, A, 5 * WAD, 20 * DAY)
        assert record(client, a, rid2)["expirationTime"] - record(client, a, rid2)["claimableTime"] == 20 * DAY
        assert list(eth_call(client, q, by_owner, A, 0, 0)) == [rid, rid2]
        assert list(eth_call(client, q, by_owner, A, 1, 5)) == [rid2] and list(eth_call(client, q, by_owner, A, 2, 0)) == []
        # Refusals.
        assert refused(client, q, request_unstake.encode(0, 0), "ZeroShares()", A)
        assert refused(client, q, request_unstake.encode(WAD, 30 * DAY + 1), "InvalidExpirationDelay()", A)
        assert refused(client, q, request_unstake.encode(HOLDING, 0), "InsufficientTokenBalance()", A)


def test_on_behalf_requests_need_the_minimum_and_belong_to_the_requester(chain):
    client, a = chain
    q, gg = a["WithdrawQueue"], a["TokenggAVAX"]
    with checkpoint(client):
        assert refused(client, q, request_for.encode(WAD // 100 - 1, C, 0), "MinimumSharesNotMet()", B)
        receipt = act(client, q, request_for.encode(WAD // 100, C, 0), B)
        rid = int(logs(receipt, q, "UnstakeRequested(uint256,address,uint256,uint256,uint48)")[0]["topics"][1], 16)
        assert record(client, a, rid)["requester"].lower() == C.lower()
        assert eth_call(client, gg, abis.balanceOf, B) == HOLDING - WAD // 100  # B provided the shares
        assert list(eth_call(client, q, by_owner, C, 0, 0)) == [rid] and list(eth_call(client, q, by_owner, B, 0, 0)) == []
        # Only C may claim or cancel it.
        assert refused(client, q, cancel.encode(rid), "NotYourRequest()", B)
        assert not refused(client, q, cancel.encode(rid), "NotYourRequest()", C)


def test_pstavax_files_on_behalf_of_its_holder(chain):
    client, a = chain
    pst, q, wavax = a["TokenpstAVAX"], a["WithdrawQueue"], a["WAVAX"]
    with checkpoint(client):
        act(client, wavax, Fn("mint(address,uint256)").encode(C, 50 * WAD))
        act(client, wavax, approve.encode(pst, 50 * WAD), C)
        act(client, pst, Fn("depositWAVAX(uint256)").encode(50 * WAD), C)
        assert eth_call(client, pst, abis.balanceOf, C) == 50 * WAD == eth_call(client, pst, abis.totalSupply)
        receipt = act(client, pst, Fn("withdrawViaQueue(uint256,uint48)").encode(20 * WAD, 0), C)
        (log,) = logs(receipt, pst, "WithdrawnViaQueue(address,uint256,uint256,uint256)")
        pst_shares, vault_shares, rid = words(log)
        r = record(client, a, rid)
        assert r["requester"].lower() == C.lower() and r["shares"] == vault_shares and pst_shares == 20 * WAD
        assert eth_call(client, pst, abis.balanceOf, C) == 30 * WAD
        # The token provided the shares: Transfer pstAVAX -> queue.
        moved = logs(receipt, a["TokenggAVAX"], "Transfer(address,address,uint256)")
        assert any(lg["topics"][1][-40:] == pst[2:].lower() and lg["topics"][2][-40:] == q[2:].lower() for lg in moved)
        assert refused(client, pst, Fn("withdrawViaQueue(uint256,uint48)").encode(WAD // 1000, 0), "MinimumSharesNotMet()", C)


# ---- funding -------------------------------------------------------------------------------------


def test_the_depositor_serves_the_line_in_order_and_stops_at_the_first_uncovered_request(chain):
    client, a = chain
    q, gg, wavax = a["WithdrawQueue"], a["TokenggAVAX"], a["WAVAX"]
    with checkpoint(client):
        assert liquidity(client, a) == 500 * WAD
        r0, r1, r2 = file(client, a, A, 100 * WAD), file(client, a, B, 450 * WAD), file(client, a, C, 50 * WAD)
        assert refused(client, q, serve.encode(0, 0, SOURCE), "AccessControlUnauthorizedAccount(address,bytes32)", A)
        receipt = served(client, a)
        funded = [int(lg["topics"][2], 16) for lg in logs(receipt, q, "RequestFulfilled(bytes32,uint256,uint256)")]
        assert funded == [r0]
        # r1 does not fit in the 400 left; r2 would, but waits behind it (no skipping).
        (short,) = logs(receipt, q, "InsufficientLiquidity(uint256,uint256)")
        assert words(short) == [400 * WAD, 450 * WAD]
        assert sorted(eth_call(client, q, all_pending)) == [r1, r2] and list(eth_call(client, q, all_fulfilled)) == [r0]
        assert record(client, a, r0)["allocatedFunds"] == record(client, a, r0)["expectedAssets"] == 100 * WAD
        assert eth_call(client, q, total_allocated) == 100 * WAD == eth_call(client, wavax, abis.balanceOf, q)
        assert eth_call(client, gg, abis.balanceOf, q) == 500 * WAD  # r1 + r2 held, r0's shares burnt
        # More liquidity (a deposit): the next call serves r1 then r2, in that order.
        act(client, gg, deposit_for.encode(DEPLOYER, 100 * WAD))
        receipt = served(client, a)
        funded = [int(lg["topics"][2], 16) for lg in logs(receipt, q, "RequestFulfilled(bytes32,uint256,uint256)")]
        assert funded == [r1, r2]
        assert eth_call(client, q, pending_count) == 0 and eth_call(client, q, fulfilled_count) == 3
        assert eth_call(client, q, total_allocated) == 600 * WAD == eth_call(client, wavax, abis.balanceOf, q)
        assert eth_call(client, gg, abis.balanceOf, q) == 0
        assert liquidity(client, a) == 0


def test_what_a_redemption_brings_beyond_the_request_goes_back_as_yield(chain):
    client, a = chain
    q, gg, wavax = a["WithdrawQueue"], a["TokenggAVAX"], a["WAVAX"]
    with checkpoint(client):
        rid = file(client, a, A, 100 * WAD)
        expected = record(client, a, rid)["expectedAssets"]
        act(client, gg, donate.encode(300 * WAD, SOURCE), C)  # the rate rises 10 %
        vault_wavax, fees = eth_call(client, wavax, abis.balanceOf, gg), eth_call(client, wavax, abis.balanceOf, DEPLOYER)
        receipt = served(client, a)
        (paid_log,) = logs(receipt, gg, "Withdraw(address,address,address,uint256,uint256)")
        paid = words(paid_log)[0]
        (yield_log,) = logs(receipt, q, "YieldDeposited(uint256)")
        assert paid > expected and words(yield_log) == [paid - expected]
        assert record(client, a, rid)["allocatedFunds"] == expected  # the requester gets what it asked, no more
        fee = (paid - expected) * 1000 // 10_000
        assert eth_call(client, wavax, abis.balanceOf, DEPLOYER) == fees + fee
        assert eth_call(client, wavax, abis.balanceOf, gg) == vault_wavax - paid + (paid - expected) - fee


def test_stale_entries_count_against_the_per_call_limit(chain):
    client, a = chain
    q = a["WithdrawQueue"]
    with checkpoint(client):
        act(client, q, set_limit.encode(3))
        ids = [file(client, a, A, 10 * WAD) for _ in range(4)] + [file(client, a, B, 10 * WAD)]
        for rid in ids[:3]:
            act(client, q, cancel.encode(rid), A)
        # Non-view on mainnet too: a stale front entry is dropped and 0 returned.
        assert eth_call(client, q, next_amount) == 0 and eth_call(client, q, pending_count) == 2
        receipt = served(client, a)
        cleaned = logs(receipt, q, "QueueCleaned(bytes32,uint256)")
        assert [int(lg["topics"][2], 16) for lg in cleaned] == ids[:3]
        assert cleaned[0]["topics"][1] == "0x" + b"REQUEST_NOT_IN_PENDING_SET".ljust(32, b"\0").hex()
        assert not logs(receipt, q, "RequestFulfilled(bytes32,uint256,uint256)")  # three steps, all stale
        assert words(logs(receipt, q, "PendingRequestsNotProcesses(uint256)")[0]) == [2]
        assert eth_call(client, q, next_amount) == record(client, a, ids[3])["expectedAssets"]
        receipt = served(client, a)
        funded = [int(lg["topics"][2], 16) for lg in logs(receipt, q, "RequestFulfilled(bytes32,uint256,uint256)")]
        assert funded == ids[3:]


# ---- claim, cancel, reclaim ----------------------------------------------------------------------


def test_only_the_requester_claims_and_only_before_expiry(chain):
    client, a = chain
    q, wavax = a["WithdrawQueue"], a["WAVAX"]
    with checkpoint(client):
        r0, r1 = file(client, a, A, 100 * WAD), file(client, a, A, 50 * WAD, 5 * DAY)
        r2 = file(client, a, B, 400 * WAD)  # stays pending: 350 left after r0 and r1
        served(client, a)
        assert refused(client, q, claim.encode(r0), "NotYourRequest()", B)
        assert refused(client, q, claim.encode(r2), "RequestNotFulfilled()", B)
        # Claimable at once, although claimableTime is a week away (2026 logic).
        assert eth_call(client, q, can_claim, r0) and head(client)[1] < record(client, a, r0)["claimableTime"]
        receipt = act(client, q, claim.encode(r0), A)
        assert words(logs(receipt, q, "UnstakeClaimed(uint256,address,uint256)")[0]) == [100 * WAD]
        assert eth_call(client, wavax, abis.balanceOf, A) == 100 * WAD  # paid in WAVAX on the devnet
        gone = record(client, a, r0)
        assert int(gone.pop("requester"), 16) == 0 and set(gone.values()) == {0}  # the record is deleted
        assert eth_call(client, q, total_allocated) == 50 * WAD and list(eth_call(client, q, by_owner, A, 0, 0)) == [r1]
        assert refused(client, q, claim.encode(r0), "RequestNotFound()", A)
        expiry = record(client, a, r1)["expirationTime"]
        before = mine_at(client, expiry - 1)
        assert eth_call(client, q, can_claim, r1, block=before)
        assert not refused(client, q, claim.encode(r1), "RequestExpired()", A, block=before)
        at = mine_at(client, expiry)
        assert not eth_call(client, q, can_claim, r1, block=at)
        assert refused(client, q, claim.encode(r1), "RequestExpired()", A, block=at)
        assert eth_call(client, q, expired_count, block=at) == 2  # r1, and r2 (pending, 3-day expiry) too


def test_cancel_pending_returns_todays_shares_and_burns_the_rest(chain):
    client, a = chain
    q, gg = a["WithdrawQueue"], a["TokenggAVAX"]
    with checkpoint(client):
        act(client, q, set_limit.encode(0))  # nothing gets served here
        rid = file(client, a, A, 100 * WAD)
        expected = record(client, a, rid)["expectedAssets"]
        act(client, gg, donate.encode(300 * WAD, SOURCE), C)
        back = eth_call(client, gg, abis.convertToShares, expected)
        supply, held = eth_call(client, gg, abis.totalSupply), eth_call(client, gg, abis.balanceOf, A)
        assert refused(client, q, cancel.encode(rid), "NotYourRequest()", B)
        receipt = act(client, q, cancel.encode(rid), A)
        assert back < 100 * WAD
        assert words(logs(receipt, q, "RequestCancelled(uint256,address,uint256)")[0]) == [back]
        assert words(logs(receipt, q, "ExcessSharesBurnt(uint256,uint256)")[0]) == [100 * WAD - back]
        assert eth_call(client, gg, abis.balanceOf, A) == held + back
        assert eth_call(client, gg, abis.totalSupply) == supply - (100 * WAD - back)
        assert eth_call(client, gg, abis.balanceOf, q) == 0 and not eth_call(client, q, is_pending, rid)
        assert refused(client, q, cancel.encode(rid), "RequestNotFound()", A)


def test_cancel_a_funded_request_only_before_its_claimable_time(chain):
    client, a = chain
    q, gg = a["WithdrawQueue"], a["TokenggAVAX"]
    with checkpoint(client):
        r0, r1 = file(client, a, A, 100 * WAD, 30 * DAY), file(client, a, B, 100 * WAD, 30 * DAY)
        served(client, a)
        back = eth_call(client, gg, preview_deposit, 100 * WAD)
        held = eth_call(client, gg, abis.balanceOf, A)
        receipt = act(client, q, cancel.encode(r0), A)
        assert words(logs(receipt, q, "RequestCancelled(uint256,address,uint256)")[0]) == [back]
        assert eth_call(client, gg, abis.balanceOf, A) == held + back  # the AVAX went back in, fresh shares out
        assert eth_call(client, q, total_allocated) == 100 * WAD == eth_call(client, a["WAVAX"], abis.balanceOf, q)
        assert liquidity(client, a) == 400 * WAD
        before = mine_at(client, record(client, a, r1)["claimableTime"] - 1)
        assert not refused(client, q, cancel.encode(r1), "TooLateToCancelRequest()", B, block=before)
        at = mine_at(client, record(client, a, r1)["claimableTime"])
        assert refused(client, q, cancel.encode(r1), "TooLateToCancelRequest()", B, block=at)
        assert eth_call(client, q, can_claim, r1, block=at)


def test_anyone_reclaims_an_expired_request(chain):
    client, a = chain
    q, gg = a["WithdrawQueue"], a["TokenggAVAX"]
    with checkpoint(client):
        funded, waiting = file(client, a, A, 100 * WAD), file(client, a, B, 450 * WAD)
        served(client, a)  # funded is, waiting is not (400 left)
        act(client, gg, donate.encode(300 * WAD, SOURCE), C)  # a pending reclaim ignores the rate
        expiry = record(client, a, waiting)["expirationTime"]
        assert expiry >= record(client, a, funded)["expirationTime"]
        before = mine_at(client, expiry - 1)
        assert refused(client, q, reclaim.encode(waiting), "RequestNotExpired()", C, block=before)
        at = mine_at(client, expiry)
        assert eth_call(client, q, expired_count, block=at) == 2
        held = eth_call(client, gg, abis.balanceOf, B)
        receipt = act(client, q, reclaim.encode(waiting), C)
        assert words(logs(receipt, q, "ExpiredSharesReturned(uint256,address,uint256)")[0]) == [450 * WAD]
        assert words(logs(receipt, q, "ExpiredFundsReclaimed(uint256,uint256)")[0]) == [450 * WAD]  # expectedAssets
        assert eth_call(client, gg, abis.balanceOf, B) == held + 450 * WAD  # the original shares
        back = eth_call(client, gg, preview_deposit, 100 * WAD)
        held = eth_call(client, gg, abis.balanceOf, A)
        receipt = act(client, q, reclaim.encode(funded), C)
        assert words(logs(receipt, q, "ExpiredSharesReturned(uint256,address,uint256)")[0]) == [back]
        assert eth_call(client, gg, abis.balanceOf, A) == held + back
        assert eth_call(client, q, total_allocated) == 0 and eth_call(client, q, expired_count) == 0
        assert refused(client, q, reclaim.encode(funded), "RequestNotFulfilledOrPending()", C)
        assert refused(client, q, reclaim.encode(99), "RequestNotFound()", C)


# ---- pause, admin, the vault's gate --------------------------------------------------------------


def test_pause_blocks_new_requests_only(chain):
    client, a = chain
    q = a["WithdrawQueue"]
    with checkpoint(client):
        r0, r1, r2 = file(client, a, A, 100 * WAD), file(client, a, B, 450 * WAD), file(client, a, A, 20 * WAD)
        served(client, a)
        assert refused(client, q, pause.encode(), "AccessControlUnauthorizedAccount(address,bytes32)", A)
        receipt = act(client, q, pause.encode())
        assert logs(receipt, q, "ContractPaused(address)") and eth_call(client, q, paused)
        assert refused(client, q, request_unstake.encode(WAD, 0), "ContractPausedError()", C)
        assert refused(client, q, request_for.encode(WAD, A, 0), "ContractPausedError()", C)
        # Everything else goes on.
        act(client, q, claim.encode(r0), A)
        act(client, q, cancel.encode(r2), A)
        act(client, a["TokenggAVAX"], deposit_for.encode(DEPLOYER, 100 * WAD))
        funded = logs(served(client, a), q, "RequestFulfilled(bytes32,uint256,uint256)")
        assert [int(lg["topics"][2], 16) for lg in funded] == [r1]
        act(client, q, unpause.encode())
        assert not eth_call(client, q, paused)
        file(client, a, C, WAD)


def test_admin_setters_and_delays_apply_to_later_requests_only(chain):
    client, a = chain
    q = a["WithdrawQueue"]
    with checkpoint(client):
        r0 = file(client, a, A, WAD)
        assert refused(client, q, set_delay.encode(DAY), "AccessControlUnauthorizedAccount(address,bytes32)", A)
        act(client, q, set_delay.encode(DAY))
        r1 = file(client, a, A, WAD)
        assert record(client, a, r0)["claimableTime"] - record(client, a, r0)["requestTime"] == 7 * DAY
        assert record(client, a, r1)["claimableTime"] - record(client, a, r1)["requestTime"] == DAY
        assert refused(client, q, set_max_expiration.encode(3 * DAY - 1), "InvalidExpirationDelay()")
        act(client, q, set_max_expiration.encode(QUEUE_MIN_EXPIRATION_DELAY))
        assert refused(client, q, request_unstake.encode(WAD, 3 * DAY + 1), "InvalidExpirationDelay()", A)


def test_only_the_queue_may_burn_shares_for_assets(chain):
    client, a = chain
    gg = a["TokenggAVAX"]
    role = "AccessControlUnauthorizedAccount(address,bytes32)"
    for who in (A, DEPLOYER):  # a holder, and the owner without the role
        assert refused(client, gg, redeem_avax.encode(WAD), role, who)
        assert refused(client, gg, withdraw_avax.encode(WAD), role, who)
        assert refused(client, gg, redeem4626.encode(WAD, who, who), role, who)
        assert refused(client, gg, withdraw4626.encode(WAD, who, who), role, who)
        assert refused(client, gg, staker_deposit.encode(0, 0, SOURCE), role, who)
    assert refused(client, gg, grant.encode(WITHDRAW_QUEUE_ROLE, A), "NotOwner()", A)
    assert refused(client, gg, grant.encode(bytes(32), A), "AdminRoleNotGrantable()")
    # The queue can (its redemption pays WAVAX): impersonated, it redeems shares it holds.
    with checkpoint(client):
        file(client, a, A, 10 * WAD)
        receipt = act(client, gg, redeem_avax.encode(10 * WAD), a["WithdrawQueue"])
        assert words(logs(receipt, gg, "Withdraw(address,address,address,uint256,uint256)")[0]) == [10 * WAD, 10 * WAD]


# ---- seeded scenarios ----------------------------------------------------------------------------


def check_plan(client: RpcClient, net) -> None:
    q = net.scenario.queue
    records = check_views_agree(client, net.addresses)
    _, now = head(client)
    states = q.states(now)
    assert set(states) == {"closed", "pending", "pending-expired", "cancellable", "claimable", "fulfilled-expired"}, set(states)
    assert {r.id for r in q.open()} == set(records)
    for r in q.open():
        got = records[r.id]
        assert got["requester"].lower() == r.requester.lower() and got["shares"] == r.shares
        assert (got["requestTime"], got["claimableTime"], got["expirationTime"]) == (r.request_time, r.claimable_time, r.expiration_time)
        assert (got["allocatedFunds"] > 0) == (r.fate == "fulfilled")
    assert {r.via for r in q.open()} == {"seed", "pst", "direct"}
    # The front of the line: the first `covered` pending requests fit in the vault's liquidity, the next does not.
    front = sorted(i for i, r in records.items() if r["allocatedFunds"] == 0)[: QUEUE_COVERED + 1]
    need = [records[i]["expectedAssets"] for i in front]
    liquid = liquidity(client, net.addresses)
    assert sum(need[:-1]) <= liquid < sum(need)
    assert sum(r["expectedAssets"] for r in records.values() if r["allocatedFunds"] == 0) > liquid
    # Some requesters hold several open requests; some requests were filed under the old delay.
    per = [len(eth_call(client, net.addresses["WithdrawQueue"], by_owner, r.requester, 0, 0)) for r in q.open()[:60]]
    assert max(per) >= 2
    assert {r.unstake_delay for r in q.open()} == {q.launch_unstake_delay, q.unstake_delay}


def test_the_demo_queue_holds_every_state_at_now(demo, rpc):
    check_plan(rpc, demo)
    q = demo.scenario.queue
    assert 40 <= len(q.requests) <= 80 and len({r.requester for r in q.open()}) == 25


@pytest.mark.slow
def test_the_scale_queue_holds_5000_open_requests_from_3000_requesters():
    with running("scale") as net:
        client = RpcClient([net.url])
        q = net.scenario.queue
        assert len(q.open()) == 5000 and len({r.requester.lower() for r in q.open()}) == 3000
        assert len(q.requests) > 5000  # and closed ones
        check_plan(client, net)


def test_seeded_requests_keep_their_past_times_and_the_rate_of_the_seeding_day(demo, rpc):
    q = demo.scenario.queue
    old = [r for r in q.open() if r.via == "seed" and r.request_time < q.delay_lowered_at]
    assert old and all(r.claimable_time == r.request_time + 14 * DAY for r in old)
    # UnstakeRequested logs of the seeded requests are in the seeding blocks, with the claimable time asked.
    got = rpc.request("eth_getLogs", [{"address": demo.addresses["WithdrawQueue"], "fromBlock": "0x0", "toBlock": "latest",
                                       "topics": [event_topic("UnstakeRequested(uint256,address,uint256,uint256,uint48)")]}])
    assert len(got) == len(q.requests)
    by_id = {int(lg["topics"][1], 16): lg for lg in got}
    for r in q.requests:
        assert eth_abi.decode(["uint256", "uint256", "uint48"], bytes.fromhex(by_id[r.id]["data"][2:]))[2] == r.claimable_time
