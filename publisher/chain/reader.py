"""Read the whole protocol at one pinned block into a Snapshot, in a handful of HTTP requests.

Rounds, each one multicall (one or a few JSON-RPC batches): registry and paused flags; every
scalar; staker pages with the queue's open ids, then the per-staker views with the queue's open
requests, while the minipools are read beside them, and the block at the APY window's far end and
the share price there beside all of them. Every value of the run comes from the pinned block, but
that share price. A read after another takes a staker's views from it where they cannot differ
(``Reader._staker_views``).
"""
from __future__ import annotations

import bisect
import contextlib
import itertools
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from ..compute.prices import dex_problem
from ..config import Profile
from ..errors import PublisherError, every_cause
from ..progress import Progress
from ..snapshot import (
    BlockRef,
    DexReserves,
    FeedRound,
    GGPToken,
    Known,
    Minipool,
    OraclePrice,
    PstAvax,
    RewardsPool,
    Settings,
    Snapshot,
    Staker,
    UnstakeRequest,
    Vault,
    VaultPoint,
    WithdrawQueue,
    count_problems,
    instances,
)
from . import abis
from .abi import Fn
from .codec import DecodingError, checksum, keccak
from .multicall import Call, Calls, Multicall
from .rpc import Beside, RpcClient, RpcError, RpcUnavailable

log = logging.getLogger(__name__)

STAKER_PAGE = 400
# Estimated gas per row, used only to size Multicall3 chunks (multicall.CHUNK_GAS, 10 M under the
# 50 M eth_call cap of public nodes): what mainnet's contracts measure, about 39 000 per getStakers
# row and 88 000 per getMinipool (the devnet's own contracts take about 24 000 and 67 000).
GAS_PER_STAKER = 39_000
GAS_PER_MINIPOOL = 88_000
GAS_STAKER_VIEW = 40_000
GAS_PER_REQUEST = 30_000  # requests(id): seven words of one struct
GAS_REQUEST_VIEW = 12_000  # isFulfilledRequest(id): one set lookup
GAS_PER_SET_ID = 2_500  # getAll…Requests(): one storage word copied per open id
# The open ids are listed by the queue's two set views when a copy fits well inside one call's gas;
# past that (or on a queue without the views) every id ever issued is read instead.
SET_READ_GAS = 20_000_000
WAD = 10**18
DAY = 86_400


def registry_key(prefix: str, name: str) -> bytes:
    return keccak(prefix.encode() + name.encode())


class Reorged(PublisherError):
    """The pinned block left the canonical chain while the run was reading it."""

    def __init__(self, ref: BlockRef, now: BlockRef | None):
        self.ref, self.now = ref, now
        super().__init__(f"{self.what()}: nothing was written")

    def __reduce__(self):  # pickled as what it is made from (its message is derived)
        return (Reorged, (self.ref, self.now))

    def what(self) -> str:
        return (f"block {self.ref.number} was replaced during the run (reorg: {self.ref.hash[:10]}… is no longer "
                f"canonical{', now ' + self.now.hash[:10] + '…' if self.now else ''})")


def at_hash(ref: BlockRef) -> dict:
    """EIP-1898 block parameter: the node answers for exactly this block, or fails if it has been
    replaced, so a reorg during the run cannot mix two chains' values under one stamp."""
    return {"blockHash": ref.hash, "requireCanonical": True}


def verify_canonical(client: RpcClient, ref: BlockRef) -> None:
    """After the last read: the pinned number still carries the pinned hash."""
    header = client.request("eth_getBlockByNumber", [hex(ref.number), False])
    now = header_ref(header, client) if header is not None else None
    if now is None or now.hash != ref.hash:
        raise Reorged(ref, now)


def pin_block(client: RpcClient, block: int | None, expected_chain_id: int) -> BlockRef:
    """Chain id check and the run's block, in one request."""
    if block is not None and block < 0:
        raise PublisherError(f"block {block} is negative: give a block number ≥ 0 or omit --block for the latest")
    tag = hex(block) if block is not None else "latest"
    chain_id, header = client.batch([("eth_chainId", []), ("eth_getBlockByNumber", [tag, False])])
    served = quantity(chain_id, "eth_chainId", client)
    if served != expected_chain_id:
        raise PublisherError(f"{client.describe()} serves chain id {served}, expected {expected_chain_id}")
    if header is None:
        raise PublisherError(f"block {block} does not exist on {client.describe()}")
    return header_ref(header, client)


_QUANTITY = re.compile(r"0x[0-9a-fA-F]{1,64}")


def quantity(value, what: str, client: RpcClient) -> int:
    """A node's hex quantity, or a one-line error naming the answer (nodes are untrusted input:
    int(text, 16) alone would take "-0x10" and "0x_5")."""
    if type(value) is not str or _QUANTITY.fullmatch(value) is None:
        raise PublisherError(f"{client.describe()} answered {what} with a malformed value")
    return int(value, 16)


def header_ref(header, client: RpcClient) -> BlockRef:
    """A block header's number, hash and time, checked: nodes are untrusted input too."""
    if not isinstance(header, dict) or not isinstance(header.get("hash"), str):
        raise PublisherError(f"{client.describe()} returned a malformed block header")
    return BlockRef(quantity(header.get("number"), "a block number", client), header["hash"],
                    quantity(header.get("timestamp"), "a block timestamp", client))


