"""``publisher watch``: follow the chain's head and publish every block that changes the protocol.

Each turn asks the node for its head. The head is published (a whole run: read, build, publish,
under the run deadline and with every guard) when

- ``start``: nothing has been published by this watch yet;
- ``logs``: a block since the last one examined carries a log of a watched contract (the
  protocol's registry contracts, the AVAX/USD feed, the DEX pair, the withdrawal queue and
  pstAVAX): stakes, minipools, ggAVAX deposits and syncs, oracle and feed prices, swaps, queue
  requests, fundings, claims, cancels and reclaims;
- ``settings``: a digest of what changes without a log (the registry's addresses, the pause
  switches, the ProtocolDAO settings, the queue's delays and limits) differs from the last block
  examined;
- ``deadline``: the head's time passed a withdrawal request's claimable or expiration time, or a
  staker's GGP lock (what each allows moves with time alone);
- ``reorg``: the last block examined is no longer canonical;
- ``heartbeat``: ``heartbeat`` seconds passed since the last publish (time alone moves values:
  ggAVAX's streamed assets, the countdown to the next distribution, /status's age).

A run that fails leaves the live data as it was; the watch prints the one-line cause, waits
(doubling, at most a minute) and tries again with the same reason. It never forces past a guard.
"""
from __future__ import annotations

import gc
import hashlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .build.incremental import Cache
from .chain import abis
from .chain.multicall import Call, Multicall
from .chain.reader import at_hash, header_ref, quantity, registry_key
from .chain.rpc import RpcClient, RpcError
from .config import Profile
from .deadline import DeadlineExceeded, deadline, run_seconds
from .errors import PublisherError, cause
from .interrupts import Held
from .runs import Run, Target, read_build_publish
from .snapshot import BlockRef, Snapshot

LOG_SPAN = 2048  # the widest eth_getLogs range public Avalanche nodes serve; wider gaps just rebuild
POLL_DEADLINE = 30.0  # one look at the head; the node is asked again next turn
MAX_BACKOFF = 60.0


@dataclass
class Examined:
    block: BlockRef  # the last block examined: published, or found to change nothing
    addresses: tuple[str, ...]  # whose logs change the protocol
    dao: str  # the ProtocolDAO, whose settings change without a log
    digest: str  # of the state that changes without a log, at ``block``
    deadline: int | None = None  # the next time an open withdrawal request changes status


