"""Deterministic devnet scenarios as plain data: who stakes what, which minipools exist, and how
prices and the ggAVAX vault move over the history window.

Pure functions of the scenario name (a seeded RNG), so the same scenario always produces the same
chain. The seeder (seed.py) turns this data into transactions; the local stand-ins for third-party
APIs read the same data so their answers agree with the chain.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from eth_utils import keccak, to_checksum_address

from ..protocol import MinipoolStatus
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
QUEUE_UNSTAKE_DELAY = 7 * DAY
QUEUE_MAX_EXPIRATION_DELAY = 30 * DAY
QUEUE_MIN_EXPIRATION_DELAY = 3 * DAY
QUEUE_MAX_PER_DEPOSIT = 50
QUEUE_MIN_ON_BEHALF = WAD // 100


@dataclass(frozen=True)
class Shape:
    stakers: int
    minipools: int
    days: int
    # share of minipools per status, in status order
    status_mix: tuple[int, ...]

    def resized(self, stakers: int, minipools: int | None = None) -> Shape:
        """The same scenario at another size: minipools (unless given) and the status mix in
        proportion, the history window unchanged."""
        if minipools is None:
            minipools = stakers * self.minipools // self.stakers
        if stakers < 2 or minipools < 0:
            raise ValueError(f"a scenario needs at least 2 stakers and no negative minipools, not {stakers} and {minipools}")
        whole = sum(self.status_mix)
        return Shape(stakers, minipools, self.days, tuple(n * minipools // whole for n in self.status_mix))


SHAPES = {
    "demo": Shape(stakers=48, minipools=64, days=75, status_mix=(5, 5, 30, 6, 10, 4, 4)),
    "scale": Shape(stakers=10_000, minipools=3_000, days=35, status_mix=(150, 150, 1800, 300, 450, 90, 60)),
    # Mainnet's order of size (a few hundred stakers; minipools counted over all history, most
    # of them Finished), rounded up: what the "Running against mainnet" figures are measured on.
    "mainnet-size": Shape(stakers=600, minipools=1_000, days=45, status_mix=(10, 10, 330, 40, 520, 60, 30)),
}
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
    via: str  # "direct" (requestUnstake), "pst" (pstAVAX withdrawViaQueue, on behalf)
    fate: str  # at now: "pending", "fulfilled", "claimed", "cancelled" or "reclaimed"
    served: bool = False  # fulfilled at some point (a closed request may have been, or not)
    pst_assets: int = 0  # pstAVAX burnt for it (via "pst")

    @property
    def claimable_time(self) -> int:
        return self.request_time + self.unstake_delay

    @property
    def expiration_time(self) -> int:
        return self.claimable_time + max(self.expiration_delay, QUEUE_MIN_EXPIRATION_DELAY)

    def state(self, t: int) -> str:
        """The request's state at time ``t`` (reference §5): "closed", "pending", "pending-expired",
        "cancellable" (fulfilled, t < claimableTime), "claimable" or "fulfilled-expired"."""
        if self.fate in ("claimed", "cancelled", "reclaimed"):
            return "closed"
        if self.fate == "pending":
            return "pending-expired" if t >= self.expiration_time else "pending"
        if t >= self.expiration_time:
            return "fulfilled-expired"
        return "cancellable" if t < self.claimable_time else "claimable"


@dataclass
class QueuePlan:
    """The withdraw queue at ``now``: its parameters and every request ever filed, in id order."""

    unstake_delay: int
    max_expiration_delay: int
    max_per_deposit: int
    min_on_behalf: int
    requests: list[QueueRequest]
    covered: int  # pending requests at the front of the line that the vault's liquidity covers at now
    pst_deposits: list[tuple[str, int]] = field(default_factory=list)  # (user, WAVAX put into pstAVAX)

    def open(self) -> list[QueueRequest]:
        return [r for r in self.requests if r.fate in ("pending", "fulfilled")]


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
    paused: dict[str, bool] = field(default_factory=dict)
    queue: QueuePlan | None = None

    @property
    def final_price(self) -> int:
        return self.prices[-1][1]

    def active_pools(self) -> list[dict]:
        return [m for m in self.minipools if m["status"] in (LAUNCHED, STAKING)]


def build(name: str, stakers: int | None = None, minipools: int | None = None) -> Scenario:
    """The scenario's data; the same base scenario and size always give the same data."""
    name, seed, shape = resolve(name, stakers, minipools)
    rng = random.Random(f"ggp-devnet-{seed}")
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
    deposits = [(_address(rng), int(target * w / sum(weights)) // WAD * WAD) for w in weights]
    # A paused-flag example with no side effect on seeding (the devnet Oracle ignores the flag).
    paused = {"Oracle": True, "TokenggAVAX": False}
    queue = _queue_plan(random.Random(f"ggp-devnet-queue-{seed}"), deposits, now, target - ls_total)
    return Scenario(name, start, now, rows, pools, prices, deposits, rate, paused, queue)


def _queue_plan(rng: random.Random, deposits: list[tuple[str, int]], now: int, idle: int) -> QueuePlan:
    """A few holders' requests filed just before now: the depositor served the first two, the
    others wait for its next call (the vault's idle AVAX, ``idle``, covers them)."""
    t = now - 50
    sizes = [idle // 40, idle // 60, idle // 30, idle // 50]
    reqs = [QueueRequest(i, deposits[i][0], size // NAVAX * NAVAX, t, QUEUE_UNSTAKE_DELAY, 14 * DAY, "direct",
                         "fulfilled" if i < 2 else "pending", served=i < 2)
            for i, size in enumerate(sizes)]
    user = _address(rng)
    reqs.append(QueueRequest(len(reqs), user, 0, t, QUEUE_UNSTAKE_DELAY, 0, "pst", "pending", pst_assets=idle // 80 // NAVAX * NAVAX))
    return QueuePlan(QUEUE_UNSTAKE_DELAY, QUEUE_MAX_EXPIRATION_DELAY, QUEUE_MAX_PER_DEPOSIT, QUEUE_MIN_ON_BEHALF, reqs,
                     covered=3, pst_deposits=[(user, idle // 40 // NAVAX * NAVAX)])


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
