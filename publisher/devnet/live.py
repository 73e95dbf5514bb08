"""A devnet that keeps moving: the seeded demo chain run forward one protocol day per step.

Each day prices move, ggAVAX takes deposits, minipools are created, launched, started, ended (and
cycled by the contract while their duration has room), errored, canceled and withdrawn; ggAVAX
syncs its rewards when its cycle ends; the GGP rewards cycle is started and distributed when due,
some cycles late. Every choice comes from a seeded RNG and every block's time from the protocol
clock, so a seed always yields the same chain, whatever the pace.

The withdraw queue lives too: holders file requests (directly and through pstAVAX), claim what
was funded, cancel now and then, and some never come back, so their requests expire; the operator
reclaims expired requests from time to time, and pauses the queue once for a few days. The
operator is the queue's depositor: a minipool's validation ends at its exact end time, in a
block of its own, and in that same block the depositor serves the line (depositFromStaking with
no AVAX attached) as many times as the per-call limit requires, until the line is empty or its
front request is more than the vault's liquidity; the same after an errored minipool's AVAX
returns. Each request funded is recorded (``Live.fundings``) with its block and time.

The network's validation reward for a period is what the validator APIs report as the potential
reward (``operator.network_reward``), except for the occasional zero reward (poor uptime, slashed).
The validator stand-ins are refreshed after every step so they describe the chain as it is.
"""
from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from eth_utils import keccak, to_checksum_address

from ..chain import abis
from ..chain.rpc import RpcClient
from . import Devnet, running
from . import operator as O
from .operator import YEAR, Distribution, Operator, network_reward
from .scenarios import CANCELED, DAY, ERROR, FINISHED, LAUNCHED, PRELAUNCH, STAKING, WAD, WITHDRAWABLE
from .seed import Sender, manual_mining

LATE_DAYS = (0, 0, 0, 0.5, 1.5, 3.5)  # how late each GGP distribution runs, drawn per cycle
ZERO_REWARD_ODDS = 0.05
ERROR_ODDS = 0.05
EC2 = b"EC2"
# The queue's life, per day: odds of a new direct request (10-40 % of a holder's ggAVAX, or 60-90 %
# for a big one) and of a pstAVAX one, of a holder
# claiming a funded request, of cancelling a pending one (a funded one, before its
# claimableTime), of the operator reclaiming expired ones; a requester whose address is 0 mod
# FORGETFUL never claims (its funded requests expire). The queue is paused on days PAUSED.
REQUEST_ODDS, BIG_REQUEST_ODDS, PST_ODDS, NEW_PST_ODDS = 0.7, 0.15, 0.35, 0.15
CLAIM_ODDS, CANCEL_ODDS, CANCEL_FUNDED_ODDS, RECLAIM_ODDS = 0.45, 0.02, 0.1, 0.3
FORGETFUL = 5
PAUSED = range(5, 8)
QUEUE_SOURCE = b"MINIPOOL_END"
REQUEST_FULFILLED = "0x" + keccak(text="RequestFulfilled(bytes32,uint256,uint256)").hex()


@dataclass
class Payment:
    """One validation period the devnet paid: principal (operator + liquid stakers), seconds, reward."""

    node_id: str
    principal: int
    seconds: int
    reward: int
    time: int


@dataclass
class Funding:
    """One withdraw-queue request the depositor funded: in which block, at what time, for how much
    (the request's expectedAssets), and what the depositor named as the source."""

    request_id: int
    block: int
    time: int
    assets: int
    source: bytes


