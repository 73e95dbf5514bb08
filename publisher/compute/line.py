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
cover; a redemption worth nothing, less than expected, more than the liquidity left (the queue's
checked subtraction), or more than the vault's released assets (the vault's checked subtraction: the
reward stream's AVAX is liquidity, but released only when synced) fails the whole call. Another
call follows while the last one used all its steps.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise


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

    def shares_for(self, assets: int, t: int) -> int:
        """previewWithdraw at time ``t``: the fewest shares worth at least ``assets`` (rounded up)."""
        total = self.total_assets(t)
        return assets if self.supply == 0 or total == 0 else -(-assets * self.supply // total)


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
    blocked: int | None = None  # the id where the last call that failed whole stopped, unless funded later


def serve_line(books: Books, entries: list[Entry], limit: int, serves: list[tuple[int, int]], *,
               trace: list | None = None, done_serves: int = 0) -> Served:
    """Serve ``entries`` (the line from its front, in order) at each ``(time, staking delta)`` of
    ``serves``, in order; ``books`` is moved as the contracts move it. ``trace`` receives, at the
    start of each serve, where the line stands and the books then (a later run resumes there);
    ``done_serves``: serves already made before ``serves`` (they number on from it)."""
    out = Served(serves=done_serves)
    at = 0
    pending_left = sum(1 for e in entries if e.shares is not None)
    for t, delta in serves:
        if not pending_left:
            break  # every request funded: later serves change nothing of it
        if trace is not None:
            trace.append((at, books.released, books.supply, books.staking))
        books.staking += delta
        out.serves += 1
        calls = 0
        while pending_left:
            calls += 1
            call = _call(books, entries, at, limit, t, pending_left)
            if isinstance(call, int):  # the call fails whole at that request
                out.reverted += 1
                out.blocked = call
                break
            at, done, steps = call
            for i in done:
                out.funded[i] = (t, out.serves, calls)
            pending_left -= len(done)
            if steps < limit or not steps:  # stopped by the liquidity, the line served, or a limit of 0
                break
    if out.blocked in out.funded:
        out.blocked = None  # a later serve got past it
    return out


def _call(books: Books, entries: list[Entry], at: int, limit: int, t: int,
          pending: int) -> tuple[int, list[int], int] | int:
    """One depositor call at time ``t`` from line position ``at``, ``pending`` requests left in
    the line: the position after it, the ids it funded and the steps it took; the id of the request
    it fails at when it fails whole (``books`` then as before it)."""
    liquid = books.liquidity(t)
    saved = (books.released, books.supply)
    done: list[int] = []
    steps = 0
    while steps < limit and pending > len(done):  # the contract stops once none is pending
        e = entries[at]
        if e.shares is not None:
            if liquid < e.expected:
                break  # InsufficientLiquidity: the call ends, what it funded stays
            paid = books.to_assets(e.shares, t)
            # redeemAVAX reverts on 0 AVAX (ZeroAssets) as on a short redemption, and the call with it;
            # so does its checked `totalReleasedAssets -= assets` when the call's redemptions pass the
            # released assets: the stream's rewards count in the liquidity, but join them only when synced.
            if paid == 0 or paid < e.expected or paid > liquid or paid > books.released:
                books.released, books.supply = saved
                return e.id
            books.released -= paid
            books.supply -= e.shares
            liquid -= paid
            done.append(e.id)
        at += 1  # funded, or a closed id dropped: either way one step
        steps += 1
    return at, done, steps


# ---- the estimate before a request ---------------------------------------------------------------

PARAMS_FORMAT = 1
QUERY_LIMIT = 1_000_000_000  # whole tokens an estimate may ask for: more ggAVAX or AVAX than ever existed
MIN_EXPIRATION_DELAY = 3 * 86_400  # the queue raises a shorter expiration delay to this


class ParamsError(ValueError):
    """The published document is not one this code can read."""


@dataclass(frozen=True)
class Params:
    """Everything an estimate needs, as /withdrawals/params publishes it (``document``)."""

    block_number: int
    block_hash: str
    block_time: int
    books: tuple[int, int, int, int, int, int]  # Books' fields, in order
    limit: int | None  # maxRequestsPerDeposit (None: no limit read)
    entries: tuple[Entry, ...]  # the line from its front to the last id issued
    serves: tuple[tuple[int, int], ...]
    next_request_id: int
    pending_count: int
    pending_avax: int
    unstake_delay: int
    max_expiration_delay: int
    queue_paused: bool | None
    deposits_paused: bool
    window_end: int | None  # the announced end of the withdrawal window
    stale_reason: str | None  # the depositor looks stale
    assumptions: tuple[str, ...]


def document(p: Params) -> dict:
    """The published form: exact integers as decimal strings."""
    return {
        "format": PARAMS_FORMAT,
        "block": {"number": p.block_number, "hash": p.block_hash, "timestamp": p.block_time},
        "books": dict(zip(("released", "rewards", "lastSync", "cycleEnd", "supply", "staking"),
                          (str(v) for v in p.books), strict=True)),
        "maxRequestsPerDeposit": p.limit,
        "line": [[e.id, None, None] if e.shares is None else [e.id, str(e.shares), str(e.expected)] for e in p.entries],
        "serves": [[t, str(d)] for t, d in p.serves],
        "nextRequestId": p.next_request_id,
        "pendingCount": p.pending_count,
        "pendingAvaxWei": str(p.pending_avax),
        "unstakeDelay": p.unstake_delay,
        "maxExpirationDelay": p.max_expiration_delay,
        "minExpirationDelay": MIN_EXPIRATION_DELAY,
        "queuePaused": p.queue_paused,
        "depositsPaused": p.deposits_paused,
        "windowEnd": p.window_end,
        "depositorStaleReason": p.stale_reason,
        "assumptions": list(p.assumptions),
    }


def parse_params(doc) -> Params:
    """A Params from the published document, every value checked: a ParamsError names the first
    field that is not what this code wrote."""
    def need(cond: bool, what: str) -> None:
        if not cond:
            raise ParamsError(what)

    def wei(v, what: str, signed: bool = False) -> int:
        need(isinstance(v, str) and 0 < len(v) <= 80 and (v.lstrip("-") if signed else v).isdigit()
             and v.isascii(), f"{what} is not a decimal string")
        return int(v)

    def count(v, what: str) -> int:
        need(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64, f"{what} is not a count")
        return v

    need(isinstance(doc, dict) and doc.get("format") == PARAMS_FORMAT, f"not a format-{PARAMS_FORMAT} queue params document")
    block, books, line = doc.get("block"), doc.get("books"), doc.get("line")
    need(isinstance(block, dict) and isinstance(block.get("hash"), str), "block is missing")
    need(isinstance(books, dict), "books are missing")
    need(isinstance(line, list) and isinstance(doc.get("serves"), list), "line or serves are missing")
    entries = []
    for row in line:
        need(isinstance(row, list) and len(row) == 3, "a line entry is not [id, shares, expected]")
        if row[1] is None:
            entries.append(Entry(count(row[0], "a line id"), None))
        else:
            entries.append(Entry(count(row[0], "a line id"), wei(row[1], "a line entry's shares"), wei(row[2], "a line entry's expected AVAX")))
    need(all(a.id < b.id for a, b in pairwise(entries)), "line ids are not in order")
    serves = []
    for row in doc["serves"]:
        need(isinstance(row, list) and len(row) == 2, "a serve is not [time, delta]")
        serves.append((count(row[0], "a serve time"), wei(row[1], "a serve's staking delta", signed=True)))
    need(all(a[0] <= b[0] for a, b in pairwise(serves)), "serves are not in time order")
    limit = doc.get("maxRequestsPerDeposit")
    window = doc.get("windowEnd")
    stale = doc.get("depositorStaleReason")
    assumptions = doc.get("assumptions")
    need(isinstance(assumptions, list) and all(isinstance(a, str) for a in assumptions), "assumptions are missing")
    need(stale is None or isinstance(stale, str), "depositorStaleReason is not text")
    need(doc.get("queuePaused") in (None, True, False) and doc.get("depositsPaused") in (True, False), "pause flags are missing")
    keys = ("released", "rewards", "lastSync", "cycleEnd", "supply", "staking")
    return Params(
        count(block.get("number"), "block.number"), block["hash"], count(block.get("timestamp"), "block.timestamp"),
        tuple(wei(books.get(k), f"books.{k}") for k in keys),  # type: ignore[arg-type]
        None if limit is None else count(limit, "maxRequestsPerDeposit"),
        tuple(entries), tuple(serves), count(doc.get("nextRequestId"), "nextRequestId"),
        count(doc.get("pendingCount"), "pendingCount"), wei(doc.get("pendingAvaxWei"), "pendingAvaxWei"),
        count(doc.get("unstakeDelay"), "unstakeDelay"), count(doc.get("maxExpirationDelay"), "maxExpirationDelay"),
        doc["queuePaused"], doc["depositsPaused"], None if window is None else count(window, "windowEnd"),
        stale, tuple(assumptions))


@dataclass(frozen=True)
class Resume:
    """Where a request at the back of the line first matters: the start of the serve that funds
    the line's last pending request (before it, the line never reached the back)."""

    serve: int  # index in Params.serves
    at: int  # entries of the line consumed before it
    books: tuple[int, int, int, int, int, int]


def resume_point(p: Params) -> Resume:
    """Serve the line as it stands once: where a request at its back first matters (``serve`` -1
    when the line's last pending request is never funded: a request behind it is not either)."""
    b = Books(*p.books)
    trace: list = []
    served = serve_line(b, list(p.entries), len(p.entries) if p.limit is None else p.limit, list(p.serves), trace=trace)
    pending = [e.id for e in p.entries if e.shares is not None]
    if not pending:  # the contract stops once none is pending: closed ids at the front stay, each a step
        return Resume(0, 0, p.books)
    last = served.funded.get(pending[-1])
    if last is None:
        return Resume(-1, 0, p.books)
    at, released, supply, staking = trace[last[1] - 1]
    rewards, last_sync, cycle_end = p.books[1], p.books[2], p.books[3]
    return Resume(last[1] - 1, at, (released, rewards, last_sync, cycle_end, supply, staking))


def estimate(p: Params, *, shares: int | None = None, avax: int | None = None,
             expiration_delay: int | None = None, resume: Resume | None = None) -> dict:
    """A request for ``shares`` ggAVAX (or the shares ``avax`` buys) filed at the params' block and
    placed at the back of the line: what it would be paid, where it would stand, and when the
    depositor would fund it, served by the same code as the build's schedule. Amounts are wei."""
    t0 = p.block_time
    b = Books(*p.books)
    if shares is None:
        shares = b.shares_for(avax or 0, t0)  # an amount of AVAX to receive: at least that much
    expected = b.to_assets(shares, t0)
    # What a holder can file at most: the supply but for the shares the queue holds for the line.
    held = b.supply - sum(e.shares for e in p.entries if e.shares is not None)
    delay = max(MIN_EXPIRATION_DELAY, expiration_delay or 0)
    claimable = t0 + p.unstake_delay
    expires = claimable + delay
    new = Entry(p.next_request_id, shares, expected)
    # The queue would not take it (requestUnstake reverts while the queue is paused): nothing to fund.
    refused = shares == 0 or shares > held or delay > p.max_expiration_delay or p.queue_paused is True
    served = Served() if refused else _serve_new(p, b, new, resume)
    when, serve, call = served.funded.get(p.next_request_id, (None, None, None))
    now_fundable = serve == 1
    # A later serve in the block after the params' is an overdue end's, which no one can date (the schedule's rule).
    overdue = when is not None and not now_fundable and when <= t0 + 1
    if overdue:
        when = None
    caveats = _state_caveats(p, expires) + _request_caveats(p, shares, expected, delay, held, when, expires, overdue,
                                                            refused, None if when is not None else served.blocked,
                                                            undated=now_fundable or p.stale_reason is not None)
    return {
        "sharesWei": str(shares), "expectedAvaxWei": str(expected),
        "position": p.pending_count + 1, "aheadAvaxWei": str(p.pending_avax),
        "refused": refused, "fundableNow": now_fundable, "depositorCalls": call if now_fundable else None,
        "estimatedFundingTime": None if when is None or now_fundable else when, "awaitsOverdueReturns": overdue,
        "requestTime": t0, "claimableTime": claimable, "expirationDelay": delay, "expirationTime": expires,
        "expiresBeforeFunding": when is not None and when >= expires,
        "caveats": caveats,
    }


def _serve_new(p: Params, b: Books, new: Entry, resume: Resume | None) -> Served:
    """The line with ``new`` at its back, served from the front, or from ``resume``."""
    limit = len(p.entries) + 1 if p.limit is None else p.limit
    if resume is None:  # the whole line, from the front
        return serve_line(b, [*p.entries, new], limit, list(p.serves))
    if resume.serve < 0:
        return Served()  # the line ahead is never served: neither is the new request
    # From the serve where the line first reaches the back: the same answer, sooner.
    return serve_line(Books(*resume.books), [*p.entries[resume.at:], new], limit, list(p.serves[resume.serve:]),
                      done_serves=resume.serve)


def _state_caveats(p: Params, expires: int) -> list[str]:
    """What the queue's, the vault's and the depositor's state at the params' block say of any request."""
    t0 = p.block_time
    caveats = []
    if p.queue_paused:
        caveats.append("the queue is paused: new requests are refused until it is unpaused")
    if p.deposits_paused:
        caveats.append("ggAVAX deposits are paused: a funded request can then be neither cancelled nor reclaimed, "
                       "so claim it before it expires")
    if p.window_end is not None and t0 >= p.window_end:
        caveats.append("the announced withdrawal window has closed: the contracts know no such date, but a request "
                       "is paid only if the depositor still funds it (a pending one can be cancelled at any time)")
    if p.stale_reason:
        caveats.append(f"the depositor looks stale ({p.stale_reason}): nothing is funded until it calls")
    return caveats


def _refusals(p: Params, shares: int, expected: int, delay: int, held: int) -> list[str]:
    """What the queue refuses of this request, or what makes it unfundable (``held``: the ggAVAX
    holders hold between them, outside the queue)."""
    caveats = []
    if shares == 0:
        caveats.append("there are no ggAVAX shares to redeem: the queue refuses a request for 0 shares")
    elif shares > held:
        caveats.append(f"no one holds that much ggAVAX: {held / 10**18:,.4f} ggAVAX exist outside the queue, and a "
                       "request takes its shares from the one filing it")
    elif expected == 0:
        # requestUnstake checks the shares only; redeeming shares worth 0 AVAX reverts the whole call.
        caveats.append("these shares are worth 0 AVAX at today's share price: the queue would take the request, but "
                       "a depositor call that reaches it reverts until they are worth something")
    if delay > p.max_expiration_delay:
        caveats.append(f"the queue refuses an expiration delay above its maximum of {p.max_expiration_delay} seconds")
    return caveats


def _request_caveats(p: Params, shares: int, expected: int, delay: int, held: int, when: int | None, expires: int,
                     overdue: bool, refused: bool, blocked: int | None = None, undated: bool = False) -> list[str]:
    """What is wrong with this request itself, or with when it would be funded (``blocked``: the id
    where the depositor's calls fail whole, when that keeps it unfunded; ``undated``: its funding
    waits on a depositor call no one can date, the next one or, the depositor stale, any)."""
    caveats = _refusals(p, shares, expected, delay, held)
    if refused:
        return caveats  # no funding to date or to weigh against a deadline
    if p.limit == 0:
        caveats.append("maxRequestsPerDeposit is 0: the depositor's calls fund no request until the queue's admin "
                       "raises it")
    elif overdue:
        caveats.append("it waits for minipools whose validation has ended: the depositor funds it once Rialto records "
                       "their ends, which no one can date")
    elif when is None and expected == 0:
        pass  # the refusal above says why a call reaching it reverts
    elif when is None and blocked is not None:
        caveats.append(_blocked(blocked, p.next_request_id))
    elif when is None:
        caveats.append("no minipool return known today covers it: it waits for returns the schedule cannot date, or "
                       + ("for ggAVAX deposits to reopen and bring new AVAX" if p.deposits_paused else "for new deposits"))
    elif when >= expires:
        caveats.append(_expires_first(p, when, expires - delay))
    window = p.window_end
    # The window is named only where it comes before the expiration, the contract's own deadline.
    if window is not None and p.block_time < window < expires and p.limit != 0 and not overdue:
        caveats.append(_window_caveat(window, when, undated))
    return caveats


def _window_caveat(window: int, when: int | None, undated: bool) -> str:
    """What the announced window's end, before the request's expiration, asks of it."""
    if when is None or when >= window:
        # Nothing can be claimed before it is funded: no advice to claim before the window closes.
        return ("it is not expected to be funded before the announced withdrawal window closes: after that date, a "
                "funding depends on the depositor still calling")
    if undated:
        return ("its expiration falls after the announced end of the withdrawal window: claim it before the window "
                "closes, if the depositor's call that funds it comes in time (no one can date it)")
    return "its expiration falls after the announced end of the withdrawal window: claim before the window closes"


def _blocked(blocked: int, new: int) -> str:
    """Why the depositor's calls leave request ``new`` unfunded: they fail whole at ``blocked``."""
    if blocked == new:
        return f"the depositor's calls would fail whole when they reach it ({REVERTS}): it is not funded until that changes"
    return (f"the depositor's calls fail whole at request #{blocked} ahead of it ({REVERTS}): nothing behind it is "
            "funded until that changes or it leaves the line")


# Why a depositor call fails whole, as the contracts decide it.
REVERTS = ("its redemption would be worth nothing, less than it expects, more than the liquidity left, or more "
           "than the vault's released assets, which the reward stream's AVAX joins only when the vault's rewards "
           "are synced")


def after_expiry(deposits_paused: bool) -> str:
    """What a request funded after its expiration is, as a clause (the schedule's advice says it too)."""
    return ("it would be stuck: it could not be claimed, and reclaiming it reverts while ggAVAX deposits are paused"
            if deposits_paused else "it could only be reclaimed, as ggAVAX")


def _expires_first(p: Params, when: int, claimable: int) -> str:
    """The caveat of a request funded at ``when``, after its expiration: the requester picks the
    delay when filing (the estimate's default is the queue's shortest), so name one that would do,
    with a day to claim after the estimated funding where the queue's maximum allows it."""
    late = after_expiry(p.deposits_paused)
    if when - claimable + 1 > p.max_expiration_delay:
        return (f"it would expire before it is funded, even with the longest expiration delay the queue allows "
                f"({_days(p.max_expiration_delay)}): once funded, {late}")
    need = min(-(-(when - claimable + 86_400) // 86_400) * 86_400, p.max_expiration_delay)  # whole days, within the bound
    left = claimable + need - when  # to claim after the estimated funding
    claim = ("it could be claimed once funded" if left >= 86_400 else
             f"it could be claimed once funded, but only for {left} s after the estimated funding")
    return (f"it would expire before it is funded ({late} then): filed with an expiration delay of at least "
            f"{_days(need)} (the queue allows up to {_days(p.max_expiration_delay)}), {claim}")


def _days(seconds: int) -> str:
    """A delay as the query takes it, in seconds, with its length in days."""
    days, rest = divmod(seconds, 86_400)
    return f"{seconds} s ({days} day{'s' if days != 1 else ''})" if not rest else f"{seconds} s (about {seconds / 86_400:.1f} days)"


def answer(p: Params, inputs: dict[str, str], *, shares: int | None, avax: int | None,
           expiration_delay: int | None, resume: Resume | None = None) -> dict:
    """/withdrawals/estimate's body: the inputs as given, the params' block, the assumptions and
    the estimate with whole-token amounts beside the exact ones."""
    result = estimate(p, shares=shares, avax=avax, expiration_delay=expiration_delay, resume=resume)
    for name in ("shares", "expectedAvax", "aheadAvax"):
        result[name] = int(result[name + "Wei"]) / 10**18
    return {"inputs": dict(inputs), "block": {"number": p.block_number, "hash": p.block_hash, "timestamp": p.block_time},
            "assumptions": list(p.assumptions), "result": result}
