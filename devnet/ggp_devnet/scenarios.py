"""Deterministic devnet scenarios as plain data: who stakes what, which minipools exist, how
prices and the ggAVAX vault move over the history window, and the withdraw queue's requests in
every state at the scenario's ``now`` (QueuePlan).

Pure functions of the scenario name (a seeded RNG), so the same scenario always produces the same
chain. The seeder (seed.py) turns this data into transactions; the local stand-ins for third-party
APIs read the same data so their answers agree with the chain. A wound-down scenario (WindDown) is
this data up to the end of its operations; the live operator then plays its wind-down
(live.play_wind_down, as deterministic) and brings the data up to date from the chain.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace

from eth_utils import keccak, to_checksum_address

from publisher.protocol import MinipoolStatus

from .anvil import GENESIS_TIME

DAY = 86_400
WAD = 10**18
NAVAX = 10**9
RIALTO = to_checksum_address("0x" + keccak(text="devnet.rialto").hex()[-40:])
TREASURY = to_checksum_address("0x" + keccak(text="devnet.treasury").hex()[-40:])
PROVIDER_ARTIFACT = keccak(text="Artifact")

PRELAUNCH, LAUNCHED, STAKING, WITHDRAWABLE, FINISHED, CANCELED, ERROR = MinipoolStatus

# The withdraw queue's parameters. Mainnet's unstakeDelay comes from a deployment variable (not in
# the public sources); these are realistic picks. The per-deposit limit and the on-behalf minimum
# are the contract's own defaults (50, 0.01 ggAVAX); 3 days is the contract's minimum expiry.
# Scenarios start the queue with a 14-day delay and lower it to 7 days 12 days before `now`:
# requests keep the delay they were filed under, which is what lets a request filed before the
# change still be cancellable (fulfilled, before its claimableTime) while a later one, behind it in
# line, has already expired unserved.
QUEUE_UNSTAKE_DELAY = 7 * DAY
QUEUE_LAUNCH_UNSTAKE_DELAY = 14 * DAY
QUEUE_DELAY_LOWERED = 12 * DAY  # before now
QUEUE_MAX_EXPIRATION_DELAY = 30 * DAY
QUEUE_MIN_EXPIRATION_DELAY = 3 * DAY
QUEUE_MAX_PER_DEPOSIT = 50
QUEUE_MIN_ON_BEHALF = WAD // 100
QUEUE_SEEDED = 50  # seconds before now: the block the queue's history is written in
QUEUE_COVERED = 3  # pending requests at the front of the line the vault's liquidity covers at now
# The queue's closed history (Shape.queue_closed): requests filed, funded and closed in a few blocks
# ten minutes after the chain's first block, while the whole vault is liquid and a share is worth
# one AVAX. Fates by weight: claimed, cancelled while pending, cancelled once funded (before the
# claimable time), reclaimed once expired (filed with a past request time, so expired at once,
# then funded, then reclaimed). Their requesters: some of those with open requests at now, and as
# many as half that again who have only closed ones.
QUEUE_HISTORY_AFTER = 600
QUEUE_HISTORY_FATES = {"claimed": 60, "cancelled": 18, "cancelled-funded": 7, "reclaimed": 15}
QUEUE_HISTORY_PER_REQUESTER = 10  # requests per requester of the history, about

# The end of operations: the protocol announced that operations ended on 2026-08-15 (withdrawals
# stay open until 2026-12-31). From then on nobody updates the Oracle's GGP price or starts a GGP
# rewards cycle, no minipool is created, launched or cycled, ggAVAX stops syncing rewards, and the
# protocol's pauser sets these Storage flags ("contract.paused" + name): ggAVAX deposits
# (TokenggAVAX), minipool creation and cycling (MinipoolManager), GGP inflation and cycles
# (RewardsPool) and ClaimNodeOp (a flag no ClaimNodeOp function checks, on mainnet as here: it stops
# nothing by itself, and the forecasts do not read it). Staking stays open, so operators can take
# their GGP back, and the Oracle is not flagged: it keeps its last price, which is simply not
# updated any more. The withdraw queue stays open.
WIND_DOWN_AT = 1_786_752_000  # 2026-08-15T00:00:00Z
WIND_DOWN_PAUSED = ("TokenggAVAX", "MinipoolManager", "RewardsPool", "ClaimNodeOp")


@dataclass(frozen=True)
class Shape:
    stakers: int
    minipools: int
    days: int
    # share of minipools per status, in status order
    status_mix: tuple[int, ...]
    queue_open: int = 0  # open (pending or fulfilled) withdraw-queue requests at now
    queue_requesters: int = 0  # distinct requesters of those
    queue_closed: int = 0  # closed requests of the queue's history besides those (QUEUE_HISTORY_*)
    # A wound-down scenario: operations end at ``wound_down_at`` and the chain is then played
    # forward ``wound_down_days`` protocol days by the live operator in its wind-down (WindDown).
    wound_down_at: int | None = None
    wound_down_days: int = 0

    def resized(self, stakers: int, minipools: int | None = None) -> Shape:
        """The same scenario at another size: minipools (unless given), the status mix and the
        queue in proportion (the queue at least the demo's and at most twice its own), the
        history window unchanged."""
        if minipools is None:
            minipools = stakers * self.minipools // self.stakers
        if stakers < 2 or minipools < 0:
            raise ValueError(f"a scenario needs at least 2 stakers and no negative minipools, not {stakers} and {minipools}")
        whole = sum(self.status_mix)
        requests = min(max(40, self.queue_open * stakers // self.stakers), 2 * self.queue_open)
        requesters = min(max(25, self.queue_requesters * stakers // self.stakers), 2 * self.queue_requesters)
        closed = min(self.queue_closed * stakers // self.stakers, 2 * self.queue_closed)
        return replace(self, stakers=stakers, minipools=minipools, status_mix=tuple(n * minipools // whole for n in self.status_mix),
                       queue_open=requests, queue_requesters=requesters, queue_closed=closed)


SHAPES = {
    "demo": Shape(stakers=48, minipools=64, days=75, status_mix=(5, 5, 30, 6, 10, 4, 4), queue_open=40, queue_requesters=25),
    "scale": Shape(stakers=10_000, minipools=3_000, days=35, status_mix=(150, 150, 1800, 300, 450, 90, 60),
                   queue_open=5_000, queue_requesters=3_000, queue_closed=20_000),
    # Mainnet's order of size (a few hundred stakers; minipools counted over all history, most
    # of them Finished), rounded up: what the "Running against mainnet" figures are measured on.
    "mainnet-size": Shape(stakers=600, minipools=1_000, days=45, status_mix=(10, 10, 330, 40, 520, 60, 30),
                          queue_open=260, queue_requesters=160),
    # The demo's protocol up to the end of operations (2026-08-15), then 62 protocol days of its
    # wind-down: every minipool has ended and handed its AVAX back, the vault drains through the
    # queue, the Oracle's price is more than 60 days old, the GGP rewards cycle long overdue.
    "wound-down": Shape(stakers=48, minipools=64, days=75, status_mix=(5, 5, 30, 6, 10, 4, 4), queue_open=40, queue_requesters=25,
                        wound_down_at=WIND_DOWN_AT, wound_down_days=62),
}
# The live operator's RNG seed for the wound-down scenarios' wind-down.
WIND_DOWN_SEED = 2
# Named sizes: `scale` at the staker counts growth is measured at (benchmarks/bench_growth.py),
# minipools in proportion. `scale` itself is the 10 000.
SIZES = {"scale-1k": ("scale", 1_000), "scale-30k": ("scale", 30_000), "scale-100k": ("scale", 100_000)}


def names() -> list[str]:
    """Every scenario name the devnet accepts: the scenarios, then the named sizes, smallest first."""
    return [*SHAPES, *sorted(SIZES, key=lambda n: SIZES[n][1])]


def resolve(name: str, stakers: int | None = None, minipools: int | None = None) -> tuple[str, str, Shape]:
    """(name, RNG seed, shape) of scenario ``name`` resized to ``stakers``/``minipools`` (None
    keeps the scenario's own; minipools follow the stakers in proportion).

    The seed depends on the base scenario and the size only, so `scale --stakers 30000` and
    `scale-30k` are the same chain, and a base scenario at its own size is the chain it always was.
    """
    if name in SIZES:
        base, own = SIZES[name]
        stakers = own if stakers is None else stakers
    elif name in SHAPES:
        base = name
    else:
        raise ValueError(f"unknown scenario {name!r}; choose one of {', '.join(names())}")
    shape = SHAPES[base]
    if stakers is not None or minipools is not None:
        shape = shape.resized(shape.stakers if stakers is None else stakers, minipools)
    if shape == SHAPES[base]:
        return base, base, shape
    seed = f"{base}-{shape.stakers}x{shape.minipools}"
    named = [n for n, (b, count) in SIZES.items() if b == base and SHAPES[b].resized(count) == shape]
    return (named[0] if named else seed), seed, shape


@dataclass
class QueueRequest:
    """One withdraw-queue request as the scenario files it, and what has become of it at ``now``."""

    id: int
    requester: str
    shares: int  # ggAVAX wei; a pstAVAX request's shares are the token's to work out, filled in at seeding
    request_time: int
    unstake_delay: int  # the queue's delay in force when it was filed
    expiration_delay: int  # as asked; the queue raises anything under 3 days to 3 days
    via: str  # "seed" (filed for its requester by the seeding account), "direct" (requestUnstake), "pst", or
    # "history" (the closed history: filed by the seeding account, closed in the history's blocks)
    fate: str  # at now: "pending", "fulfilled", "claimed", "cancelled" or "reclaimed"
    served: bool = False  # fulfilled at some point (a closed request may have been, or not)
    pst_assets: int = 0  # pstAVAX burnt for it (via "pst")

    @property
    def claimable_time(self) -> int:
        return self.request_time + self.unstake_delay

    @property
    def expiration_time(self) -> int:
        return self.claimable_time + max(self.expiration_delay, QUEUE_MIN_EXPIRATION_DELAY)

    @property
    def closed(self) -> bool:
        return self.fate in ("claimed", "cancelled", "reclaimed")

    def state(self, t: int) -> str:
        """The request's state at time ``t`` (reference §5): "closed", "pending", "pending-expired",
        "cancellable" (fulfilled, t < claimableTime), "claimable" or "fulfilled-expired"."""
        if self.closed:
            return "closed"
        if self.fate == "pending":
            return "pending-expired" if t >= self.expiration_time else "pending"
        if t >= self.expiration_time:
            return "fulfilled-expired"
        return "cancellable" if t < self.claimable_time else "claimable"


@dataclass
class QueuePlan:
    """The withdraw queue at ``now``: its parameters, its history and every request, in id order.

    History, all written in one block at ``seeded_at`` (seed._seed_queue): the seeding account
    files the requests of before ``delay_lowered_at`` under ``launch_unstake_delay`` at their own
    past times (WithdrawQueue.seedRequests), their requesters cancel some and anyone reclaims
    some expired ones, the depositor serves the line (all of them), requesters claim or cancel
    some, the delay becomes ``unstake_delay``, the later requests are filed the same way and some
    are cancelled or reclaimed; last, holders file requests themselves, directly and through
    pstAVAX. Nothing serves the line after that: the vault's liquidity covers the first
    ``covered`` pending requests, and a large one behind them waits for minipools to end.
    """

    unstake_delay: int
    launch_unstake_delay: int
    delay_lowered_at: int
    max_expiration_delay: int
    max_per_deposit: int
    min_on_behalf: int
    seeded_at: int
    requests: list[QueueRequest]
    covered: int
    provided: int = 0  # ggAVAX the seeding account deposits at the start, for the "seed" and "history" requests
    pst_deposits: list[tuple[str, int]] = field(default_factory=list)  # (user, WAVAX put into pstAVAX)
    history_at: int = 0  # when the closed history is filed (its requests' "history" via)
    history_paid: int = 0  # AVAX its claims took out of the vault

    def history(self) -> list[QueueRequest]:
        return [r for r in self.requests if r.via == "history"]

    def open(self) -> list[QueueRequest]:
        return [r for r in self.requests if not r.closed]

    def states(self, t: int) -> dict[str, list[QueueRequest]]:
        out: dict[str, list[QueueRequest]] = {}
        for r in self.requests:
            out.setdefault(r.state(t), []).append(r)
        return out


@dataclass(frozen=True)
class WindDown:
    """The end of operations a scenario is played through after seeding (live.play_wind_down):
    at ``at`` the protocol winds down (WIND_DOWN_PAUSED), then the live operator runs ``days``
    protocol days of the wind-down with RNG ``seed``."""

    at: int
    days: int
    seed: int = WIND_DOWN_SEED
    paused: tuple[str, ...] = WIND_DOWN_PAUSED


@dataclass
class Scenario:
    name: str
    start: int  # first timeline block
    now: int  # timestamp of the final block
    stakers: list[dict]
    minipools: list[dict]  # final state, in index order
    prices: list[tuple[int, int, int]]  # (time, GGP price in AVAX wei, AVAX/USD with 8 decimals)
    deposits: list[tuple[str, int]]  # ggAVAX depositors at the start
    validator_rate: float  # the primary-network reward rate the history is generated with
    paused: dict[str, bool] = field(default_factory=dict)  # flags set at the start
    # The queue as seeded at the end of the history (for a wound-down scenario: before its wind-down).
    queue: QueuePlan | None = None
    wind_down: WindDown | None = None
    # GGP/AVAX on the market when it is not the Oracle's (after the end of operations the Oracle
    # keeps its last price while the market moves); None: the Oracle's. The price stand-in quotes
    # the Oracle's price unless asked for the market's (standins.Standins.ggp_quote).
    ggp_market: int | None = None

    @property
    def final_price(self) -> int:
        return self.prices[-1][1]

    def active_pools(self) -> list[dict]:
        return [m for m in self.minipools if m["status"] in (LAUNCHED, STAKING)]


def build(name: str, stakers: int | None = None, minipools: int | None = None) -> Scenario:
    """The scenario's data; the same base scenario and size always give the same data."""
    name, seed, shape = resolve(name, stakers, minipools)
    rng = random.Random(f"ggp-devnet-{seed}")
    if shape.wound_down_at:
        # Seeded up to 06:00 the day before operations end, the last daily prices four hours
        # earlier (the Oracle's last update); the wind-down is played after seeding.
        now = shape.wound_down_at - 18 * 3600
        start = now - (shape.days - 1) * DAY - 5 * 3600
    else:
        start = GENESIS_TIME + 3600
        now = GENESIS_TIME + shape.days * DAY + 6 * 3600
    prices = _prices(rng, start, shape.days)
    price = prices[-1][1]
    rate = 0.075
    owners = [_address(rng) for _ in range(shape.stakers)]
    pools = _minipools(rng, shape, owners, now, rate)
    rows = _stakers(rng, owners, pools, price, now)
    ls_total = sum(m["avaxLiquidStakerAmt"] for m in pools if m["status"] in (LAUNCHED, STAKING))
    # Most of the vault is out staking, as on mainnet, leaving the reserve and a little idle AVAX.
    target = ls_total * 115 // 100
    weights = [rng.uniform(1, 5) for _ in range(24)]
    holders = [_address(rng) for _ in weights]
    # The requests filed for their requesters by the seeding account come out of the vault too:
    # the seeding account's deposit at the start is part of the target.
    queue = _queue_plan(random.Random(f"ggp-devnet-queue-{seed}"), shape, now, target - ls_total)
    _closed_history(random.Random(f"ggp-devnet-queue-history-{seed}"), queue, shape.queue_closed, start + QUEUE_HISTORY_AFTER)
    # The history's claims take AVAX out of the vault: the holders' deposits make up for them.
    rest = target - queue.provided + queue.history_paid
    deposits = [(who, int(rest * w / sum(weights)) // WAD * WAD) for who, w in zip(holders, weights, strict=True)]
    _direct_requesters(queue, deposits)
    if shape.wound_down_at:
        # Nothing is paused while the protocol operates; the wind-down sets its flags.
        return Scenario(name, start, now, rows, pools, prices, deposits, rate, {}, queue,
                        WindDown(shape.wound_down_at, shape.wound_down_days))
    # A paused-flag example with no side effect on seeding (the devnet Oracle ignores the flag).
    paused = {"Oracle": True, "TokenggAVAX": False}
    return Scenario(name, start, now, rows, pools, prices, deposits, rate, paused, queue)


H = 3600


def _queue_plan(rng: random.Random, shape: Shape, now: int, idle: int) -> QueuePlan:
    """The queue's requests, sized against ``idle`` (the vault's AVAX not out staking): those
    served before now take about half of it, the first pending ones a tenth, and the one behind
    them more than all of it."""
    times = _QueueTimes(now, now - min(shape.days - 3, 45) * DAY, now - QUEUE_DELAY_LOWERED)
    d0, d1 = QUEUE_LAUNCH_UNSTAKE_DELAY, QUEUE_UNSTAKE_DELAY
    n = shape.queue_open or 40
    n_pst, n_direct = _share(n, 0.004, 3), _share(n, 0.002, 2)
    drafts = _drafts(rng, _kinds(n, n_pst, n_direct), times)

    # Sizes: what the depositor served before now is about half the idle AVAX, spread by weight.
    served = [d for d in drafts if d[3]]
    weights = {d[1]: math.exp(rng.uniform(-1, 1)) for d in drafts}
    served_total = idle * 55 // 100
    unit = served_total // len(served)
    total_w = sum(weights[d[1]] for d in served)

    def size(d: tuple) -> int:
        if d[5] == "covered":
            amount = int(idle * rng.uniform(0.015, 0.035))
        elif d[5] == "blocking":
            amount = idle * 5 // 4
        elif d[3]:
            amount = int(served_total * weights[d[1]] / total_w)
        else:
            amount = int(unit * weights[d[1]])
        return max(amount, WAD // 20) // 10**12 * 10**12

    open_seed = [d for d in drafts if d[2] in ("pending", "fulfilled")]
    pool = [_address(rng) for _ in range(max(1, shape.queue_requesters or 25) - n_pst * 2 // 3 - max(1, n_direct * 2 // 3))]
    owner = {}
    for i, d in enumerate(rng.sample(open_seed, len(open_seed))):
        owner[d[1]] = pool[i] if i < len(pool) else rng.choice(pool)
    requests: list[QueueRequest] = []
    for d in drafts:
        t, order, fate, was_served, delay, _ = d
        delay_then = d0 if t < times.lowered else d1
        requests.append(QueueRequest(len(requests), owner.get(order) or rng.choice(pool), size(d), t, delay_then, delay,
                                     "seed", fate, was_served))
    provided = sum(r.shares for r in requests)
    seeded_at = now - QUEUE_SEEDED
    pst_deposits = _holder_requests(rng, requests, unit, n_pst, n_direct, seeded_at)
    return QueuePlan(d1, d0, times.lowered, QUEUE_MAX_EXPIRATION_DELAY, QUEUE_MAX_PER_DEPOSIT, QUEUE_MIN_ON_BEHALF, seeded_at,
                     requests, QUEUE_COVERED, provided, pst_deposits)


def _share(n: int, fraction: float, low: int) -> int:
    """That fraction of a queue of ``n`` open requests, at least ``low``."""
    return max(low, round(n * fraction))


def _kinds(n: int, n_pst: int, n_direct: int) -> dict[str, tuple[int, str, bool, tuple[int, ...]]]:
    """The plan's kinds of request: kind -> (count, fate, served, expiration delays to pick from).
    Old requests (launch delay) were all served; later ones (7 days) wait."""
    kinds = {
        "fulfilled-expired": (_share(n, 0.04, 2), "fulfilled", True, (0, 3 * DAY, 5 * DAY, 7 * DAY)),
        "claimable": (_share(n, 0.08, 2), "fulfilled", True, (14 * DAY, 21 * DAY, 30 * DAY)),
        "cancellable": (_share(n, 0.06, 2), "fulfilled", True, (0, 7 * DAY, 30 * DAY)),
        "claimed": (_share(n, 0.02, 2), "claimed", True, (14 * DAY, 30 * DAY)),
        "cancelled-served": (_share(n, 0.005, 1), "cancelled", True, (7 * DAY, 30 * DAY)),
        "reclaimed-served": (_share(n, 0.005, 1), "reclaimed", True, (0, 3 * DAY)),
        "cancelled-old": (_share(n, 0.01, 1), "cancelled", False, (0, 7 * DAY, 30 * DAY)),
        "reclaimed-old": (_share(n, 0.005, 1), "reclaimed", False, (0, 3 * DAY)),
        "pending-expired": (_share(n, 0.05, 2), "pending", False, (0, 3 * DAY)),
        "cancelled-new": (_share(n, 0.01, 1), "cancelled", False, (7 * DAY, 14 * DAY)),
        "reclaimed-new": (_share(n, 0.005, 1), "reclaimed", False, (0, 3 * DAY)),
    }
    fixed = sum(c for c, fate, _, _ in kinds.values() if fate in ("pending", "fulfilled"))
    kinds["pending"] = (n - fixed - QUEUE_COVERED - 1 - n_pst - n_direct, "pending", False, (7 * DAY, 14 * DAY, 30 * DAY))
    if kinds["pending"][0] < 3:
        raise ValueError(f"a queue of {n} open requests is too small for every state")
    return kinds


@dataclass(frozen=True)
class _QueueTimes:
    """When a plan's requests may be filed: from ``first``, under the launch delay until
    ``lowered``, under the lower delay after it, up to ``now``."""

    now: int
    first: int
    lowered: int

    def window(self, kind: str, delay: int) -> tuple[int, int]:
        """The span a request of ``kind`` with that expiration delay is filed in, for its state at now."""
        now, first, lowered = self.now, self.first, self.lowered
        d0, d1 = QUEUE_LAUNCH_UNSTAKE_DELAY, QUEUE_UNSTAKE_DELAY
        old_end = lowered - 2 * H  # the old requests end before the delay is lowered
        if kind in ("fulfilled-expired", "reclaimed-served", "reclaimed-old"):
            # Its delay expired by now.
            return first, now - d0 - max(delay, QUEUE_MIN_EXPIRATION_DELAY) - 2 * H
        if kind == "claimable":  # claimable, not yet expired
            return max(first, now - d0 - delay + 2 * H), now - d0 - 2 * H
        if kind == "claimed":
            return max(first, now - d0 - delay + 2 * H), old_end
        if kind in ("cancellable", "cancelled-served"):  # before claimableTime
            return now - d0 + 2 * H, old_end
        if kind == "cancelled-old":
            return first, old_end
        if kind in ("pending-expired", "reclaimed-new"):
            return lowered + 8 * H, now - d1 - QUEUE_MIN_EXPIRATION_DELAY - 2 * H
        return lowered + 8 * H, now - 2 * H


def _drafts(rng: random.Random, kinds: dict, times: _QueueTimes) -> list[tuple[int, int, str, bool, int, str]]:
    """Every request of the plan as (time, order, fate, served, delay, kind), in time order."""
    drafts: list[tuple[int, int, str, bool, int, str]] = []
    for kind, (count, fate, was_served, delays) in kinds.items():
        for _ in range(count):
            delay = rng.choice(delays)
            lo, hi = times.window(kind, delay)
            drafts.append((rng.randrange(lo, hi), len(drafts), fate, was_served, delay, kind))
    # The front of today's line, in order: two closed requests (stale entries the depositor will
    # have to step over), the covered ones (one of them already expired), then the large one.
    lowered = times.lowered
    drafts.append((lowered + H // 3, len(drafts), "cancelled", False, 14 * DAY, "cancelled-new"))
    drafts.append((lowered + H // 2, len(drafts), "reclaimed", False, 0, "reclaimed-new"))
    for i, delay in enumerate((0, 14 * DAY, 3 * DAY)[:QUEUE_COVERED]):
        drafts.append((lowered + (i + 1) * H, len(drafts), "pending", False, delay, "covered"))
    drafts.append((lowered + 7 * H, len(drafts), "pending", False, 30 * DAY, "blocking"))
    drafts.sort()
    return drafts


def _holder_requests(rng: random.Random, requests: list[QueueRequest], unit: int, n_pst: int, n_direct: int,
                     seeded_at: int) -> list[tuple[str, int]]:
    """Holders filing for themselves in the seeding block, added to ``requests``: directly (ggAVAX
    holders) and through pstAVAX (new holders putting WAVAX in first; some keep part of it, some
    file twice). The pstAVAX holders' deposits."""
    users = [_address(rng) for _ in range(max(2, n_pst * 2 // 3))]
    pst_left = {u: 0 for u in users}
    late = [("pst", users[i % len(users)]) for i in range(n_pst)] + [("direct", "") for _ in range(n_direct)]
    rng.shuffle(late)
    for via, user in late:
        amount = max(int(unit * math.exp(rng.uniform(-1, 1))), WAD // 10) // 10**12 * 10**12
        delay = rng.choice((0, 7 * DAY, 14 * DAY, 30 * DAY))
        if via == "pst":
            pst_left[user] += amount
            requests.append(QueueRequest(len(requests), user, 0, seeded_at, QUEUE_UNSTAKE_DELAY, delay, "pst", "pending",
                                         pst_assets=amount))
        else:
            requests.append(QueueRequest(len(requests), "", amount, seeded_at, QUEUE_UNSTAKE_DELAY, delay, "direct", "pending"))
    return [(u, amount * (3 if i % 2 else 2) // 2) for i, (u, amount) in enumerate(pst_left.items())]


def _closed_history(rng: random.Random, q: QueuePlan, n: int, at: int) -> None:
    """``n`` closed requests filed before every other (ids 0 … n-1, the plan's own after them) at
    ``at``, the reclaimed ones at a time long enough before it to be expired (so their ids come
    first). One fate per requester (its requests close together: cancelRequests is per requester).
    Sizes 0.01-0.5 ggAVAX: a share is worth one AVAX then, so each is paid its shares."""
    if not n:
        return
    own = sorted({r.requester for r in q.requests if r.via == "seed" and not r.closed})
    count = max(1, n // QUEUE_HISTORY_PER_REQUESTER)
    people = rng.sample(own, min(len(own), count * 2 // 3))
    people += [_address(rng) for _ in range(count - len(people))]
    fates = list(QUEUE_HISTORY_FATES)
    fate_of = {who: rng.choices(fates, weights=[QUEUE_HISTORY_FATES[f] for f in fates])[0] for who in people}
    expired_at = at - (QUEUE_UNSTAKE_DELAY + QUEUE_MIN_EXPIRATION_DELAY + H)
    drafts = []
    for _ in range(n):
        who = rng.choice(people)
        fate = fate_of[who]
        drafts.append((expired_at if fate == "reclaimed" else at, who, fate, rng.randrange(10**16, 5 * 10**17) // 10**12 * 10**12))
    drafts.sort(key=lambda d: d[0])  # filed in time order: ids follow
    history = [QueueRequest(i, who, shares, t, QUEUE_UNSTAKE_DELAY, 0, "history", fate.removesuffix("-funded"),
                            fate != "cancelled") for i, (t, who, fate, shares) in enumerate(drafts)]
    for r in q.requests:
        r.id += n
    q.requests[:0] = history
    q.provided += sum(r.shares for r in history)
    q.history_at = at
    q.history_paid = sum(r.shares for r in history if r.fate == "claimed")


def _direct_requesters(queue: QueuePlan, deposits: list[tuple[str, int]]) -> None:
    """Direct requests come from the largest ggAVAX holders (two requests for some)."""
    direct = [r for r in queue.requests if r.via == "direct"]
    holders = sorted(deposits, key=lambda d: -d[1])[: max(1, len(direct) * 2 // 3)]
    for i, r in enumerate(direct):
        r.requester = holders[i % len(holders)][0]


def _address(rng: random.Random) -> str:
    # EIP-55 as eth_utils' to_checksum_address writes it, without its per-call validation,
    # which dominated generating the large sizes.
    raw = rng.randbytes(20).hex()
    digest = keccak(raw.encode()).hex()
    return "0x" + "".join(c.upper() if d in "89abcdef" else c for c, d in zip(raw, digest[:40], strict=True))


def _prices(rng: random.Random, start: int, days: int) -> list[tuple[int, int, int]]:
    ggp, avax = 0.0300, 24.0
    out = []
    for d in range(days):
        ggp *= 1 + rng.uniform(-0.03, 0.031)
        avax *= 1 + rng.uniform(-0.04, 0.041)
        out.append((start + d * DAY + 3600, int(ggp * 1e6) * 10**12, int(avax * 1e4) * 10**4))
    return out


def _minipools(rng, shape: Shape, owners: list[str], now: int, rate: float) -> list[dict]:
    statuses = [s for s, n in enumerate(shape.status_mix) for _ in range(n)]
    statuses += [STAKING] * (shape.minipools - len(statuses))
    rng.shuffle(statuses)
    # Stakers 0..k-1 of each block of 12 hold no minipool (GGP only); the rest own pools.
    pool_owners = [o for i, o in enumerate(owners) if i % 12 not in (0,)]
    pools = []
    for i, status in enumerate(statuses[: shape.minipools]):
        owner = pool_owners[i % len(pool_owners)] if i < len(pool_owners) else rng.choice(pool_owners)
        pools.append(_minipool(rng, i, status, owner, now, rate))
    return pools


def _minipool(rng, index: int, status: int, owner: str, now: int, rate: float) -> dict:
    duration = rng.choice((15, 15, 30, 90, 180, 365)) * DAY
    node_op = 1000 * WAD + (rng.randrange(0, 40) * WAD if rng.random() < 0.2 else 0)
    created = now - rng.randrange(2, 60) * DAY - rng.randrange(DAY)
    pool = {
        "index": index, "nodeID": _address(rng), "status": status, "duration": duration,
        "delegationFee": 20_000, "owner": owner, "multisigAddr": RIALTO,
        "avaxNodeOpAmt": node_op, "avaxNodeOpInitialAmt": 1000 * WAD, "avaxLiquidStakerAmt": node_op,
        "blsPubkeyAndSig": rng.randbytes(144), "txID": b"\0" * 32, "creationTime": created,
        "initialStartTime": 0, "startTime": 0, "endTime": 0, "avaxTotalRewardAmt": 0,
        "errorCode": b"\0" * 32, "ggpSlashAmt": 0, "avaxNodeOpRewardAmt": 0,
        "avaxLiquidStakerRewardAmt": 0,
        "hardwareProvider": PROVIDER_ARTIFACT if rng.random() < 0.35 else b"\0" * 32,
    }
    cycle = min(duration, 15 * DAY)
    if status == PRELAUNCH:
        pool["creationTime"] = now - rng.randrange(3600, 2 * DAY)
    elif status == LAUNCHED:
        pool["creationTime"] = now - rng.randrange(3 * 3600, 3 * DAY)
    elif status == CANCELED:
        pool["avaxLiquidStakerAmt"] = 0
    elif status == ERROR:
        pool["errorCode"] = b"EC1".ljust(32, b"\0")
        pool["initialStartTime"] = pool["startTime"] = created + 3600
    else:
        # Staking pools started inside their current cycle; ended ones finished in the past.
        if status == STAKING:
            start = now - rng.randrange(3600, cycle - 3600)
        elif status == WITHDRAWABLE:
            start = now - cycle - rng.randrange(3600, 3 * DAY)
        else:
            start = now - cycle - rng.randrange(4 * DAY, 40 * DAY)
        pool["creationTime"] = min(created, start - 3600)
        pool["initialStartTime"] = pool["startTime"] = start
        pool["endTime"] = start + cycle
        pool["txID"] = rng.randbytes(32)
        if status in (WITHDRAWABLE, FINISHED):
            staked = pool["avaxNodeOpAmt"] + pool["avaxLiquidStakerAmt"]
            r = rate * rng.uniform(0.93, 1.05)
            total = int(staked * r * cycle / (365 * DAY)) // 10**9 * 10**9
            if rng.random() < 0.08:  # poor uptime: no reward, GGP slashed
                total = 0
                pool["ggpSlashAmt"] = rng.randrange(100, 400) * WAD
            pool["avaxTotalRewardAmt"] = total
            pool["avaxNodeOpRewardAmt"] = total - total // 2
            pool["avaxLiquidStakerRewardAmt"] = total // 2
    return pool


def _stakers(rng, owners: list[str], pools: list[dict], price: int, now: int) -> list[dict]:
    by_owner: dict[str, list[dict]] = {}
    for m in pools:
        by_owner.setdefault(m["owner"], []).append(m)
    stakers = []
    for i, addr in enumerate(owners):
        mine = by_owner.get(addr, [])
        assigned = sum(m["avaxLiquidStakerAmt"] for m in mine if m["status"] in (PRELAUNCH, LAUNCHED, STAKING))
        validating = sum(m["avaxLiquidStakerAmt"] for m in mine if m["status"] == STAKING)
        ended = sum(m["avaxLiquidStakerAmt"] for m in mine if m["status"] == WITHDRAWABLE)
        staked = sum(m["avaxNodeOpAmt"] for m in mine if m["status"] not in (FINISHED, CANCELED))
        kind = i % 12
        # Collateralization targets spread over the interesting ranges.
        if not assigned:
            ggp = rng.randrange(100, 20_000) * WAD
        elif kind == 1:
            ggp = 0
        elif kind in (2, 3):
            ggp = _ggp_for(assigned, rng.uniform(0.02, 0.095), price)
        elif kind in (4, 5):
            ggp = _ggp_for(assigned, rng.uniform(1.6, 3.0), price)
        else:
            ggp = _ggp_for(assigned, rng.uniform(0.10, 1.50), price)
        active = [m["creationTime"] for m in mine if m["status"] in (PRELAUNCH, LAUNCHED, STAKING, WITHDRAWABLE)]
        start = min(active) if active else 0
        if start and kind in (6, 7):  # joined recently: not yet eligible
            start = now - rng.randrange(DAY, 12 * DAY)
        stakers.append({
            "stakerAddr": addr, "avaxAssigned": assigned, "avaxStaked": staked,
            "avaxValidating": validating, "avaxValidatingHighWater": validating + ended,
            "ggpRewards": rng.randrange(0, 800) * WAD if start and rng.random() < 0.5 else 0,
            "ggpStaked": ggp, "lastRewardsCycleCompleted": 2 if start and start < now - 30 * DAY else 0,
            "rewardsStartTime": start,
            "ggpLockedUntil": now + 180 * DAY if kind == 11 else 0,
        })
    return stakers


def _ggp_for(avax: int, ratio: float, price: int) -> int:
    return int(avax * ratio) // price * WAD // 10**6 * 10**6