@dataclass
class Reader:
    client: RpcClient
    profile: Profile
    progress: Progress | None = None
    # Called with the minipools once they are read, on a thread of the reader's, while the node
    # answers the per-staker views (the largest round): work that needs only them can overlap
    # the node's busiest seconds.
    on_minipools: Callable[[tuple[Minipool, ...]], None] | None = None
    # Below this much gas the open ids come from the queue's set views (see SET_READ_GAS).
    set_read_gas: int = SET_READ_GAS
    # The records of this process's last read (``snapshot.Known``): those read again unchanged
    # are taken as they are.
    known: Known | None = None

    def read(self, block: int | None = None) -> Snapshot:
        p = self.profile
        head = pin_block(self.client, block, p.chain_id)
        self.head = head
        if self.known is not None:
            self.known.begin()
        try:
            # What is read beside this block's rounds (the APY window's far end, another block) is
            # entered by ``_read`` once it has the addresses, and closed with the read.
            with contextlib.ExitStack() as beside:
                snap = self._read(head, beside)
        except Reorged:
            raise
        except PublisherError:
            # Reads by hash fail once the block is replaced: report the reorg, not its symptom.
            verify_canonical(self.client, head)
            raise
        if self.known is not None:
            self.known.end()
        return snap

    def _read(self, head: BlockRef, beside: contextlib.ExitStack) -> Snapshot:
        p = self.profile
        self.mc = Multicall(self.client, p.multicall, at_hash(head), on_chunk=self._tick, label=str(head.number))
        fixed = {"Multicall3": p.multicall, "Storage": p.storage}
        if p.avax_usd_feed:
            fixed["AVAX/USD feed"] = p.avax_usd_feed
        # A DEX pair without code only costs /prices/tj its quote; a queue without code publishes
        # /withdrawals as "noQueue".
        soft = {k: v for k, v in (("DEX pair", p.dex_pair), ("WithdrawQueue", p.withdraw_queue),
                                  ("pstAVAX", p.pst_avax)) if v}
        soft_problems = self._require_code(fixed, soft=soft)
        dex_error = soft_problems.get("DEX pair")
        warnings: list[str] = []
        queue_note = soft_problems.get("WithdrawQueue") if p.withdraw_queue else f"no withdrawal queue is configured for {p.name}"
        queue_at = checksum(p.withdraw_queue) if p.withdraw_queue and not queue_note else None
        pst_at = checksum(p.pst_avax) if p.pst_avax and "pstAVAX" not in soft_problems else None
        if p.withdraw_queue and queue_note:
            # The profile names a queue: publishing noQueue (and no requester file) is news.
            warnings.append(f"/withdrawals is published as noQueue although the profile names a queue: {queue_note}")
        if p.pst_avax and pst_at is None:
            warnings.append(f"pstAVAX not read: {soft_problems['pstAVAX']}")
        addresses, paused = self._registry(warnings)
        # The share price at the APY window's far end is another block's: found and read beside
        # this block's rounds, on a connection of its own.
        apy = beside.enter_context(Beside(partial(self._apy_point, head, addresses["TokenggAVAX"]), self.client, name="reader-apy"))
        self._require_code({k: v for k, v in addresses.items() if k not in ("Multicall3", "Storage")})
        scalars = self._scalars(addresses, read_dex=p.dex_pair is not None and dex_error is None, queue=queue_at, pst=pst_at)
        addresses["WAVAX"] = checksum(scalars["wavax"])  # ggAVAX's asset; the DEX pair's other side
        # The counts the next round pages by, bounded and checked against each other before a call
        # is made or a list allocated for them (a node is untrusted input too).
        s = scalars
        counts = count_problems(s["staker_count"], s["minipool_count"], *(
            (f"WithdrawQueue {queue_at}", s["wq_next"], s["wq_pending"], s["wq_fulfilled"]) if queue_at else ()))
        if counts:
            raise PublisherError(f"refusing to read block {head.number}: {every_cause(counts)}")
        # The minipools are read beside the stakers and the queue, on a connection of their own:
        # the node has their calls to work on while this process decodes the stakers' pages and
        # makes the next round's calls from them.
        with Beside(partial(self._pools, addresses, scalars), self.client, name="reader-pools") as pools:
            rows, listed = self._stakers_and_sets(addresses, scalars, queue_at)
            sets = _open_ids(queue_at, s, *listed) if queue_at and listed else None
            request_ids, requests = self._request_calls(queue_at, s, sets) if queue_at else ([], [])
            stakers, requests_raw = self._staker_views(addresses, rows, scalars, also=requests)
            minipools, liquid = pools.join()
        apy_base = _apy_base(apy.join(), warnings)
        if s["fee_bips"] is None:
            warnings.append("ProtocolDAO has no getFeeBips(): fee taken as 0")
        settings = Settings(
            **{_snake(k): s[_snake(k)] for k in abis.DAO_SETTINGS if k != "FeeBips"},
            fee_bips=s["fee_bips"] or 0,
            claiming_contract_pct={n: s[f"pct:{n}"] for n in abis.CLAIMING_CONTRACTS},
            withdraw_for_delegation_enabled=bool(s["withdraw_for_delegation_enabled"]),
            **{_snake(k): s[_snake(k)] for k in abis.OPTIONAL_DAO_SETTINGS},
        )
        vault = Vault(
            name=s["vault_name"], symbol=s["vault_symbol"], total_assets=s["total_assets"],
            total_released_assets=s["total_released_assets"], staking_total_assets=s["staking_total_assets"],
            amount_available_for_staking=s["amount_available_for_staking"], last_rewards_amt=s["last_rewards_amt"],
            last_sync=s["last_sync"], rewards_cycle_end=s["rewards_cycle_end"],
            rewards_cycle_length=s["rewards_cycle_length"], total_supply=s["vault_supply"],
            assets_per_share=s["assets_per_share"], shares_per_asset=s["shares_per_asset"], liquid_avax=liquid,
        )
        feed = self._feed(s)
        dex, dex_error = self._dex(s, dex_error, addresses, warnings)
        wavax = self.profile.addresses.get("WAVAX")
        if wavax and checksum(wavax) != checksum(s["wavax"]):
            warnings.append(f"TokenggAVAX.asset() is {checksum(s['wavax'])}, profile says WAVAX {wavax}: using the chain's")
        queue = _queue(queue_at, s, request_ids, requests_raw, sets, addresses["TokenggAVAX"], warnings, self.known) if queue_at else None
        pst = PstAvax(pst_at, s["pst_supply"], s["pst_shares"]) if pst_at else None
        return Snapshot(
            network=p.name, chain_id=p.chain_id, block=head, addresses=addresses, settings=settings,
            ggavax=vault, ggp=GGPToken(s["ggp_supply"], s["ggp_max_supply"]),
            oracle=OraclePrice(*s["oracle"]),
            rewards_pool=RewardsPool(
                s["cycle_count"], s["cycle_start"], s["cycle_total"], s["inflation_start"],
                s["inflation"][0], s["inflation"][1], s["nodeop_cycle_total"],
            ),
            staker_count=s["staker_count"], total_ggp_stake=s["total_ggp_stake"], stakers=stakers,
            minipool_count=s["minipool_count"], total_avax_liquid_staker_amt=s["total_ls"],
            minipools=minipools, paused=paused, feed=feed, dex=dex, apy_base=apy_base,
            dex_pair=checksum(p.dex_pair) if p.dex_pair else None, dex_error=dex_error,
            apy_window_days=p.apy_window_days,
            warnings=tuple(warnings),
            withdraw_queue=queue, withdraw_queue_note=queue_note, pst_avax=pst,
        )

    def _feed(self, s: dict) -> FeedRound | None:
        feed = self.profile.avax_usd_feed
        if not feed:
            return None
        rid, answer, started, updated, answered = s["feed_round"]
        return FeedRound(checksum(feed), rid, answer, started, updated, answered, s["feed_decimals"])

    def _dex(self, s: dict, dex_error: str | None, addresses: dict[str, str],
             warnings: list[str]) -> tuple[DexReserves | None, str | None]:
        """The DEX pair's reserves, and why it has none when it cannot be read. The quote is
        secondary: a broken pair costs /prices/tj its quote (a warning), never the run."""
        pair = self.profile.dex_pair
        dex = None
        if pair and dex_error is None:
            if None in (s["dex_reserves"], s["dex_token0"], s["dex_token1"]):
                dex_error = f"DEX pair {pair}: getReserves(), token0() or token1() reverted or gave no valid answer"
            else:
                r0, r1, ts = s["dex_reserves"]
                dex = DexReserves(checksum(pair), checksum(s["dex_token0"]), checksum(s["dex_token1"]), r0, r1, ts)
        problem = dex_error or (dex_problem(dex, addresses["TokenGGP"], addresses["WAVAX"]) if dex else None)
        if problem:
            warnings.append(f"/prices/tj has no quote: {problem}")
            log.warning("/prices/tj has no quote: %s", problem)
        return dex, dex_error

    # -- rounds ---------------------------------------------------------------------------------

    def _require_code(self, contracts: dict[str, str], soft: dict[str, str] | None = None) -> dict[str, str]:
        """A call to an address without code "succeeds" with no data; say plainly which contract is
        missing instead of failing later on undecodable results. Contracts in ``soft`` only report
        their problem (returned by name)."""
        wanted = {**contracts, **(soft or {})}
        names = sorted(wanted)
        # By number, not by hash: this is a diagnostic, not a value of the snapshot (every value is
        # read by hash), and nodes that look a block up by hash for each call (anvil: ~8 ms per
        # address, against 0.3 ms by number) would make it one of the run's slowest requests.
        codes = self.client.batch([("eth_getCode", [wanted[n], hex(self.head.number)]) for n in names])
        problems = {}
        for name, code in zip(names, codes, strict=True):
            if not isinstance(code, str):
                raise PublisherError(f"{self.client.describe()} answered eth_getCode for {name} with a malformed value")
            if code in ("0x", "0x0", ""):
                problems[name] = (f"no contract code for {name} at {checksum(wanted[name])} "
                                  f"at block {self.head.number} (wrong network or address?)")
        hard = [problems[n] for n in names if n in problems and n in contracts]
        if hard:
            raise PublisherError(hard[0])
        return problems

    def _tick(self, n: int) -> None:
        if self.progress:
            self.progress.advance(n)

    def _run(self, label: str, calls: Sequence[Call | Calls]) -> list:
        if self.progress:
            self.progress.start(label, sum(len(c.args) if isinstance(c, Calls) else 1 for c in calls))
        try:
            return self.mc.run(calls)
        finally:
            if self.progress:
                self.progress.finish()

    def _registry(self, warnings: list[str]) -> tuple[dict[str, str], dict[str, bool]]:
        storage = self.profile.storage
        names = abis.REGISTRY_NAMES
        label = f"Storage {storage}"
        calls = [Call(storage, abis.storage_getAddress, (registry_key("contract.address", n),), contract=label) for n in names]
        calls += [Call(storage, abis.storage_getBool, (registry_key("contract.paused", n),), contract=label) for n in abis.PAUSABLE]
        out = self._run("registry", calls)
        addresses = {}
        for name, addr in zip(names, out[: len(names)], strict=True):
            if int(addr, 16) == 0:
                raise PublisherError(f"Storage {storage} has no address for contract {name!r}")
            addresses[name] = checksum(addr)
            expected = self.profile.addresses.get(name)
            if expected and checksum(expected) != addresses[name]:
                msg = f"registry address of {name} is {addresses[name]}, profile says {expected}: using the registry"
                warnings.append(msg)
                log.warning(msg)
        addresses["Storage"] = checksum(storage)
        addresses["Multicall3"] = checksum(self.profile.multicall)
        paused = {name: bool(flag) for name, flag in zip(abis.PAUSABLE, out[len(names):], strict=True)}
        return dict(addresses), paused

    def _scalars(self, a: dict[str, str], *, read_dex: bool, queue: str | None = None, pst: str | None = None) -> dict:
        p = self.profile
        spec: list[tuple[str, str, str, Fn, tuple]] = [
            ("vault_name", "TokenggAVAX", a["TokenggAVAX"], abis.name, ()),
            ("vault_symbol", "TokenggAVAX", a["TokenggAVAX"], abis.symbol, ()),
            ("total_assets", "TokenggAVAX", a["TokenggAVAX"], abis.totalAssets, ()),
            ("total_released_assets", "TokenggAVAX", a["TokenggAVAX"], abis.totalReleasedAssets, ()),
            ("staking_total_assets", "TokenggAVAX", a["TokenggAVAX"], abis.stakingTotalAssets, ()),
            ("amount_available_for_staking", "TokenggAVAX", a["TokenggAVAX"], abis.amountAvailableForStaking, ()),
            ("last_rewards_amt", "TokenggAVAX", a["TokenggAVAX"], abis.lastRewardsAmt, ()),
            ("last_sync", "TokenggAVAX", a["TokenggAVAX"], abis.lastSync, ()),
            ("rewards_cycle_end", "TokenggAVAX", a["TokenggAVAX"], abis.rewardsCycleEnd, ()),
            ("rewards_cycle_length", "TokenggAVAX", a["TokenggAVAX"], abis.rewardsCycleLength, ()),
            ("vault_supply", "TokenggAVAX", a["TokenggAVAX"], abis.totalSupply, ()),
            ("assets_per_share", "TokenggAVAX", a["TokenggAVAX"], abis.convertToAssets, (WAD,)),
            ("shares_per_asset", "TokenggAVAX", a["TokenggAVAX"], abis.convertToShares, (WAD,)),
            ("wavax", "TokenggAVAX", a["TokenggAVAX"], abis.asset, ()),
            ("ggp_supply", "TokenGGP", a["TokenGGP"], abis.totalSupply, ()),
            ("ggp_max_supply", "TokenGGP", a["TokenGGP"], abis.MAX_SUPPLY, ()),
            ("oracle", "Oracle", a["Oracle"], abis.getGGPPriceInAVAX, ()),
            ("staker_count", "Staking", a["Staking"], abis.getStakerCount, ()),
            ("total_ggp_stake", "Staking", a["Staking"], abis.getTotalGGPStake, ()),
            ("minipool_count", "MinipoolManager", a["MinipoolManager"], abis.getMinipoolCount, ()),
            ("total_ls", "MinipoolManager", a["MinipoolManager"], abis.getTotalAVAXLiquidStakerAmt, ()),
            ("cycle_count", "RewardsPool", a["RewardsPool"], abis.getRewardsCycleCount, ()),
            ("cycle_start", "RewardsPool", a["RewardsPool"], abis.getRewardsCycleStartTime, ()),
            ("cycle_total", "RewardsPool", a["RewardsPool"], abis.getRewardsCycleTotalAmt, ()),
            ("inflation_start", "RewardsPool", a["RewardsPool"], abis.getInflationIntervalStartTime, ()),
            ("inflation", "RewardsPool", a["RewardsPool"], abis.getInflationAmt, ()),
            ("nodeop_cycle_total", "ClaimNodeOp", a["ClaimNodeOp"], abis.getRewardsCycleTotal, ()),
            ("withdraw_for_delegation_enabled", "ProtocolDAO", a["ProtocolDAO"], abis.getWithdrawForDelegationEnabled, ()),
        ]
        spec += [(_snake(k), "ProtocolDAO", a["ProtocolDAO"], fn, ()) for k, fn in abis.dao_setting.items() if k != "FeeBips"]
        spec += [(f"pct:{n}", "ProtocolDAO", a["ProtocolDAO"], abis.getClaimingContractPct, (n,)) for n in abis.CLAIMING_CONTRACTS]
        if p.avax_usd_feed:
            feed = f"AVAX/USD feed {p.avax_usd_feed}"
            spec += [("feed_round", feed, p.avax_usd_feed, abis.latestRoundData, ()),
                     ("feed_decimals", feed, p.avax_usd_feed, abis.decimals, ())]
        calls = [Call(addr, fn, args, contract=c) for _, c, addr, fn, args in spec]
        keys = [k for k, *_ in spec]
        # getFeeBips exists only on the 2025 ProtocolDAO: optional, so older blocks still read.
        calls.append(Call(a["ProtocolDAO"], abis.dao_setting["FeeBips"], contract="ProtocolDAO", optional=True))
        keys.append("fee_bips")
        for k, fn in abis.dao_optional_setting.items():
            calls.append(Call(a["ProtocolDAO"], fn, contract="ProtocolDAO", optional=True))
            keys.append(_snake(k))
        if queue:
            label = f"WithdrawQueue {queue}"
            required = [("wq_next", abis.wq_nextRequestId), ("wq_allocated", abis.wq_totalAllocatedFunds),
                        ("wq_unstake_delay", abis.wq_unstakeDelay), ("wq_max_expiration", abis.wq_maxExpirationDelay),
                        ("wq_pending", abis.wq_getPendingRequestsCount), ("wq_fulfilled", abis.wq_getFulfilledRequestsCount),
                        ("wq_vault", abis.wq_tokenggAVAX)]
            # Views added by later implementations of the queue: absent ones read as None.
            optional = [("wq_paused", abis.wq_paused), ("wq_max_per_deposit", abis.wq_getMaxRequestsPerStakingDeposit),
                        ("wq_min_on_behalf", abis.wq_getMinUnstakeOnBehalfOfAmt)]
            calls += [Call(queue, fn, contract=label) for _, fn in required]
            calls += [Call(queue, fn, contract=label, optional=True) for _, fn in optional]
            calls.append(Call(a["TokenggAVAX"], abis.balanceOf, (queue,), contract="TokenggAVAX"))
            keys += [k for k, _ in required] + [k for k, _ in optional] + ["wq_shares"]
        if pst:
            calls += [Call(pst, abis.totalSupply, contract=f"pstAVAX {pst}"),
                      Call(a["TokenggAVAX"], abis.balanceOf, (pst,), contract="TokenggAVAX")]
            keys += ["pst_supply", "pst_shares"]
        if read_dex:
            # Optional: a pair that reverts loses /prices/tj its quote, not the run.
            assert p.dex_pair is not None
            pair = f"DEX pair {p.dex_pair}"
            calls += [Call(p.dex_pair, abis.getReserves, contract=pair, optional=True),
                      Call(p.dex_pair, abis.token0, contract=pair, optional=True),
                      Call(p.dex_pair, abis.token1, contract=pair, optional=True)]
            keys += ["dex_reserves", "dex_token0", "dex_token1"]
        out = self._run("protocol state", calls)
        return dict(zip(keys, out, strict=True))

    def _stakers_and_sets(self, a: dict[str, str], s: dict, queue: str | None) -> tuple[list, tuple | None]:
        """Every staker's row of ``Staking.getStakers`` (pages of STAKER_PAGE rows) and the answers
        of the queue's two set views (None when they would cost too much gas to copy)."""
        count = s["staker_count"]
        calls: list[Call | Calls] = list(staker_page_calls(a, count))
        listed = queue is not None and max(s["wq_pending"], s["wq_fulfilled"]) * GAS_PER_SET_ID <= self.set_read_gas
        if queue and listed:
            # The open ids only: a closed request costs nothing to read, however long the history.
            label = f"WithdrawQueue {queue}"
            calls += [Call(queue, fn, contract=label, optional=True, gas=30_000 + n * GAS_PER_SET_ID)
                      for fn, n in ((abis.wq_getAllPendingRequests, s["wq_pending"]),
                                    (abis.wq_getAllFulfilledRequests, s["wq_fulfilled"]))]
        out = self._run("stakers and open request ids", calls)
        pages = out[: len(out) - 2] if queue and listed else out
        for k, page in enumerate(pages):  # the views of every row are the next round
            asked = min(STAKER_PAGE, count - k * STAKER_PAGE)
            if len(page) > asked:
                raise PublisherError(f"Staking.getStakers({k * STAKER_PAGE}, {STAKER_PAGE}) answered {len(page)} rows, "
                                     f"more than the {asked} asked for")
        return [row for page in pages for row in page], (out[-2], out[-1]) if queue and listed else None

    def _pools(self, a: dict[str, str], s: dict, client: RpcClient) -> tuple[tuple[Minipool, ...], int]:
        """On ``client``, in one round: the minipools (handed to ``on_minipools`` as soon as they
        are made) and the vault's WAVAX balance."""
        mc = Multicall(client, self.profile.multicall, self.mc.block, label=self.mc.label)
        pools = s["minipool_count"]
        # A Calls group answers one element per call, in place: the minipools, then the balance.
        out = mc.run(pool_calls(a, pools, s["wavax"]))
        minipools = instances(Minipool, out[:pools], self.known, _minipool_values)
        if self.on_minipools:
            self.on_minipools(minipools)
        return minipools, out[pools]

    def _request_calls(self, queue: str, s: dict, sets: tuple[list[int], set[int]] | None) -> tuple[list[int], list[Calls]]:
        """The ids whose records the next round reads, and its calls: the open ids with their set
        membership known, or (without the sets) every id ever issued and its membership."""
        label = f"WithdrawQueue {queue}"
        ids = sets[0] if sets else list(range(s["wq_next"]))
        calls = [Calls(queue, abis.wq_requests, [(i,) for i in ids], gas=GAS_PER_REQUEST, contract=label)]
        if sets is None:
            calls.append(Calls(queue, abis.wq_isFulfilledRequest, [(i,) for i in ids], gas=GAS_REQUEST_VIEW, contract=label))
        return ids, calls

    def _staker_views(self, a: dict[str, str], rows: list, s: dict, also: list[Calls]) -> tuple[tuple[Staker, ...], list]:
        """The stakers of these ``getStakers`` rows, each with its four views, asked only of the
        rows whose answers the last read did not keep (see ``_view_inputs``), in one round with the
        calls ``also`` (the queue's requests), whose answers come second."""
        views = (
            (a["Staking"], abis.getEffectiveGGPStaked, "Staking"),
            (a["Staking"], abis.getCollateralizationRatio, "Staking"),
            (a["Staking"], abis.getEffectiveRewardsRatio, "Staking"),
            (a["ClaimNodeOp"], abis.isEligible, "ClaimNodeOp"),
        )
        inputs, now = _view_inputs(a, s), self.head.timestamp
        since, kept = self.known.answered(_VIEWS, inputs, now, VIEWS_KEPT_SECONDS) if self.known else (now, {})
        # A staker not eligible may become so as time passes, its row unchanged: asked again from
        # the time it can (``_may_be_eligible``).
        min_seconds = s["rewards_eligibility_min_seconds"]
        ask = [row for row in rows if (hit := kept.get(row)) is None or (not hit[3] and _may_be_eligible(row, min_seconds, now))]
        stakers = [(row[0],) for row in ask]
        calls = [Calls(t, fn, stakers, gas=GAS_STAKER_VIEW, contract=c) for t, fn, c in views] if ask else []
        out = self._run("staker views and open requests", [*calls, *also]) if calls or also else []
        n = len(ask)
        fresh = dict(zip(ask, zip(out[:n], out[n : 2 * n], out[2 * n : 3 * n], out[3 * n : 4 * n], strict=True), strict=True))
        answers = {row: fresh.get(row) or kept[row] for row in rows}
        if self.known is not None:
            self.known.keep(_VIEWS, inputs, since, now, answers)
        return instances(Staker, ((row, *answers[row]) for row in rows), self.known, _staker_values), out[4 * n :]

    def _apy_point(self, head: BlockRef, vault: str, client: RpcClient) -> tuple[int, BlockRef | None, int | Exception | None]:
        """The APY window's far end: its target time, the last block at or before it and the
        vault's share price there (or why it could not be read), on ``client``."""
        target = head.timestamp - self.profile.apy_window_days * DAY
        ref = find_block_at(client, target, head, self.profile.history_from_block)
        if ref is None:
            return target, None, None
        try:
            data = client.request("eth_call", [{"to": vault, "data": "0x" + abis.convertToAssets.encode(WAD).hex()}, at_hash(ref)])
            return target, ref, abis.convertToAssets.decode(bytes.fromhex(data[2:]))
        except (RpcError, RpcUnavailable, ValueError, TypeError, DecodingError) as exc:  # e.g. a node without archive state
            return target, ref, exc