class Follower:
    """Says whether the head needs publishing, in one or two requests per new block."""

    def __init__(self, client: RpcClient, profile: Profile):
        self.client, self.profile = client, profile
        self.examined: Examined | None = None

    def look(self) -> tuple[BlockRef, str | None]:
        """The head and why it must be published (None: nothing changed since the last look)."""
        seen = self.examined
        if seen is None:
            return self._head(), "start"
        head_header, at_seen = self.client.batch([("eth_getBlockByNumber", ["latest", False]),
                                                  ("eth_getBlockByNumber", [hex(seen.block.number), False])])
        head = header_ref(head_header, self.client)
        if head.number < seen.block.number:
            return head, None  # a node behind the one we read last (a fallback URL): wait for it
        if at_seen is None or header_ref(at_seen, self.client).hash != seen.block.hash:
            return head, "reorg"
        if head.number == seen.block.number:
            return head, None
        if head.number - seen.block.number > LOG_SPAN:
            return head, f"{head.number - seen.block.number} blocks since the last look"
        logged = self._logs(seen, head)
        if logged:
            return head, logged
        if seen.deadline is not None and head.timestamp >= seen.deadline:
            return head, "deadline (a withdrawal request's claimable or expiration time, or a GGP lock, passed)"
        digest = self._digest(head, seen.dao)
        if digest != seen.digest:
            return head, "settings"
        self.examined = Examined(head, seen.addresses, seen.dao, digest, seen.deadline)
        return head, None

    def published(self, snap: Snapshot) -> None:
        """Start the next look from the block just published."""
        a = snap.addresses
        watched = {v.lower() for k, v in a.items() if k != "Multicall3"}
        p = self.profile
        watched |= {x.lower() for x in (p.avax_usd_feed, p.dex_pair, p.withdraw_queue, p.pst_avax) if x}
        dao = a["ProtocolDAO"]
        now, q = snap.block.timestamp, snap.withdraw_queue
        times = [t for r in (q.requests if q else ()) for t in (r.claimable_time, r.expiration_time) if t > now]
        times += [st.ggp_locked_until for st in snap.stakers if st.ggp_locked_until > now]
        self.examined = Examined(snap.block, tuple(sorted(watched)), dao, self._digest(snap.block, dao), min(times, default=None))

    def _logs(self, seen: Examined, head: BlockRef) -> str | None:
        """Why the blocks after ``seen`` through ``head`` must be published for their logs; None
        when they have none of the watched contracts'."""
        try:
            logs = self.client.request("eth_getLogs", [{"fromBlock": hex(seen.block.number + 1), "toBlock": hex(head.number),
                                                        "address": list(seen.addresses)}])
        except RpcError as exc:  # a node that serves no logs (or not this range): a run reads what changed
            return f"logs unreadable ({exc.rpc_message})"
        if not isinstance(logs, list):
            raise PublisherError(f"{self.client.describe()} answered eth_getLogs with a malformed value")
        if not logs:
            return None
        blocks = sorted({quantity(entry["blockNumber"], "eth_getLogs (a log's blockNumber)", self.client)
                         for entry in logs if isinstance(entry, dict) and "blockNumber" in entry})
        where = f" in block {blocks[0]}" if len(blocks) == 1 else f" in {len(blocks)} blocks" if blocks else ""
        return f"logs ({len(logs)}{where})"

    def _head(self) -> BlockRef:
        return header_ref(self.client.request("eth_getBlockByNumber", ["latest", False]), self.client)

    def _digest(self, block: BlockRef, dao: str) -> str:
        storage = self.profile.storage
        calls = [Call(storage, abis.storage_getAddress, (registry_key("contract.address", n),), optional=True)
                 for n in abis.REGISTRY_NAMES]
        calls += [Call(storage, abis.storage_getBool, (registry_key("contract.paused", n),), optional=True)
                  for n in abis.PAUSABLE]
        calls += [Call(dao, fn, (), optional=True) for fn in abis.dao_setting.values()]
        calls += [Call(dao, abis.getClaimingContractPct, (n,), optional=True) for n in abis.CLAIMING_CONTRACTS]
        calls.append(Call(dao, abis.getWithdrawForDelegationEnabled, optional=True))
        if self.profile.withdraw_queue:  # its setters emit no event
            calls += [Call(self.profile.withdraw_queue, fn, (), optional=True)
                      for fn in (abis.wq_unstakeDelay, abis.wq_maxExpirationDelay, abis.wq_paused,
                                 abis.wq_getMaxRequestsPerStakingDeposit, abis.wq_getMinUnstakeOnBehalfOfAmt)]
        values = Multicall(self.client, self.profile.multicall, at_hash(block), label=str(block.number)).run(calls)
        return hashlib.sha256(repr(values).encode()).hexdigest()


def watch(profile: Profile, out: str | Path, target: Target, *, poll: float, heartbeat: float,
          workers: int, runs: int = 0, echo: Callable[[str], None] = print) -> int:
    """Follow the head until interrupted (or ``runs`` publishes). Returns the publishes made.
    Builds use ``workers`` processes and one ``Cache`` for the watch's life: each build reuses
    what the one before it made."""
    with collecting_between_turns():
        return _watch(profile, out, target, poll=poll, heartbeat=heartbeat, workers=workers, runs=runs, echo=echo)