@dataclass
class Live:
    net: Devnet
    seed: int = 1
    late_days: tuple[float, ...] = LATE_DAYS
    day: int = 0
    distributions: list[Distribution] = field(default_factory=list)
    payments: list[Payment] = field(default_factory=list)
    fundings: list[Funding] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.client = RpcClient([self.net.url], max_attempts=2)
        now = int(self.client.request("eth_getBlockByNumber", ["latest", False])["timestamp"], 16)
        self.sender = Sender(self.client, clock=now)
        self.op = Operator(self.client, self.net.addresses, self.sender)
        self.rng = random.Random(f"live-{self.seed}")
        sc = self.net.scenario
        self.rate_bp = round(sc.validator_rate * 10_000)
        self.ggp_price, self.avax_usd = sc.prices[-1][1], sc.prices[-1][2]
        self.depositors = [who for who, _ in sc.deposits]
        self.pst_holders = [who for who, _ in sc.queue.pst_deposits] if sc.queue else []
        self.lateness: dict[int, int] = {}

    # ---- the clock ----

    @property
    def now(self) -> int:
        return self.sender.clock

    def next_distribution_due(self) -> int:
        """When the running GGP cycle's distribution will be sent (its end plus this cycle's delay)."""
        start = self.op.call("RewardsPool", abis.getRewardsCycleStartTime)
        count = self.op.call("RewardsPool", abis.getRewardsCycleCount)
        cycle = self.op.setting("RewardsCycleSeconds")
        if count not in self.lateness:
            self.lateness[count] = int(self.rng.choice(self.late_days) * DAY)
        return start + cycle + self.lateness[count]

    def run(self, days: int | None = None, pace: float = 1.0, on_step=None) -> None:
        """Step ``days`` protocol days (forever when None), one every ``pace`` wall seconds."""
        n = 0
        while days is None or n < days:
            t0 = time.monotonic()
            events = self.step()
            if on_step:
                on_step(self, events)
            n += 1
            time.sleep(max(0.0, pace - (time.monotonic() - t0)))

    def step(self, until: int | None = None) -> list[str]:
        """Advance one protocol day (or to ``until``): a due distribution and the minipool ends
        of the day, each at its exact time, then the day's business."""
        target = until if until is not None else self.now + DAY
        events: list[str] = []
        with manual_mining(self.client):
            events += self._due(target)
            self.sender.at(max(target, self.now + 1))
            with self.sender.one_block(self.now):
                events += self._prices()
                events += self._vault()
                events += self._queue()
            self.sender.check()
            events += self._minipools()
            events += self._sync()
        self.day += 1
        self._refresh_standins()
        return events

    def only_due(self, until: int) -> list[str]:
        """Advance to ``until`` with only what falls due (validation ends, the depositor serving
        the line, a due distribution) and no day's business: no prices, deposits, requests,
        launches or syncs. What a forecast made before it assumes, so it can be held to it."""
        with manual_mining(self.client):
            events = self._due(until)
            self.sender.mine(max(until, self.now + 1))
        self._refresh_standins()
        return events

    def _due(self, target: int) -> list[str]:
        """What falls due up to ``target``, in time order at its own time: validation ends (a block
        per end time, the depositor serving the line in it) and the GGP distribution."""
        events: list[str] = []
        due = self.next_distribution_due()
        cycle_len = self.op.setting("MinipoolCycleDuration")
        tolerance = self.op.setting("MinipoolCycleDelayTolerance")
        ends: dict[int, list[dict]] = {}
        for m in self.op.minipools():
            end = planned_end(m, cycle_len) if m["status"] == STAKING else 0
            if self.now < end <= target:
                ends.setdefault(end, []).append(m)
        distribute = self.now < due <= target
        for end in sorted(ends):
            if distribute and due < end:
                events.append(self._distribute(due))
                distribute = False
            owners = {st["stakerAddr"]: st for st in self.op.stakers()}
            with self.sender.one_block(end):
                for m in ends[end]:
                    events.append(self._end(m, end, end, owners[m["owner"]], cycle_len, tolerance))
                events += self._serve()
            self._record_fundings(self.sender.check())
        if distribute:  # at its time, or a second after ends due the same second
            events.append(self._distribute(due))
        return events

    def distribute_at(self, when: int) -> Distribution:
        """Run the GGP distribution at exactly ``when`` (tests: a chosen on-time or late moment)."""
        with manual_mining(self.client):
            self._distribute(when)
        return self.distributions[-1]

    # ---- the withdraw queue ----

    def _serve(self) -> list[str]:
        """Inside the open block: the depositor serves the line once, then again while the line's
        front request is within the vault's liquidity (and WAVAX), reading the block as it stands
        (the node's pending state), so every request the returned AVAX covers is funded in this
        block however many steps the per-call limit allows."""
        queue, gg = self.net.addresses["WithdrawQueue"], self.net.addresses["TokenggAVAX"]
        # The pending state is priced at the block's own time (the vault streams rewards).
        self.client.request("evm_setNextBlockTimestamp", [hex(self.sender.next_block_time())])
        calls = 0
        while True:
            self.sender.flush()
            pending = self.op.call("WithdrawQueue", O.pending_ids, block="pending")
            if not pending:
                break
            if calls:
                front = min(pending)
                row = self.op.call("WithdrawQueue", O.queue_request, front, block="pending")
                assets, staking, held, paid = self.op.calls_at("pending", [
                    ("TokenggAVAX", abis.totalAssets, ()), ("TokenggAVAX", abis.stakingTotalAssets, ()),
                    ("WAVAX", abis.balanceOf, (gg,)), ("TokenggAVAX", abis.convertToAssets, (row[1],))])
                if row[2] > max(0, assets - staking) or paid > held:
                    break
            if calls > 10_000:
                raise RuntimeError(f"the depositor served {queue} {calls} times in one block")
            self.op.serve(QUEUE_SOURCE)
            calls += 1
        return [f"queue served {calls} times"] if calls else []

    def _record_fundings(self, receipts: list[dict]) -> None:
        queue = self.net.addresses["WithdrawQueue"].lower()
        for r in receipts:
            for log in r.get("logs", ()):
                if log["address"].lower() == queue and log["topics"][0] == REQUEST_FULFILLED:
                    self.fundings.append(Funding(int(log["topics"][2], 16), int(log["blockNumber"], 16), self.now,
                                                 int(log["data"], 16), bytes.fromhex(log["topics"][1][2:]).rstrip(b"\0")))

    def _queue(self) -> list[str]:
        """Holders' and the operator's queue business of the day, in the day's block."""
        rng, op, out = self.rng, self.op, []
        t = self.sender.next_block_time()
        if self.day == PAUSED.start:
            op.pause_queue(True)
            out.append("queue paused")
        elif self.day == PAUSED.stop:
            op.pause_queue(False)
            out.append("queue unpaused")
        paused = self.day in PAUSED
        expired = []
        for i, r in op.open_requests().items():
            who = r["requester"]
            if t >= r["expirationTime"]:
                expired.append(i)
            elif r["fulfilled"]:
                if t < r["claimableTime"] and rng.random() < CANCEL_FUNDED_ODDS:
                    op.cancel_request(who, i)
                    out.append(f"request {i} cancelled after funding")
                elif int(who, 16) % FORGETFUL and rng.random() < CLAIM_ODDS:
                    op.claim(who, i)
                    out.append(f"request {i} claimed")
            elif rng.random() < CANCEL_ODDS:
                op.cancel_request(who, i)
                out.append(f"request {i} cancelled")
        if expired and rng.random() < RECLAIM_ODDS:
            for i in expired[:3]:
                op.reclaim(i)
                out.append(f"request {i} reclaimed")
        delay = rng.choice((0, 7 * DAY, 14 * DAY, 30 * DAY))
        if rng.random() < REQUEST_ODDS and not paused:
            holder = rng.choice(self.depositors)
            part = rng.randrange(60, 90) if rng.random() < BIG_REQUEST_ODDS else rng.randrange(10, 40)
            shares = op.call("TokenggAVAX", abis.balanceOf, holder) * part // 100
            if shares:
                op.request_unstake(holder, shares, delay)
                out.append("queue request")
        if rng.random() < NEW_PST_ODDS or not self.pst_holders:
            who = to_checksum_address(rng.randbytes(20))
            op.pst_deposit(who, rng.randrange(5, 400) * WAD)
            self.pst_holders.append(who)
            out.append("pstAVAX deposit")
        elif rng.random() < PST_ODDS and not paused:
            who = rng.choice(self.pst_holders)
            held = op.call("TokenpstAVAX", abis.balanceOf, who)
            assets = held * rng.choice((25, 50, 100)) // 100
            if assets >= WAD // 10:
                op.pst_withdraw_via_queue(who, assets, delay)
                out.append("pstAVAX queue request")
        return out

    # ---- the day's business ----

    def _distribute(self, when: int) -> str:
        d = self.op.distribute_rewards(when)
        self.distributions.append(d)
        return f"GGP cycle {d.cycle} distributed at {d.time}: {len(d.paid)} stakers, TEGS {d.tegs}"

    def _prices(self) -> list[str]:
        self.ggp_price = int(self.ggp_price * (1 + self.rng.uniform(-0.03, 0.031))) // 10**12 * 10**12
        self.avax_usd = int(self.avax_usd * (1 + self.rng.uniform(-0.04, 0.041))) // 10**4 * 10**4
        self.op.set_prices(self.ggp_price, self.avax_usd)
        self.net.scenario.prices.append((self.now, self.ggp_price, self.avax_usd))
        return []

    def _vault(self) -> list[str]:
        rng, out = self.rng, []
        who = rng.choice(self.depositors)
        amount = rng.randrange(200, 4000) * WAD
        self.op.deposit(who, amount)
        out.append(f"ggAVAX deposit {amount // WAD} AVAX")
        return out

    def _minipools(self) -> list[str]:
        rng, op, out = self.rng, self.op, []
        pools = op.minipools()
        setting = op.setting
        cycle_len, moratorium = setting("MinipoolCycleDuration"), setting("MinipoolCancelMoratoriumSeconds")
        tolerance = setting("MinipoolCycleDelayTolerance")
        # Keep a margin in the vault: a cycling pool takes back its principal plus the stakers' reward.
        available = op.call("TokenggAVAX", abis.amountAvailableForStaking) - 200 * WAD
        owners = {st["stakerAddr"]: st for st in op.stakers()}
        t = self.now + 1
        returned = False
        with self.sender.one_block(t):
            for m in pools:
                nid, status = m["nodeID"], m["status"]
                if status == PRELAUNCH and t - m["creationTime"] >= DAY // 2:
                    if t - m["creationTime"] >= moratorium and rng.random() < 0.15:
                        op.cancel(nid)
                        out.append(f"cancel {nid}")
                    elif m["avaxLiquidStakerAmt"] <= available:
                        available -= m["avaxLiquidStakerAmt"]
                        op.launch(nid)
                        out.append(f"launch {nid}")
                elif status == LAUNCHED:
                    if rng.random() < ERROR_ODDS:
                        op.error(nid, EC2)
                        returned = True
                        out.append(f"error {nid}")
                    else:
                        op.start(nid, keccak(bytes.fromhex(nid[2:]) + t.to_bytes(8, "big")), t)
                        out.append(f"start {nid}")
                elif status == STAKING:
                    end = planned_end(m, cycle_len)
                    if end <= t:  # overdue (ends normally run at their own time, _due)
                        out.append(self._end(m, end, t, owners[m["owner"]], cycle_len, tolerance))
                        returned = True
                elif status in (WITHDRAWABLE, ERROR) and rng.random() < 0.25:
                    op.withdraw(nid)
                    out.append(f"withdraw {nid}")
            if returned:
                out += self._serve()
        self._record_fundings(self.sender.check())
        out += self._new_minipools(pools)
        return out

    def _end(self, m: dict, end: int, t: int, owner: dict, cycle_len: int, tolerance: int) -> str:
        """Report a validation period's end and reward. Rialto ends and cycles in one call when the
        pool has another cycle left, unless the owner's collateral would then be under the
        minimum (the contract would revert): then it only records the end."""
        nid = m["nodeID"]
        principal = m["avaxNodeOpAmt"] + m["avaxLiquidStakerAmt"]
        seconds = end - m["startTime"]
        reward = 0 if self.rng.random() < ZERO_REWARD_ODDS else network_reward(principal, seconds, self.rate_bp)
        ls = m["avaxLiquidStakerAmt"]
        if reward == 0:  # the contract slashes what the stakers' AVAX should have earned
            expected = ls * self.op.setting("ExpectedAVAXRewardsRate") // WAD * seconds // YEAR
            owner["ggpStaked"] -= min(owner["ggpStaked"], expected * WAD // self.ggp_price)
        owner["avaxAssigned"] -= ls
        cycles = t + cycle_len <= m["initialStartTime"] + m["duration"] + tolerance
        compounded = m["avaxNodeOpAmt"] + reward // 2  # commission 0 on the devnet: the stakers get half
        if cycles and (owner["ggpStaked"] * self.ggp_price // WAD) * WAD // (owner["avaxAssigned"] + compounded) < WAD // 10:
            cycles = False
            self.op.end_only(nid, end, reward)
        else:
            self.op.end(nid, end, reward)
        if cycles:
            owner["avaxAssigned"] += compounded
        self.payments.append(Payment(nid, principal, seconds, reward, t))
        return f"end {nid} reward {reward}" + (" and cycle" if cycles else "")

    def _new_minipools(self, pools: list[dict]) -> list[str]:
        rng, op, out = self.rng, self.op, []
        stakers = {st["stakerAddr"]: st for st in op.stakers()}
        idle = [m for m in pools if m["status"] in (FINISHED, CANCELED)]
        with self.sender.one_block(self.now + 1):
            for _ in range(rng.choice((0, 1, 1, 2))):
                avax = 1000 * WAD
                duration = rng.choice((15, 30, 45, 90)) * DAY
                if idle and rng.random() < 0.3:  # relaunch a finished node
                    m = idle.pop(rng.randrange(len(idle)))
                    owner, nid = m["owner"], m["nodeID"]
                else:
                    owner = to_checksum_address(rng.randbytes(20))
                    nid = to_checksum_address(rng.randbytes(20))
                st = stakers.get(owner)
                assigned = (st["avaxAssigned"] if st else 0) + avax
                have = st["ggpStaked"] if st else 0
                need = assigned * rng.uniform(0.12, 1.6) * WAD // self.ggp_price
                if have * self.ggp_price // WAD < assigned // 10 + WAD:
                    op.stake_ggp(owner, int(max(need - have, 0)) // WAD * WAD + WAD)
                op.create_minipool(owner, nid, duration, avax)
                out.append(f"create {nid}")
        self.sender.check()
        return out

    def _sync(self) -> list[str]:
        if self.now < self.op.call("TokenggAVAX", abis.rewardsCycleEnd):
            return []
        self.op.sync_ggavax()
        self.sender.check()
        return ["ggAVAX syncRewards"]

    # ---- stand-ins follow the chain ----

    def _refresh_standins(self) -> None:
        if self.net.standins is None:
            return
        cycle_len = self.op.setting("MinipoolCycleDuration")
        pools = []
        for m in self.op.minipools():
            m = dict(m)
            if m["status"] == STAKING:
                m["endTime"] = planned_end(m, cycle_len)
            pools.append(m)
        self.net.scenario.minipools = pools
        self.net.standins.refresh()


def planned_end(m: dict, cycle_len: int) -> int:
    """When a Staking minipool's validation period ends: the seeded end time, else one minipool
    cycle (or the rest of the requested duration, if shorter) after its start."""
    if m["endTime"]:
        return m["endTime"]
    left = m["initialStartTime"] + m["duration"] - m["startTime"]
    return m["startTime"] + max(min(cycle_len, left), 3600)


@contextmanager
def running_live(seed: int = 1) -> Iterator[tuple[Devnet, Live]]:
    """The demo devnet with a ``Live`` driver for it."""
    with running("demo") as net:
        yield net, Live(net, seed=seed)
