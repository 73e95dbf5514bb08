"""The withdraw queue's views, read at one block and checked against each other (shared by the
contract tests and the living-devnet tests)."""
from __future__ import annotations

from publisher.chain import abis
from publisher.chain.abi import Fn
from publisher.chain.rpc import RpcClient

from .chain import eth_call, eth_calls, head, header

REQUEST = "(address,uint256,uint256,uint48,uint48,uint48,uint256)"
REQUEST_FIELDS = ("requester", "shares", "expectedAssets", "requestTime", "claimableTime", "expirationTime", "allocatedFunds")
requests_ = Fn("requests(uint256)", REQUEST)
request_info = Fn("getRequestInfo(uint256)", REQUEST)
next_request_id = Fn("nextRequestId()", "uint256")
total_allocated = Fn("totalAllocatedFunds()", "uint256")
pending_count = Fn("getPendingRequestsCount()", "uint256")
fulfilled_count = Fn("getFulfilledRequestsCount()", "uint256")
all_pending = Fn("getAllPendingRequests()", "uint256[]")
all_fulfilled = Fn("getAllFulfilledRequests()", "uint256[]")
is_pending = Fn("isRequestPending(uint256)", "bool")
is_fulfilled = Fn("isFulfilledRequest(uint256)", "bool")
expired_count = Fn("getExpiredRequestsCount()", "uint256")
can_claim = Fn("canClaimRequest(uint256)", "bool")
by_owner = Fn("getRequestsByOwner(address,uint256,uint256)", "uint256[]")


def liquidity(client: RpcClient, a: dict[str, str], block="latest") -> int:
    """The vault's AVAX not out staking, as the queue counts it (floored at 0)."""
    assets, staking = eth_calls(client, [(a["TokenggAVAX"], abis.totalAssets, ()), (a["TokenggAVAX"], abis.stakingTotalAssets, ())], block)
    return max(0, assets - staking)


def check_views_agree(client: RpcClient, addresses: dict[str, str], block: int | None = None) -> dict:
    """Every view tells the same story as the records; returns the open records by id."""
    q, gg, wavax = addresses["WithdrawQueue"], addresses["TokenggAVAX"], addresses["WAVAX"]
    number, now = head(client)
    if block is not None:
        number, now = block, int(header(client, block)["timestamp"], 16)
    issued, pending, fulfilled, n_pending, n_fulfilled, allocated, n_expired = eth_calls(client, [
        (q, next_request_id, ()), (q, all_pending, ()), (q, all_fulfilled, ()), (q, pending_count, ()),
        (q, fulfilled_count, ()), (q, total_allocated, ()), (q, expired_count, ())], number)
    assert (len(pending), len(fulfilled)) == (n_pending, n_fulfilled)
    assert not set(pending) & set(fulfilled) and len(set(pending)) == len(pending)
    keys = REQUEST_FIELDS
    rows = eth_calls(client, [(q, requests_, (i,)) for i in range(issued)], number)
    records = {i: dict(zip(keys, row, strict=True)) for i, row in enumerate(rows)}
    infos = eth_calls(client, [(q, request_info, (i,)) for i in range(0, issued, 7)], number)
    assert all(info == rows[i * 7] for i, info in enumerate(infos))
    open_ids = {*pending, *fulfilled}
    for i, r in records.items():  # closed requests are deleted: every field zero
        assert (int(r["requester"], 16) != 0) == (i in open_ids), i
    assert all(records[i]["allocatedFunds"] == 0 for i in pending)
    assert all(records[i]["allocatedFunds"] == records[i]["expectedAssets"] > 0 for i in fulfilled)
    assert allocated == sum(records[i]["allocatedFunds"] for i in fulfilled)
    assert eth_call(client, wavax, abis.balanceOf, q, block=number) == allocated
    assert eth_call(client, gg, abis.balanceOf, q, block=number) == sum(records[i]["shares"] for i in pending)
    assert n_expired == sum(now >= records[i]["expirationTime"] for i in open_ids)
    sample = sorted(open_ids)[::max(1, len(open_ids) // 40)]
    flags = eth_calls(client, [(q, fn, (i,)) for i in sample for fn in (is_pending, is_fulfilled, can_claim)], number)
    for k, i in enumerate(sample):
        assert flags[3 * k : 3 * k + 3] == [i in pending, i in fulfilled, i in fulfilled and now < records[i]["expirationTime"]]
    owners: dict[str, list[int]] = {}
    for i in sorted(open_ids):
        owners.setdefault(records[i]["requester"].lower(), []).append(i)
    listed = eth_calls(client, [(q, by_owner, (who, 0, 0)) for who in owners], number)
    for (who, ids), got in zip(owners.items(), listed, strict=True):
        assert sorted(got) == ids, who
    return {i: records[i] for i in open_ids}