def _watch(profile: Profile, out: str | Path, target: Target, *, poll: float, heartbeat: float,
           workers: int, runs: int, echo: Callable[[str], None]) -> int:
    from .publish import LiveLook

    live = LiveData(target, Path(out))
    cache = Cache()
    follower = Follower(RpcClient(list(profile.rpc_urls), max_attempts=2), profile)
    done = failures = 0
    last_publish = float("-inf")
    pending: str | None = None  # a reason whose run failed: it still holds
    while not runs or done < runs:
        try:
            with deadline(POLL_DEADLINE, "a look at the head"):
                head, why = follower.look()
        except (PublisherError, DeadlineExceeded) as exc:
            failures += 1
            echo(f"error     {exc}; looking again in {_backoff(poll, failures):g}s")
            time.sleep(_backoff(poll, failures))
            continue
        why = why or pending or ("heartbeat" if time.monotonic() - last_publish >= heartbeat else None)
        if why is None:
            time.sleep(poll)
            continue
        seen_at = time.monotonic()
        try:
            with deadline(run_seconds(), "the run"):
                # The live /status and manifest, asked for once: the history's check reads the
                # one, the publish both, after the build (``LiveLook``).
                look = LiveLook(live.sink, target.prefix)
                history_from = live.history_if_not_ours(look.status())
                if history_from:
                    echo("resumed   the price history from the live /prices/history (the live data is not this watch's)")
                run = read_build_publish(profile, out, target, cache=cache, workers=workers, history_from=history_from,
                                         sink=live.sink, look=look)
                live.published()
        except (PublisherError, DeadlineExceeded, OSError) as exc:
            failures += 1
            pending = why
            echo(f"error     {cause(exc)}; the live /status unchanged, retrying in {_backoff(poll, failures):g}s")
            time.sleep(_backoff(poll, failures))
            continue
        failures, pending, done = 0, None, done + 1
        last_publish = time.monotonic()
        lost = None
        try:  # published: a failure here only costs the next look its starting point
            with deadline(POLL_DEADLINE, "a look at the published block"):
                follower.published(run.collected.snapshot)
        except (PublisherError, DeadlineExceeded) as exc:
            follower.examined, lost = None, exc
        echo(describe(run, why, head, last_publish - seen_at))
        if lost is not None:
            echo(f"warning   {cause(lost)}; the next look publishes afresh")
        del run
        collect_between_turns()  # now that the block is live
    return done


def collect_between_turns() -> None:
    """The oldest generation collected (see ``collecting_between_turns``), with Ctrl-C and
    SIGTERM held (``interrupts.Held``): a collection runs finalizers, where an interrupt would be
    dropped."""
    with Held():
        gc.collect()


@contextmanager
def collecting_between_turns() -> Iterator[None]:
    """The oldest generation collected only by ``collect_between_turns``, after each publish,
    never by the interpreter in the middle of a turn: it holds the build cache and the last
    snapshot, millions of objects at scale, and one automatic pass over them adds most of a
    second to the block it lands in. Young generations are collected as usual."""
    young, middle, oldest = gc.get_threshold()
    gc.set_threshold(young, middle, 1 << 30)
    try:
        yield
    finally:
        gc.set_threshold(young, middle, oldest)


class LiveData:
    """What is live in the bucket, as far as the next run's price history is concerned. The history
    may only grow, and it is checked against the live one: when the live data is not what this
    watch published last (a new task's first run, or a move a person published with --force),
    the run resumes from the live history instead of its own. It reads the live /status the run's
    publish asks for anyway (``LiveLook``), and the live history only when that is not ours."""

    def __init__(self, target: Target, out: Path):
        from .publish.plan import normalize_prefix
        from .publish.s3 import S3Sink

        # The watch's one client for the bucket: its publishes use it too (a client costs a
        # tenth of a second to make).
        self.sink = S3Sink(target.bucket, endpoint_url=target.endpoint_url, region=target.region)
        self.prefix, self.out = normalize_prefix(target.prefix), out
        self.ours: bytes | None = None  # the /status this watch published last
        self.copy = out.parent / f".{out.name}.live-history.json"

    def history_if_not_ours(self, status: bytes | None) -> Path | None:
        """``status``: the live /status (``LiveLook.status``)."""
        from .publish.plan import object_key

        if status is None or status == self.ours:
            return None
        data = self.sink.get(object_key(self.prefix, "/prices/history"))
        if data is None:
            return None
        self.copy.parent.mkdir(parents=True, exist_ok=True)
        self.copy.write_bytes(data)
        return self.copy

    def published(self) -> None:
        self.ours = (self.out / "status.json").read_bytes()


def describe(run: Run, why: str, head: BlockRef, seconds: float) -> str:
    snap, built, result = run.collected.snapshot, run.built, run.published
    plan = result.plan  # type: ignore[attr-defined]
    stages = ", ".join(f"{k} {v:.2f}" for k, v in run.seconds.items())
    return (f"block     {snap.block.number} ({why}; head was {head.number}): {built.rendered} rendered, "
            f"{len(plan.upload)} objects published ({plan.upload_bytes:,} bytes), {len(plan.delete)} deleted "
            f"in {seconds:.2f}s ({stages})")


def _backoff(poll: float, failures: int) -> float:
    # The exponent capped: a float poll times 2 ** 1024 overflows, after some 17 hours of failures.
    return round(min(max(poll, 0.5) * 2 ** min(failures, 16), MAX_BACKOFF), 1)