def _apy_base(point: tuple[int, BlockRef | None, int | Exception | None], warnings: list[str]) -> VaultPoint | None:
    target, ref, value = point
    if ref is None:
        warnings.append(f"no block at or before {target} (APY window start): APY history unavailable")
        return None
    if isinstance(value, Exception):
        warnings.append(f"ggAVAX share price at block {ref.number} unavailable ({type(value).__name__}): APY history unavailable")
        return None
    assert value is not None
    return VaultPoint(ref, value)


_VIEWS = "staker views"  # what ``Known`` keeps their answers under

# How long a staker view's answer is taken again for a row read again unchanged (``_view_inputs``):
# an hour of chain time, after which every view is asked again, whatever changed or not.
VIEWS_KEPT_SECONDS = 3600


def _view_inputs(a: dict[str, str], s: dict) -> tuple:
    """What a staker's four views read besides the staker's own row (the struct ``getStakers``
    answers, which holds every per-staker value they read: GGP staked, AVAX assigned, the
    high-water mark, the rewards start): the contracts they reach through the registry, the
    Oracle's GGP price and the ProtocolDAO's settings. While all of these and a row are the last
    read's, the views answer as they did then, but ``isEligible``, which also reads the block's
    time (``_may_be_eligible``)."""
    return (tuple(sorted(a.items())), s["oracle"], tuple(s[_snake(k)] for k in abis.DAO_SETTINGS if k != "FeeBips"),
            s["fee_bips"])


