"""The withdrawal queue's line served against the vault's books: the part of the funding schedule
that both the build (compute/queue.py) and the estimate function (function/handler.py) run, so an
estimate before a request and the schedule after it cannot disagree.

Standard library only and no package imports: the function's zip ships this file beside its
handler, as it ships the rewards formula.

The depositor serves at given times (the block after the build block, each minipool end, the
reward stream's end), each after the vault's staking assets move by that time's delta (a return
lowers them, a restake raises them again). A serve is calls of at most ``limit`` steps: a closed id
still in the line is dropped for a step; a pending request is redeemed at the share price of that
block when the liquidity covers its expected AVAX, the call stopping at the first one it does not
cover; a redemption worth less than expected, or more than the liquidity left (the queue's checked
subtraction), fails the whole call. Another call follows while the last one used all its steps.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Books:
    """TokenggAVAX's books as the contract keeps them, moved by the serves."""

    released: int  # totalReleasedAssets
    rewards: int  # lastRewardsAmt, streamed from last_sync to cycle_end
    last_sync: int
    cycle_end: int
    supply: int  # totalSupply
    staking: int  # stakingTotalAssets

    def total_assets(self, t: int) -> int:
        if t >= self.cycle_end or self.cycle_end <= self.last_sync:
            return self.released + self.rewards
        return self.released + self.rewards * (t - self.last_sync) // (self.cycle_end - self.last_sync)

    def liquidity(self, t: int) -> int:
        """What the queue can pay from at time ``t``: totalAssets − stakingTotalAssets, floored at 0."""
        return max(0, self.total_assets(t) - self.staking)

    def to_assets(self, shares: int, t: int) -> int:
        """convertToAssets (and redeemAVAX) at time ``t``, rounded down."""
        return shares if self.supply == 0 else shares * self.total_assets(t) // self.supply

    def to_shares(self, assets: int, t: int) -> int:
        """convertToShares at time ``t``, rounded down."""
        total = self.total_assets(t)
        return assets if self.supply == 0 or total == 0 else assets * self.supply // total


@dataclass(frozen=True)
class Entry:
    """One id in the queue's private line: a pending request, or a closed id (``shares`` None)."""

    id: int
    shares: int | None
    expected: int = 0


@dataclass
class Served:
    funded: dict[int, tuple[int, int, int]] = field(default_factory=dict)  # id -> (time, serve no., call no.)
    reverted: int = 0  # calls that would fail whole
    serves: int = 0


def serve_line(books: Books, entries: list[Entry], limit: int, serves: list[tuple[int, int]]) -> Served:
    """Serve ``entries`` (the line from its front, in order) at each ``(time, staking delta)`` of
    ``serves``, in order; ``books`` is moved as the contracts move it."""
    out = Served()
    at = 0
    pending_left = sum(1 for e in entries if e.shares is not None)
    for t, delta in serves:
        books.staking += delta
        out.serves += 1
        calls = 0
        while pending_left:
            calls += 1
            liquid = books.liquidity(t)
            saved = (at, books.released, books.supply)
            done: list[int] = []
            steps = 0
            failed = False
            while steps < limit and pending_left > len(done):  # the contract stops once none is pending
                e = entries[at]
                if e.shares is not None:
                    if liquid < e.expected:
                        break  # InsufficientLiquidity: the call ends, what it funded stays
                    paid = books.to_assets(e.shares, t)
                    if paid < e.expected or paid > liquid:
                        failed = True
                        break
                    books.released -= paid
                    books.supply -= e.shares
                    liquid -= paid
                    done.append(e.id)
                at += 1  # funded, or a closed id dropped: either way one step
                steps += 1
            if failed:
                at, books.released, books.supply = saved
                out.reverted += 1
                break
            for i in done:
                out.funded[i] = (t, out.serves, calls)
            pending_left -= len(done)
            if steps < limit:  # stopped by the liquidity, or the line is served
                break
    return out
