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

The end of operations (``Live(..., wind_down_at=T)``): at T, in a block of its own, the protocol's
pauser sets the Storage pause flags of scenarios.WIND_DOWN_PAUSED (ggAVAX deposits, minipool
creation and cycling, GGP rewards) and the queue is unpaused if it was. From then on: no Oracle
price update (the AVAX/USD feed, a third-party feed, keeps its daily rounds; the GGP market price
moves on in ``ggp_market``), no GGP cycle or distribution, no ggAVAX deposit or syncRewards, no
minipool created or launched; Prelaunch minipools are cancelled once the moratorium allows,
Launched ones start or error as before, and each validation ends at its exact end time without
cycling (recordStakingEnd), handing the stakers' AVAX back. The depositor serves the line at those
ends as before and, with no AVAX coming back any more, once a day from the vault's liquidity, in a
block of its own at the start of the day. Holders file fewer but larger requests (directly and
through pstAVAX; new pstAVAX deposits would be refused), claim, cancel pending requests, and let
some expire; the keeper reclaims expired pending requests only: a funded request's AVAX goes back
through a ggAVAX deposit, which is refused while deposits are paused, so an expired funded request
stays in the queue. ``play_wind_down`` seeds a scenario's wind-down with this.
"""
from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from eth_utils import keccak, to_checksum_address

from publisher.chain import abis
from publisher.chain.reader import registry_key
from publisher.chain.rpc import RpcClient

from . import operator as O
from .operator import YEAR, Distribution, Operator, network_reward
from .scenarios import CANCELED, DAY, ERROR, FINISHED, LAUNCHED, PRELAUNCH, STAKING, WAD, WIND_DOWN_PAUSED, WITHDRAWABLE
from .seed import Sender, manual_mining

if TYPE_CHECKING:  # the devnet runs this module's wind-down while it seeds
    from .net import Devnet

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
# The wind-down, per day: odds of a direct request (50-100 % of a holder's ggAVAX) and of a pstAVAX
# one; the depositor's daily service from the vault names this source.
WIND_DOWN_REQUEST_ODDS, WIND_DOWN_PST_ODDS = 0.35, 0.2
WIND_DOWN_SOURCE = b"WIND_DOWN"
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
    # When operations end (protocol time); None: they never do. A time already past winds the
    # protocol down in the next step, unless the chain is wound down already (its flags set).
    wind_down_at: int | None = None
    zero_reward_odds: float = ZERO_REWARD_ODDS  # odds that a validation ends with no reward (slashed)

    def __post_init__(self) -> None:
        self.client = RpcClient([self.net.url], max_attempts=2)
        now = int(self.client.request("eth_getBlockByNumber", ["latest", False])["timestamp"], 16)
        self.sender = Sender(self.client, clock=now)
        self.op = Operator(self.client, self.net.addresses, self.sender)
        self.rng = random.Random(f"live-{self.seed}")
        sc = self.net.scenario
        self.rate_bp = round(sc.validator_rate * 10_000)
        self.ggp_price, self.avax_usd = sc.prices[-1][1], sc.prices[-1][2]  # the Oracle's GGP price
        self.ggp_market = sc.ggp_market or self.ggp_price
        self.depositors = [who for who, _ in sc.deposits]
        self.pst_holders = [who for who, _ in sc.queue.pst_deposits] if sc.queue else []
        self.lateness: dict[int, int] = {}
        self.wound_down = False
        self._manual = False  # inside _mining
        if self.wind_down_at is not None and self.wind_down_at <= now:
            keys = [registry_key("contract.paused", n) for n in WIND_DOWN_PAUSED]
            self.wound_down = all(self.op.calls([("Storage", abis.storage_getBool, (k,)) for k in keys]))

    # ---- the clock ----

    @property
    def now(self) -> int:
        return self.sender.clock

    @contextmanager
    def _mining(self) -> Iterator[None]:
        """Manual mining for what's inside, unless an outer span already holds it (play_wind_down:
        automine off once for the whole wind-down, not twice a day)."""
        if self._manual:
            yield
            return
        self._manual = True
        try:
            with manual_mining(self.client):
                yield
        finally:
            self._manual = False

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
        with self._mining(), self.op.settings_held():
            events += self._wind_down_by(target)
            if self.wound_down:
                events += self._depositor_run()
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
        launches or syncs. What a forecast made before it assumes, so it can be held to it. After
        the end of operations no distribution falls due, and the depositor's daily run from the
        vault belongs to the day's business (step)."""
        with self._mining(), self.op.settings_held():
            events = self._wind_down_by(until)
            events += self._due(until)
            self.sender.mine(max(until, self.now + 1))
        self._refresh_standins()
        return events

    def _due(self, target: int) -> list[str]:
        """What falls due up to ``target``, in time order at its own time: validation ends (a block
        per end time, the depositor serving the line in it) and the GGP distribution."""
        events: list[str] = []
        due = 0 if self.wound_down else self.next_distribution_due()  # 0: none after the end of operations
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

    # ---- the end of operations ----

    def _wind_down_by(self, target: int) -> list[str]:
        """When operations end before ``target``: what falls due before, then the wind-down."""
        if self.wind_down_at is None or self.wound_down or self.wind_down_at > target:
            return []
        events = self._due(self.wind_down_at - 1)
        return events + self.wind_down(self.wind_down_at)

    def wind_down(self, when: int) -> list[str]:
        """End operations at ``when`` (or the next second free), in a block of its own: the pause
        flags of WIND_DOWN_PAUSED set, the queue open. Under manual mining."""
        with self.sender.one_block(max(when, self.now + 1)):
            for name in WIND_DOWN_PAUSED:
                self.op.pause(name, True)
            if self.op.call("WithdrawQueue", O.queue_paused):
                self.op.pause_queue(False)
        self.sender.check()
        self.wound_down = True
        return [f"operations ended at {self.now}: {', '.join(WIND_DOWN_PAUSED)} paused"]

    def _depositor_run(self) -> list[str]:
        """After the end of operations the depositor serves the line once a day from the vault's
        liquidity, in a block of its own (no AVAX comes back from minipools any more)."""
        if not self.op.call("WithdrawQueue", O.pending_ids):
            return []
        with self.sender.one_block(self.now + 1):
            events = self._serve(WIND_DOWN_SOURCE)
        self._record_fundings(self.sender.check())
        return events

    def depositor_run(self) -> list[str]:
        """The depositor serves the line now, in a block of its own (tests, the scenario's end)."""
        with self._mining():
            return self._depositor_run()

    def file_requests(self, count: int, when: int) -> list[str]:
        """``count`` holders with ggAVAX each file a request for 50-100 % of it, in one block at
        ``when`` (or the next second free)."""
        held = self.op.calls([("TokenggAVAX", abis.balanceOf, (who,)) for who in self.depositors])
        holders = [(who, n) for who, n in zip(self.depositors, held, strict=True) if n]
        out = []
        with self._mining():
            with self.sender.one_block(max(when, self.now + 1)):
                for holder, balance in self.rng.sample(holders, min(count, len(holders))):
                    self.op.request_unstake(holder, balance * self.rng.randrange(50, 101) // 100,
                                            self.rng.choice((0, 7 * DAY, 14 * DAY, 30 * DAY)))
                    out.append("queue request")
            self.sender.check()
        return out

    def distribute_at(self, when: int) -> Distribution:
        """Run the GGP distribution at exactly ``when`` (tests: a chosen on-time or late moment)."""
        with self._mining():
            self._distribute(when)
        return self.distributions[-1]

    # ---- the withdraw queue ----

    def _serve(self, source: bytes = QUEUE_SOURCE) -> list[str]:
        """Inside the open block: the depositor serves the line once, then again while the line's
        front request is within the vault's liquidity (and WAVAX), reading the block as it stands
        (the node's pending state), so every request the returned AVAX covers is funded in this
        block however many steps the per-call limit allows."""
        queue, gg = self.net.addresses["WithdrawQueue"], self.net.addresses["TokenggAVAX"]
        # The pending state is priced at the block's own time (the vault streams rewards).
        self.client.request("evm_setNextBlockTimestamp", [hex(self.sender.next_block_time())])
        out = self._reclaim_before_serving() if self.wound_down else []
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
            if self.op.serve_reverts(source):
                break  # a redemption worth more than the liquidity left: the call would fail whole
            self.op.serve(source)
            calls += 1
        return out + ([f"queue served {calls} times"] if calls else [])

    def _reclaim_before_serving(self) -> list[str]:
        """Wind-down housekeeping before the depositor serves: expired pending requests are
        reclaimed (their shares go back). Served, their AVAX would be set aside for a request that
        can be neither claimed (expired) nor reclaimed (deposits are paused)."""
        self.sender.flush()
        pending = self.op.call("WithdrawQueue", O.pending_ids, block="pending")
        if not pending:
            return []
        t = self.sender.next_block_time()
        rows = self.op.calls_at("pending", [("WithdrawQueue", O.queue_request, (i,)) for i in pending])
        out = []
        for i, row in sorted(zip(pending, rows, strict=True)):
            if t >= row[5]:  # expirationTime
                self.op.reclaim(i)
                out.append(f"request {i} reclaimed")
        return out

    def _record_fundings(self, receipts: list[dict]) -> None:
        queue = self.net.addresses["WithdrawQueue"].lower()
        for r in receipts:
            for log in r.get("logs", ()):
                if log["address"].lower() == queue and log["topics"][0] == REQUEST_FULFILLED:
                    self.fundings.append(Funding(int(log["topics"][2], 16), int(log["blockNumber"], 16), self.now,
                                                 int(log["data"], 16), bytes.fromhex(log["topics"][1][2:]).rstrip(b"\0")))

    def _queue(self) -> list[str]:
        """Holders' and the operator's queue business of the day, in the day's block."""
        t = self.sender.next_block_time()
        winding = self.wound_down
        out = [] if winding else self._pause_on_schedule()  # in the wind-down withdrawals stay open
        paused = not winding and self.day in PAUSED
        events, expired = self._tend_requests(t)
        out += events
        if expired and self.rng.random() < RECLAIM_ODDS:
            for i in expired[:3]:
                self.op.reclaim(i)
                out.append(f"request {i} reclaimed")
        delay = self.rng.choice((0, 7 * DAY, 14 * DAY, 30 * DAY))
        out += self._leaving_request(delay) if winding else self._new_request(delay, paused)
        out += self._pst_business(delay, paused)
        return out

    def _pause_on_schedule(self) -> list[str]:
        """The operator pauses the queue on the first of the PAUSED days and unpauses it after the last."""
        if self.day == PAUSED.start:
            self.op.pause_queue(True)
            return ["queue paused"]
        if self.day == PAUSED.stop:
            self.op.pause_queue(False)
            return ["queue unpaused"]
        return []

    def _tend_requests(self, t: int) -> tuple[list[str], list[int]]:
        """Requesters claim or cancel their open requests now and then: the events, and the ids
        the operator may reclaim (expired by ``t``)."""
        rng, op, out = self.rng, self.op, []
        winding = self.wound_down
        expired = []
        for i, r in op.open_requests().items():
            who = r["requester"]
            if t >= r["expirationTime"]:
                # A funded request's AVAX would go back through a ggAVAX deposit, refused while
                # deposits are paused: only pending ones can be reclaimed in the wind-down.
                if not (winding and r["fulfilled"]):
                    expired.append(i)
            elif r["fulfilled"]:
                # Cancelling a funded request deposits its AVAX again: not in the wind-down either.
                if not winding and t < r["claimableTime"] and rng.random() < CANCEL_FUNDED_ODDS:
                    op.cancel_request(who, i)
                    out.append(f"request {i} cancelled after funding")
                elif int(who, 16) % FORGETFUL and rng.random() < CLAIM_ODDS:
                    op.claim(who, i)
                    out.append(f"request {i} claimed")
            elif rng.random() < CANCEL_ODDS:
                op.cancel_request(who, i)
                out.append(f"request {i} cancelled")
        return out, expired

    def _leaving_request(self, delay: int) -> list[str]:
        """In the wind-down: now and then a holder leaving for good requests 50-100 % of its ggAVAX."""
        rng, op = self.rng, self.op
        if rng.random() >= WIND_DOWN_REQUEST_ODDS:
            return []
        held = op.calls([("TokenggAVAX", abis.balanceOf, (who,)) for who in self.depositors])
        holders = [(who, n) for who, n in zip(self.depositors, held, strict=True) if n]
        if not holders:
            return []
        holder, balance = rng.choice(holders)
        op.request_unstake(holder, balance * rng.randrange(50, 101) // 100, delay)
        return ["queue request"]

    def _new_request(self, delay: int, paused: bool) -> list[str]:
        """Most days, unless the queue is paused, a holder requests part of its ggAVAX (now and then most of it)."""
        rng, op = self.rng, self.op
        if rng.random() >= REQUEST_ODDS or paused:
            return []
        holder = rng.choice(self.depositors)
        part = rng.randrange(60, 90) if rng.random() < BIG_REQUEST_ODDS else rng.randrange(10, 40)
        shares = op.call("TokenggAVAX", abis.balanceOf, holder) * part // 100
        if not shares:
            return []
        op.request_unstake(holder, shares, delay)
        return ["queue request"]

    def _pst_business(self, delay: int, paused: bool) -> list[str]:
        """A new pstAVAX holder deposits, or a holder requests part of its pstAVAX through the queue;
        pstAVAX deposits go into ggAVAX: none once its deposits are paused."""
        rng, op = self.rng, self.op
        winding = self.wound_down
        if not winding and (rng.random() < NEW_PST_ODDS or not self.pst_holders):
            new = to_checksum_address(rng.randbytes(20))
            op.pst_deposit(new, rng.randrange(5, 400) * WAD)
            self.pst_holders.append(new)
            return ["pstAVAX deposit"]
        if self.pst_holders and rng.random() < (WIND_DOWN_PST_ODDS if winding else PST_ODDS) and not paused:
            who = rng.choice(self.pst_holders)
            held = op.call("TokenpstAVAX", abis.balanceOf, who)
            assets = held * rng.choice((25, 50, 100)) // 100
            if assets >= WAD // 10:
                op.pst_withdraw_via_queue(who, assets, delay)
                return ["pstAVAX queue request"]
        return []

    # ---- the day's business ----

    def _distribute(self, when: int) -> str:
        d = self.op.distribute_rewards(when)
        self.distributions.append(d)
        return f"GGP cycle {d.cycle} distributed at {d.time}: {len(d.paid)} stakers, TEGS {d.tegs}"

    def _prices(self) -> list[str]:
        """The day's prices: the Oracle's GGP price and an AVAX/USD round; after the end of
        operations the feed's round only (a third-party feed), the GGP market moving on its own."""
        sc = self.net.scenario
        if self.wound_down:
            self.ggp_market = int(self.ggp_market * (1 + self.rng.uniform(-0.03, 0.031))) // 10**12 * 10**12
            self.avax_usd = int(self.avax_usd * (1 + self.rng.uniform(-0.04, 0.041))) // 10**4 * 10**4
            self.op.set_feed(self.avax_usd)
            sc.ggp_market = self.ggp_market
        else:
            self.ggp_price = int(self.ggp_price * (1 + self.rng.uniform(-0.03, 0.031))) // 10**12 * 10**12
            self.avax_usd = int(self.avax_usd * (1 + self.rng.uniform(-0.04, 0.041))) // 10**4 * 10**4
            self.op.set_prices(self.ggp_price, self.avax_usd)
            self.ggp_market = self.ggp_price
        sc.prices.append((self.now, self.ggp_price, self.avax_usd))
        return []

    def _vault(self) -> list[str]:
        if self.wound_down:  # deposits are paused
            return []
        rng, out = self.rng, []
        who = rng.choice(self.depositors)
        amount = rng.randrange(200, 4000) * WAD
        self.op.deposit(who, amount)
        out.append(f"ggAVAX deposit {amount // WAD} AVAX")
        return out

    def _minipools(self) -> list[str]:
        rng, op = self.rng, self.op
        out: list[str] = []
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
                if status == PRELAUNCH:
                    available -= self._cancel_or_launch(m, t, moratorium, available, out)
                elif status == LAUNCHED:
                    returned |= self._start_or_error(m, t, out)
                elif status == STAKING:
                    end = planned_end(m, cycle_len)
                    if end <= t:  # overdue (ends normally run at their own time, _due)
                        out.append(self._end(m, end, t, owners[m["owner"]], cycle_len, tolerance))
                        returned = True
                elif status in (WITHDRAWABLE, ERROR) and not (self.wound_down and int(m["owner"], 16) % FORGETFUL == 0) \
                        and rng.random() < 0.25:  # after the end of operations some owners never come back
                    op.withdraw(nid)
                    out.append(f"withdraw {nid}")
            if returned:
                out += self._serve()
        self._record_fundings(self.sender.check())
        out += self._new_minipools(pools)
        return out

    def _cancel_or_launch(self, m: dict, t: int, moratorium: int, available: int, out: list[str]) -> int:
        """A Prelaunch minipool half a day old is cancelled now and then once the moratorium allows,
        else launched when the vault has ``available`` AVAX for it: what it took. After the end of
        operations nothing launches: the owner takes its AVAX back once the moratorium allows."""
        nid, age = m["nodeID"], t - m["creationTime"]
        if self.wound_down:
            if age >= moratorium:
                self.op.cancel(nid)
                out.append(f"cancel {nid}")
            return 0
        if age < DAY // 2:
            return 0
        if age >= moratorium and self.rng.random() < 0.15:
            self.op.cancel(nid)
            out.append(f"cancel {nid}")
            return 0
        if m["avaxLiquidStakerAmt"] > available:
            return 0
        self.op.launch(nid)
        out.append(f"launch {nid}")
        return m["avaxLiquidStakerAmt"]

    def _start_or_error(self, m: dict, t: int, out: list[str]) -> bool:
        """A Launched minipool starts validating, or now and then errors: True when its AVAX came back."""
        nid = m["nodeID"]
        if self.rng.random() < ERROR_ODDS:
            self.op.error(nid, EC2)
            out.append(f"error {nid}")
            return True
        self.op.start(nid, keccak(bytes.fromhex(nid[2:]) + t.to_bytes(8, "big")), t)
        out.append(f"start {nid}")
        return False

    def _end(self, m: dict, end: int, t: int, owner: dict, cycle_len: int, tolerance: int) -> str:
        """Report a validation period's end and reward. Rialto ends and cycles in one call when the
        pool has another cycle left, unless the owner's collateral would then be under the
        minimum (the contract would revert): then it only records the end."""
        nid = m["nodeID"]
        principal = m["avaxNodeOpAmt"] + m["avaxLiquidStakerAmt"]
        seconds = end - m["startTime"]
        reward = 0 if self.rng.random() < self.zero_reward_odds else network_reward(principal, seconds, self.rate_bp)
        ls = m["avaxLiquidStakerAmt"]
        if reward == 0:  # the contract slashes what the stakers' AVAX should have earned
            expected = ls * self.op.setting("ExpectedAVAXRewardsRate") // WAD * seconds // YEAR
            owner["ggpStaked"] -= min(owner["ggpStaked"], expected * WAD // self.ggp_price)
        owner["avaxAssigned"] -= ls
        cycles = t + cycle_len <= m["initialStartTime"] + m["duration"] + tolerance
        compounded = m["avaxNodeOpAmt"] + reward // 2  # commission 0 on the devnet: the stakers get half
        if self.wound_down or (
                cycles and (owner["ggpStaked"] * self.ggp_price // WAD) * WAD // (owner["avaxAssigned"] + compounded) < WAD // 10):
            cycles = False  # after the end of operations nothing cycles (the cycling call is paused)
            self.op.end_only(nid, end, reward)
        else:
            self.op.end(nid, end, reward)
        if cycles:
            owner["avaxAssigned"] += compounded
        self.payments.append(Payment(nid, principal, seconds, reward, t))
        return f"end {nid} reward {reward}" + (" and cycle" if cycles else "")

    def _new_minipools(self, pools: list[dict]) -> list[str]:
        if self.wound_down:  # minipool creation is paused
            return []
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
        if self.wound_down or self.now < self.op.call("TokenggAVAX", abis.rewardsCycleEnd):
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
        # The live devnet's own time, which it moves: the stand-ins drop the validations ended by then
        # (asking the node at each request would queue behind the reads they answer beside).
        now = self.now
        self.net.standins.clock = lambda: now
        self.net.standins.refresh()


def planned_end(m: dict, cycle_len: int) -> int:
    """When a Staking minipool's validation period ends: the seeded end time, else one minipool
    cycle (or the rest of the requested duration, if shorter) after its start."""
    if m["endTime"]:
        return m["endTime"]
    left = m["initialStartTime"] + m["duration"] - m["startTime"]
    return m["startTime"] + max(min(cycle_len, left), 3600)


def play_wind_down(net: Devnet) -> Live:
    """Seeding of a wound-down scenario (scenarios.WindDown): from the seeded end of its history,
    the live operator ends operations at ``wind_down.at`` (that day's business follows in the next
    block) and runs ``wind_down.days`` protocol days of the wind-down. The last day's queue
    business is spelled out so the scenario ends with requests in every open state: an hour after
    the last step two holders file requests, the depositor's daily run funds them (funded,
    awaiting their claim, before their claimableTime), and an hour later two more holders file
    (pending: the vault's liquidity covers them, they wait for the next run). The scenario then
    describes the chain as it is (now, stakers, minipools, prices)."""
    sc = net.scenario
    assert sc.wind_down is not None
    live = Live(net, seed=sc.wind_down.seed, wind_down_at=sc.wind_down.at)
    with live._mining():  # nobody else acts meanwhile: automine off once for all of it
        live.step(until=sc.wind_down.at)  # to the end of operations: the wind-down, then that day's business
        live.run(days=sc.wind_down.days, pace=0)
        end = live.now
        live.file_requests(2, end + 3600)
        live.depositor_run()
        live.file_requests(2, end + 2 * 3600)
    live._refresh_standins()
    sc.now = live.now
    sc.stakers = live.op.stakers()
    return live