_START = [name for name, _ in abis.STAKER_FIELDS].index("rewardsStartTime")
_HIGH_WATER = [name for name, _ in abis.STAKER_FIELDS].index("avaxValidatingHighWater")


def _may_be_eligible(row: tuple, min_seconds: int, now: int) -> bool:
    """Whether ``ClaimNodeOp.isEligible`` can be true at ``now`` for this ``getStakers`` row: only
    with a rewards start, a high-water mark and the start at least RewardsEligibilityMinSeconds
    before ``now`` (what it requires). A false answer can turn true, its row unchanged, only once
    time passes that start's mark."""
    return row[_START] != 0 and row[_HIGH_WATER] > 0 and row[_START] + min_seconds <= now


def staker_page_calls(a: dict[str, str], count: int) -> list[Call]:
    """Every staker, in pages of STAKER_PAGE rows, with the gas each page is estimated to take."""
    return [Call(a["Staking"], abis.getStakers, (off, STAKER_PAGE), gas=GAS_PER_STAKER * min(STAKER_PAGE, count - off), contract="Staking")
            for off in range(0, count, STAKER_PAGE)]


def pool_calls(a: dict[str, str], pools: int, wavax: str) -> list[Call | Calls]:
    """Every minipool and the vault's WAVAX balance."""
    return [Calls(a["MinipoolManager"], abis.getMinipool, [(i,) for i in range(pools)], gas=GAS_PER_MINIPOOL, contract="MinipoolManager"),
            Call(wavax, abis.balanceOf, (a["TokenggAVAX"],), contract="WAVAX")]


