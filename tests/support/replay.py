"""The chain replaying a funding schedule: from the block a snapshot was read at, each staking
minipool's validation is ended at its end time through the devnet's real contract calls, the
contracts deciding what restakes, and the depositor calls after each end; the block (and the
depositor call) that funds each pending request is recorded. Ground truth for the published
estimates: the schedule may only assume what this replay does, never the contracts' decisions.

What the replay takes from outside the contracts, as Rialto and the depositor would:
- the end time of each validation: the validator provider's for the current one (the snapshot's
  records), and for a period Rialto starts again (at once, in the restake's block) one minipool
  cycle or the rest of the duration (the devnet's Rialto, live.planned_end);
- the reward each period earns: the provider's potential reward for the current one, a later
  period's at the same rate (``queue.period_reward``); 1 wei where none is known, so no slash;
- an end already past at the snapshot's block is recorded in the next block;
- the depositor serves in the next block, after every end, and when the vault's reward stream has
  released all of it: call after call while the line's front is within the liquidity, never
  sending a call that would revert.

Runs inside an evm snapshot: the chain is left exactly as it was.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ggp_devnet import operator as O
from ggp_devnet.live import planned_end
from ggp_devnet.seed import Sender, manual_mining

from publisher.chain import abis
from publisher.chain.rpc import RpcClient, RpcError
from publisher.compute import queue as Q
from publisher.compute.nodeid import node_id
from publisher.snapshot import Snapshot

from .chain import checkpoint

STAKING, LAUNCHED = 2, 1
SOURCE = b"REPLAY"


@dataclass
class Replay:
    """Each request the replay funded: id -> (block time, serve number, call number in that serve).
    Serve 1 is the depositor's first, in the block after the snapshot's."""

    funded: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    restaked: list[tuple[int, str]] = field(default_factory=list)  # (time, nodeID hex) the contracts restaked
    returned: list[tuple[int, str]] = field(default_factory=list)  # (end time, nodeID hex) handed back for good
    reverted_calls: int = 0


def replay(url: str, addresses: dict[str, str], snap: Snapshot, *, max_events: int = 2_000) -> Replay:
    client = RpcClient([url], max_attempts=2)
    with checkpoint(client), manual_mining(client):
        return _Run(client, addresses, snap).run(max_events)


def minipool(op: O.Operator, nid: str, block: str = "pending") -> dict:
    row = op.call("MinipoolManager", abis.getMinipoolByNodeID, nid, block=block)
    return dict(zip((k for k, _ in abis.MINIPOOL_FIELDS), row, strict=True))


class _Run:
    def __init__(self, client: RpcClient, addresses: dict[str, str], snap: Snapshot):
        self.client, self.addresses, self.snap = client, addresses, snap
        self.now = snap.block.timestamp
        head = int(client.request("eth_getBlockByNumber", ["latest", False])["number"], 16)
        assert head == snap.block.number, f"the replay starts at the snapshot's block {snap.block.number}, not {head}"
        self.sender = Sender(client, clock=self.now)
        self.op = O.Operator(client, addresses, self.sender)
        self.cycle_len = self.op.setting("MinipoolCycleDuration")
        self.out = Replay()
        self.serves = 0
        q = snap.withdraw_queue
        limit = (q.max_requests_per_deposit or 1) if q else 1
        self.max_idle = (q.next_request_id // limit + 1) if q else 0
        # The current period of each staking pool: nodeID -> (end, reward, principal, seconds).
        self.periods: dict[str, tuple[int, int, int, int]] = {}
        vals = {v.node_id: v for v in snap.validators}
        for m in self.op.minipools():
            if m["status"] != STAKING or not m["avaxLiquidStakerAmt"]:
                continue
            v = vals.get(node_id(m["nodeID"]))
            end = planned_end(m, self.cycle_len)
            assert v is None or v.end_timestamp == end, f"the provider and the chain disagree on {m['nodeID']}'s end"
            principal = m["avaxNodeOpAmt"] + m["avaxLiquidStakerAmt"]
            self.periods[m["nodeID"]] = (end, v.validation_reward * Q.NANO if v else 0, principal, end - m["startTime"])

    def run(self, max_events: int) -> Replay:
        first = self.now + 1
        stream_end = self.snap.ggavax.rewards_cycle_end
        times = {max(end, first) for end, *_ in self.periods.values()} | ({stream_end} if stream_end > first else set())
        events = 0
        with self.sender.one_block(first):
            self.serve(first)  # the depositor's next call, before anything returns
        self.sender.check()
        done: set[int] = set()
        while True:
            todo = {max(end, first) for end, *_ in self.periods.values()} | (times - done)
            todo -= done
            if not todo:
                return self.out
            t = min(todo)
            done.add(t)
            events += 1
            assert events <= max_events, "the replay did not end"
            due = sorted((nid for nid, (end, *_) in self.periods.items() if max(end, first) == t),
                         key=lambda nid: minipool(self.op, nid, "latest")["index"])
            with self.sender.one_block(t):
                self.end_pools(t, due)
                self.serve(t)
            self.sender.check()

    def serve(self, t: int) -> None:
        """The depositor, in the block being filled at ``t``: call after call while the line's front
        is within the liquidity, never sending a call that would revert."""
        op, sender = self.op, self.sender
        self.serves += 1
        calls = idle = 0
        self.client.request("evm_setNextBlockTimestamp", [hex(t)])
        while True:
            sender.flush()
            before = set(op.call("WithdrawQueue", O.pending_ids, block="pending"))
            if not before:
                return
            if calls:
                front = op.call("WithdrawQueue", O.queue_request, min(before), block="pending")
                assets, staking = op.calls_at("pending", [("TokenggAVAX", abis.totalAssets, ()),
                                                          ("TokenggAVAX", abis.stakingTotalAssets, ())])
                if front[2] > max(0, assets - staking):
                    return
            if op.serve_reverts(SOURCE):
                self.out.reverted_calls += 1
                return
            op.serve(SOURCE)
            calls += 1
            sender.flush()
            after = set(op.call("WithdrawQueue", O.pending_ids, block="pending"))
            for i in before - after:
                self.out.funded[i] = (t, self.serves, calls)
            # A call that funds nothing may still drop closed ids from the line (each a step): go
            # on while some could be left, at most one call per limit's worth of ids ever issued.
            idle = idle + 1 if before == after else 0
            if idle > self.max_idle:
                return

    def end_pools(self, t: int, due: list[str]) -> None:
        """Record the ends due at ``t`` in minipool order, the contracts deciding the restakes; a
        restaked pool's next validation starts in the same block."""
        op, sender = self.op, self.sender
        self.client.request("evm_setNextBlockTimestamp", [hex(t)])
        tried = []
        for nid in due:
            end, reward, principal, seconds = self.periods.pop(nid)
            reward = max(reward, 1)  # a zero reward would slash the owner's GGP
            sender.flush()
            if self._would_cycle(nid, end, reward):
                op.end(nid, end, reward)
                tried.append((nid, end, reward, principal, seconds))
            else:  # paused, or the owner's collateral would refuse the restake
                op.end_only(nid, end, reward)
                self.out.returned.append((end, nid))
        sender.flush()
        for nid, end, reward, principal, seconds in tried:
            m = minipool(op, nid)
            if m["status"] != LAUNCHED:  # the end-and-cycle call found no cycle left
                self.out.returned.append((end, nid))
                continue
            op.start(nid, b"\x01" * 32, t)
            self.out.restaked.append((t, nid))
            nxt = planned_end({**m, "startTime": t, "endTime": 0}, self.cycle_len)
            next_principal = m["avaxNodeOpAmt"] + m["avaxLiquidStakerAmt"]
            self.periods[nid] = (nxt, Q.period_reward(reward, principal, seconds, next_principal, nxt - t),
                                 next_principal, nxt - t)

    def _would_cycle(self, nid: str, end: int, reward: int) -> bool:
        data = O.record_end_cycle.encode(nid, end, reward)
        try:
            self.client.request("eth_call", [{"from": O.DEPLOYER, "to": self.addresses["MinipoolManager"],
                                              "gas": hex(3_000_000), "data": "0x" + data.hex()}, "pending"])
        except RpcError:
            return False
        return True