def find_block_at(client: RpcClient, timestamp: int, head: BlockRef, floor: int = 0, *, fanout: int = 16, max_rounds: int = 12) -> BlockRef | None:
    """The last block with time <= ``timestamp``: a k-ary search, one batch request per round."""
    if head.timestamp <= timestamp:
        return head
    lo, hi = floor, head.number  # invariant: time(hi) > timestamp
    lo_ref = None
    for _ in range(max_rounds):
        if hi - lo <= 1 and lo_ref is not None:
            break
        points = sorted({lo + (hi - lo) * i // fanout for i in range(fanout)} | {lo})
        answers = client.batch([("eth_getBlockByNumber", [hex(n), False]) for n in points])
        refs = [numbered(h, n, client) for n, h in zip(points, answers, strict=True) if h]
        below = [r for r in refs if r.timestamp <= timestamp]
        if not below:
            return None  # even the floor block is later than the target
        lo_ref = below[-1]
        lo = lo_ref.number
        above = [r.number for r in refs if r.timestamp > timestamp]
        hi = min(above) if above else hi
    return lo_ref if hi - lo <= 1 else None


def _open_ids(queue: str, s: dict, pending: list[int] | None, fulfilled: list[int] | None) -> tuple[list[int], set[int]] | None:
    """The open ids in order and the fulfilled ones, from the queue's two set views; None when a
    view is absent or reverted (the reader then reads every id)."""
    if pending is None or fulfilled is None:
        return None
    label = f"WithdrawQueue {queue}"
    both = set(pending) | set(fulfilled)
    if (len(pending), len(fulfilled)) != (s["wq_pending"], s["wq_fulfilled"]) or len(both) != len(pending) + len(fulfilled) \
            or any(not 0 <= i < s["wq_next"] for i in both):
        raise PublisherError(f"{label}: its pending and fulfilled sets ({len(pending)} and {len(fulfilled)} ids) are not "
                             f"{s['wq_pending']} and {s['wq_fulfilled']} distinct ids below nextRequestId() ({s['wq_next']})")
    return sorted(both), set(fulfilled)


def _queue(address: str, s: dict, ids: list[int], raw: list, sets: tuple[list[int], set[int]] | None,
           vault: str, warnings: list[str], known: Known | None = None) -> WithdrawQueue:
    """The queue's record with its open requests (checked against its own counters by
    ``snapshot.check``, as every snapshot is). ``raw``: the records of ``ids``, followed by their
    set membership when ``sets`` did not list it."""
    records = raw[: len(ids)]
    fulfilled = [i in sets[1] for i in ids] if sets else raw[len(ids) :]
    # The sets' ids are open by definition. Read without them, an id's record is open unless deleted
    # (claimed, cancelled or reclaimed): then all its fields read zero. Not the requester alone:
    # requestUnstakeOnBehalfOf files for the zero address too, and that request is open.
    open_ = instances(UnstakeRequest, ((i, row, done) for i, row, done in zip(ids, records, fulfilled, strict=True)
                                       if sets or row[3] != 0), known, _request_values)
    label = f"WithdrawQueue {address}"
    if checksum(s["wq_vault"]) != vault:
        warnings.append(f"{label} serves ggAVAX {checksum(s['wq_vault'])}, the registry's is {vault}")
    return WithdrawQueue(
        address=address, next_request_id=s["wq_next"], total_allocated_funds=s["wq_allocated"],
        unstake_delay=s["wq_unstake_delay"], max_expiration_delay=s["wq_max_expiration"],
        paused=None if s["wq_paused"] is None else bool(s["wq_paused"]), pending_count=s["wq_pending"],
        fulfilled_count=s["wq_fulfilled"], max_requests_per_deposit=s["wq_max_per_deposit"],
        min_on_behalf=s["wq_min_on_behalf"], shares_held=s["wq_shares"], requests=open_,
    )


def find_blocks_at(client: RpcClient, timestamps: Sequence[int], head: BlockRef, floor: int = 0, *,
                   hints: Sequence[int] = (), fanout: int = 8, batch_size: int = 200,
                   max_rounds: int = 64) -> list[BlockRef | None]:
    """For each timestamp, the last block with time <= it (None when even block ``floor`` is
    later), all searched together: each round one batch of header requests (split at
    ``batch_size``), every answer narrowing every search.

    Each search probes where the block should be by interpolating its bracket's times, with a
    margin of a few square roots of the distance (block times vary), and the bracket's middle
    whenever the last round did not halve it; a bracket of at most ``fanout`` blocks is read
    whole. ``hints``: blocks worth reading in the first round (known to lie near the answers).
    A day's end on a chain of 2-second blocks takes about 13 headers in 6 rounds."""
    known: dict[int, BlockRef] = {head.number: head}
    found: dict[int, BlockRef | None] = {t: head for t in timestamps if t >= head.timestamp}
    searching = sorted({t for t in timestamps if t < head.timestamp})
    probes = {floor, *(h for h in hints if floor < h < head.number)} if searching and floor < head.number else set()
    widths: dict[int, int] = {}
    for _ in range(max_rounds):
        known.update(headers(client, sorted(probes), batch_size))
        probes = set()
        numbers = sorted(known)
        times = [known[n].timestamp for n in numbers]
        if any(b < a for a, b in itertools.pairwise(times)):
            raise PublisherError(f"{client.describe()} returned block times that go backwards")
        left = []
        for t in searching:
            i = bisect.bisect_right(times, t)  # the first known block later than t
            if i == 0:
                found[t] = None  # the floor itself is later
                continue
            lo, hi = known[numbers[i - 1]], known[numbers[i]]
            n = hi.number - lo.number
            if n == 1:
                found[t] = lo
                continue
            left.append(t)
            if n - 1 <= fanout:
                probes.update(range(lo.number + 1, hi.number))
                continue
            guess = lo.number + (t - lo.timestamp) * n // (hi.timestamp - lo.timestamp)
            guess = min(max(guess, lo.number + 1), hi.number - 2)
            margin = max(1, int(2 * math.sqrt(max(1, min(guess - lo.number, hi.number - guess)))))
            candidates = [guess - margin, guess, guess + 1, guess + margin + 1]
            if 2 * n > widths.get(t, 2 * n + 1):
                candidates.append((lo.number + hi.number) // 2)
            widths[t] = n
            probes.update(c for c in candidates if lo.number < c < hi.number)
        searching = left
        if not searching:
            return [found[t] for t in timestamps]
    raise PublisherError(f"finding the blocks of {len(searching)} times did not converge in {max_rounds} rounds")


def headers(client: RpcClient, numbers: Sequence[int], batch_size: int = 200) -> dict[int, BlockRef]:
    """Block number -> its header's reference, in batches of ``batch_size`` requests."""
    into: dict[int, BlockRef] = {}
    for k in range(0, len(numbers), batch_size):
        part = numbers[k : k + batch_size]
        answers = client.batch([("eth_getBlockByNumber", [hex(n), False]) for n in part])
        for n, h in zip(part, answers, strict=True):
            if h is None:
                raise PublisherError(f"{client.describe()} has no block {n}")
            into[n] = numbered(h, n, client)
    return into


def numbered(header, n: int, client: RpcClient) -> BlockRef:
    """The header asked for as block ``n``, checked to be that block's."""
    ref = header_ref(header, client)
    if ref.number != n:
        raise PublisherError(f"{client.describe()} answered block {ref.number} for block {n}")
    return ref


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (not name[i - 1].isupper() or (i + 1 < len(name) and name[i + 1].islower())):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def _hex(value: bytes) -> str:
    return "0x" + bytes(value).hex()


# How each field of the struct becomes the snapshot's: addresses checksummed, bytes as hex.
_MINIPOOL_FIELDS = tuple(checksum if typ == "address" else _hex if typ in ("bytes", "bytes32") else None
                         for _, typ in abis.MINIPOOL_FIELDS)


def _minipool_values(row) -> list:
    return [v if convert is None else convert(v) for convert, v in zip(_MINIPOOL_FIELDS, row, strict=True)]


def _request_values(answer) -> tuple:
    i, (requester, shares, expected, requested, claimable, expires, allocated), done = answer
    return i, checksum(requester), shares, expected, requested, claimable, expires, allocated, bool(done)


def _staker_values(answers) -> tuple:
    """The struct's fields, then the views, in the dataclass's declaration order."""
    row, effective, ratio, rewards_ratio, eligible = answers
    return (checksum(row[0]), *row[1:], effective, ratio, rewards_ratio, bool(eligible))
