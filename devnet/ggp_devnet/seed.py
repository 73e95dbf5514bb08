"""Deploy the devnet contracts and play a scenario onto the chain.

Every transaction is mined at a timestamp the scenario decides (``evm_setNextBlockTimestamp``),
from the same account and nonce sequence, so a scenario always yields the same blocks.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import rlp
from eth_abi import encode
from eth_utils import keccak, to_checksum_address

from publisher.chain import abis
from publisher.chain.abi import Fn
from publisher.chain.rpc import RpcClient
from publisher.errors import PublisherError

from . import scenarios
from .anvil import BLOCK_GAS_LIMIT
from .scenarios import DAY, WAD, Scenario

ARTIFACTS = Path(__file__).with_name("artifacts.json")
MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11"
DEPLOYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"  # first account of the fixed mnemonic
TX_GAS = 1_500_000_000
GGAVAX_CYCLE = 14 * DAY
STAKER_BATCH = 5000  # rows per setter transaction (few: see _seed_state)
MINIPOOL_BATCH = 2500
# Gas limits sized to the work, so a block's budget (anvil.BLOCK_GAS_LIMIT) holds them all.
STAKER_GAS = 300_000  # per new staker row: ten storage words and the index
MINIPOOL_GAS = 600_000  # per new minipool row: about twenty words and the index
SMALL_GAS = 200_000  # a one-word setter
SEND_BATCH = 500  # transactions per JSON-RPC batch inside one block
# Anvil handles a batch of up to 30 calls one after the other (futures' join_all polls that few in
# order) and a larger one in no set order: the most a batch from several senders may hold.
IN_ORDER_BATCH = 30
SEND_BATCH_BYTES = 8 << 20  # and at most this much hex calldata per batch
RECEIPT_BLOCKS = 50  # blocks of receipts per JSON-RPC batch

# Devnet-only setters (mainnet has no such functions; they exist to seed state).
register_contract = Fn("registerContract(string,address)")
set_paused = Fn("setPaused(string,bool)")
ggp_mint = Fn("mint(address,uint256)")
set_price = Fn("setGGPPriceInAVAX(uint256,uint256)")
update_answer = Fn("updateAnswer(int256,uint256)")
set_reserves = Fn("setReserves(uint112,uint112)")
pool_initialize = Fn("initialize()")
start_rewards_cycle = Fn("startRewardsCycle()")
deposit_for = Fn("depositFor(address,uint256)")
withdraw_for_staking = Fn("withdrawForStaking(uint256)")
deposit_from_staking = Fn("depositFromStaking(uint256,uint256)")
sync_rewards = Fn("syncRewards()")
set_stakers = Fn(f"setStakers({abis.STAKER}[])")
set_minipools = Fn(f"setMinipools({abis.MINIPOOL}[])")
set_total_ls = Fn("setTotalAVAXLiquidStakerAmt(uint256)")

# The exit path (mainnet signatures; depositWAVAX is the devnet pstAVAX's WAVAX deposit).
approve = Fn("approve(address,uint256)")
request_unstake = Fn("requestUnstake(uint256,uint48)")
queue_deposit = Fn("depositFromStaking(uint256,uint256,bytes32)")
wavax_mint = Fn("mint(address,uint256)")
pst_deposit_wavax = Fn("depositWAVAX(uint256)")
withdraw_via_queue = Fn("withdrawViaQueue(uint256,uint48)")
queue_request = Fn("requests(uint256)", "(address,uint256,uint256,uint48,uint48,uint48,uint256)")
seed_requests = Fn("seedRequests((address,uint256,uint48,uint48)[])")
set_unstake_delay = Fn("setUnstakeDelay(uint48)")
claim_unstake = Fn("claimUnstake(uint256)")
cancel_request = Fn("cancelRequest(uint256)")
reclaim_expired = Fn("reclaimExpiredRequest(uint256)")
cancel_all = Fn("cancelRequests(uint256)")
reclaim_all = Fn("reclaimExpiredFunds(uint256)")
set_max_per_deposit = Fn("setMaxRequestsPerStakingDeposit(uint256)")
pending_ids = Fn("getAllPendingRequests()", "uint256[]")
fulfilled_ids = Fn("getAllFulfilledRequests()", "uint256[]")
next_request_id = Fn("nextRequestId()", "uint256")
QUEUE_GAS = 2_000_000  # one request, claim, cancel or reclaim
SERVE_GAS = 30_000_000  # one depositor call: up to 50 redemptions
SEED_BATCH = 1000  # requests per seedRequests transaction
SEED_GAS = 300_000  # per seeded request: the record, two sets, the line
SEED_SOURCE = b"SEED".ljust(32, b"\0")
# The closed history (scenarios.QueuePlan.history): served with a raised per-call limit, closed in
# blocks of at most HISTORY_BLOCK transactions; gas per request closed or served in one call.
HISTORY_PER_CALL = 2500
HISTORY_BLOCK = 500
HISTORY_GAS = 400_000
MAX_UINT = 2**256 - 1

# Roles (mainnet signatures): ggAVAX's own and the queue's AccessControl.
grant_role = Fn("grantRole(bytes32,address)")
WITHDRAW_QUEUE_ROLE = keccak(text="WITHDRAW_QUEUE_ROLE")
STAKER_ROLE = keccak(text="STAKER_ROLE")
DEPOSITOR_ROLE = keccak(text="DEPOSITOR_ROLE")
PAUSER_ROLE = keccak(text="PAUSER_ROLE")

# The withdraw queue's parameters at deployment (mainnet sets unstakeDelay from a deployment
# variable; these are realistic picks, see scenarios.QUEUE_*).
QUEUE_ARGS = {"unstakeDelay": scenarios.QUEUE_UNSTAKE_DELAY, "maxExpirationDelay": scenarios.QUEUE_MAX_EXPIRATION_DELAY}

# name -> constructor argument names, in deployment order (the order fixes the addresses: new
# contracts go at the end so the earlier ones keep theirs).
DEPLOY_ORDER = (
    ("Storage", ()),
    ("TokenGGP", ("Storage",)),
    ("WAVAX", ("Storage",)),
    ("ProtocolDAO", ("Storage",)),
    ("Oracle", ("Storage",)),
    ("TokenggAVAX", ("Storage", "WAVAX", "cycle")),
    ("Staking", ("Storage",)),
    ("MinipoolManager", ("Storage",)),
    ("RewardsPool", ("Storage",)),
    ("ClaimNodeOp", ("Storage",)),
    ("PriceFeed", ("decimals", "description")),
    ("DexPair", ("TokenGGP", "WAVAX")),
    ("WithdrawQueue", ("TokenggAVAX", "WAVAX", "Storage", "unstakeDelay", "maxExpirationDelay")),
    ("TokenpstAVAX", ("TokenggAVAX", "WAVAX", "WithdrawQueue")),
)
REGISTERED = ("TokenGGP", "WAVAX", "ProtocolDAO", "Oracle", "TokenggAVAX", "Staking", "MinipoolManager", "RewardsPool", "ClaimNodeOp")


def load_artifacts() -> dict:
    if not ARTIFACTS.is_file():
        raise PublisherError(f"{ARTIFACTS} is missing: run `npm run compile`")
    return json.loads(ARTIFACTS.read_text())["contracts"]


@contextmanager
def manual_mining(client: RpcClient) -> Iterator[None]:
    """Automine off while seeding, back on afterwards for whoever uses the devnet next.

    Anvil's automine answers eth_sendTransaction before the block is sealed, so a following
    evm_setNextBlockTimestamp could land on the previous block when the node is busy (the scale
    scenario's batch setters): mining explicitly makes every block's time, and so the chain,
    independent of the node's speed.
    """
    client.request("evm_setAutomine", [False])
    try:
        yield
    finally:
        client.request("evm_setAutomine", [True])


@dataclass
class Sender:
    """Sends transactions from the deployer, mines them at chosen timestamps, checks every receipt.

    Each transaction gets its own block two seconds after the previous one, except inside
    ``one_block``. Used under ``manual_mining``.
    """

    client: RpcClient
    clock: int = 0
    pending: list[tuple[str, str]] = field(default_factory=list)
    grouping: bool = False
    group_time: int = 0  # the timestamp asked for the block ``one_block`` is filling
    queued: list[tuple[dict, str]] = field(default_factory=list)  # inside one_block, not yet sent

    def at(self, timestamp: int) -> None:
        # Strictly increasing: a block may not share its parent's time.
        self.clock = max(timestamp, self.clock + 1)

    def send(self, to: str | None, data: bytes, what: str, gas: int = TX_GAS, sender: str = DEPLOYER) -> None:
        """Send from ``sender`` (the deployer unless a holder acts for itself, see allow_any_sender)."""
        tx = {"from": sender, "data": "0x" + data.hex(), "gas": hex(gas)}
        if sender.lower() != DEPLOYER.lower():
            tx["gasPrice"] = "0x0"  # a holder may have no AVAX (the deployer's own transactions keep their form)
        if to:
            tx["to"] = to
        if self.grouping:
            self.queued.append((tx, what))
            return
        self.pending.append((self.client.request("eth_sendTransaction", [tx]), what))
        self.mine(self.clock + 2)

    def next_block_time(self) -> int:
        """When the block the next transaction lands in will be sealed: what a price update dates
        itself (a feed round or oracle price dated after its own block is refused by readers)."""
        return max(self.group_time, self.clock + 1) if self.grouping else self.clock + 2

    def mine(self, timestamp: int) -> None:
        """Seal the pending transactions (or an empty block) at ``timestamp`` or just after."""
        self.at(timestamp)
        self.client.request("evm_setNextBlockTimestamp", [hex(self.clock)])
        self.client.request("evm_mine", [])

    @contextmanager
    def one_block(self, timestamp: int) -> Iterator[None]:
        """Everything sent inside goes into a single block at ``timestamp``.

        Anvil copies the whole state for every block it keeps in history, so on a large state
        many small transactions are far cheaper in one block than in one block each. They are
        sent in JSON-RPC batches, with explicit nonces so the block's order is the order sent
        whatever order the node handles a batch in.
        """
        self.grouping, self.group_time = True, timestamp
        try:
            yield
        finally:
            self.grouping = False
        self._flush()
        self.mine(timestamp)

    def flush(self) -> None:
        """Inside ``one_block``: hand what was sent so far to the node's pool without mining, so
        reads at the "pending" block see it."""
        self._flush()

    def _flush(self) -> None:
        queued, self.queued = self.queued, []
        if not queued:
            return
        senders = list(dict.fromkeys(tx["from"].lower() for tx, _ in queued))
        counts = self.client.batch([("eth_getTransactionCount", [who, "pending"]) for who in senders])
        nonce = {who: int(n, 16) for who, n in zip(senders, counts, strict=True)}
        # The block's order is the order sent: one sender's transactions keep it by their nonces,
        # a batch from several senders by being small enough for the node to take in order
        # (``check`` verifies both), and each batch is in the pool before the next is sent.
        part: list[tuple[dict, str]] = []
        in_part: set[str] = set()  # the part's senders
        size = 0

        def send() -> None:
            hashes = self.client.batch([("eth_sendTransaction", [t]) for t, _ in part])
            self.pending.extend((h, w) for h, (_, w) in zip(hashes, part, strict=True))

        for tx, what in queued:
            who = tx["from"].lower()
            most = SEND_BATCH if in_part <= {who} else IN_ORDER_BATCH
            if part and (size >= SEND_BATCH_BYTES or len(part) >= most):
                send()
                part, in_part, size = [], set(), 0
            part.append(({**tx, "nonce": hex(nonce[who])}, what))
            nonce[who] += 1
            size += len(tx["data"])
            in_part.add(who)
        if part:
            send()

    def check(self) -> list[dict]:
        """Receipts of everything sent so far; a revert names the step that caused it.

        Read a block at a time: anvil answers each eth_getTransactionReceipt by walking its
        block, so one by one they cost the square of a large block's transaction count."""
        if not self.pending:
            return []
        first, last = (int(r["blockNumber"], 16) for r in self._receipts([self.pending[0][0], self.pending[-1][0]]))
        by_hash: dict[str, dict] = {}
        for i in range(first, last + 1, RECEIPT_BLOCKS):
            calls = [("eth_getBlockReceipts", [hex(n)]) for n in range(i, min(i + RECEIPT_BLOCKS, last + 1))]
            by_hash.update((r["transactionHash"], r) for block in self.client.batch(calls) for r in block or [])
        receipts = []
        place = (-1, -1)
        for h, what in self.pending:
            r = by_hash.get(h)
            if r is None:
                raise PublisherError(f"devnet seeding failed at: {what} (tx {h} was not mined)")
            if r.get("status") != "0x1":
                raise PublisherError(f"devnet seeding failed at: {what} (tx {h})")
            was, place = place, (int(r["blockNumber"], 16), int(r["transactionIndex"], 16))
            if place <= was:  # the chain would then depend on the node's timing
                raise PublisherError(f"devnet seeding failed at: {what} (tx {h} mined out of the order sent)")
            receipts.append(r)
        self.pending.clear()
        return receipts

    def _receipts(self, hashes: list[str]) -> list[dict]:
        # Blocks are sealed before this runs; the short poll only covers a node that indexes
        # receipts asynchronously.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = self.client.batch([("eth_getTransactionReceipt", [h]) for h in hashes])
            if all(got):
                return got
            time.sleep(0.05)
        raise PublisherError("devnet did not mine the seeding transactions")


def deploy(client: RpcClient, start: int) -> dict[str, str]:
    """Deploy every contract, register the protocol ones in Storage, install Multicall3."""
    artifacts = load_artifacts()
    sender = Sender(client, clock=start)
    addresses: dict[str, str] = {}
    with manual_mining(client):
        for name, args in DEPLOY_ORDER:
            values = [_ctor_arg(a, addresses) for a in args]
            types = [_ctor_type(a) for a in args]
            code = bytes.fromhex(artifacts[name]["bytecode"][2:]) + (encode(types, values) if args else b"")
            sender.send(None, code, f"deploy {name}")
        for (name, _), receipt in zip(DEPLOY_ORDER, sender.check(), strict=True):
            addresses[name] = to_checksum_address(receipt["contractAddress"])
        for name in REGISTERED:
            sender.send(addresses["Storage"], register_contract.encode(name, addresses[name]), f"register {name}")
        grant_roles(sender, addresses)
        sender.check()
    client.request("anvil_setCode", [MULTICALL3, artifacts["Multicall3"]["deployedBytecode"]])
    addresses["Multicall3"] = MULTICALL3
    allow_any_sender(client)
    return addresses


def grant_roles(sender: Sender, a: dict[str, str]) -> None:
    """Wire the queue as on mainnet: ggAVAX lets it redeem (WITHDRAW_QUEUE_ROLE) and deposit from
    staking (STAKER_ROLE); the deployer, which plays the protocol's operator, is the queue's
    depositor and pauser (its admin already, as the queue's deployer)."""
    sender.send(a["TokenggAVAX"], grant_role.encode(WITHDRAW_QUEUE_ROLE, a["WithdrawQueue"]), "grant WITHDRAW_QUEUE_ROLE")
    sender.send(a["TokenggAVAX"], grant_role.encode(STAKER_ROLE, a["WithdrawQueue"]), "grant STAKER_ROLE")
    sender.send(a["WithdrawQueue"], grant_role.encode(DEPOSITOR_ROLE, DEPLOYER), "grant DEPOSITOR_ROLE")
    sender.send(a["WithdrawQueue"], grant_role.encode(PAUSER_ROLE, DEPLOYER), "grant PAUSER_ROLE")


def allow_any_sender(client: RpcClient) -> None:
    """Holders act for themselves (request, claim, cancel): anvil signs for any address, and with
    gas priced at zero (anvil.py) an address needs no balance to send."""
    client.request("anvil_autoImpersonateAccount", [True])


def _ctor_arg(arg: str, addresses: dict[str, str]):
    if arg == "cycle":
        return GGAVAX_CYCLE
    if arg == "decimals":
        return 8
    if arg == "description":
        return "AVAX / USD"
    if arg in QUEUE_ARGS:
        return QUEUE_ARGS[arg]
    return _predicted(arg, addresses)


def _ctor_type(arg: str) -> str:
    return {"cycle": "uint32", "decimals": "uint8", "description": "string",
            "unstakeDelay": "uint48", "maxExpirationDelay": "uint48"}.get(arg, "address")


def _predicted(name: str, addresses: dict[str, str]) -> str:
    """Address of an earlier deployment, known before receipts are read (CREATE: sender+nonce)."""
    if name in addresses:
        return addresses[name]
    nonce = [n for n, _ in DEPLOY_ORDER].index(name)
    return contract_address(DEPLOYER, nonce)


def contract_address(sender: str, nonce: int) -> str:
    return to_checksum_address(keccak(rlp.encode([bytes.fromhex(sender[2:]), nonce]))[-20:])


def seed(client: RpcClient, addresses: dict[str, str], sc: Scenario) -> None:
    """Play the scenario: history first (prices, vault, reward cycles), then the current state."""
    with manual_mining(client):
        _play(Sender(client, clock=sc.start), addresses, sc)


def _play(s: Sender, a: dict[str, str], sc: Scenario) -> None:
    send = s.send
    s.at(sc.start)
    send(a["TokenGGP"], ggp_mint.encode(scenarios.TREASURY, 18_000_000 * WAD), "mint GGP supply")
    send(a["RewardsPool"], pool_initialize.encode(), "RewardsPool.initialize")
    for name, paused in sc.paused.items():
        send(a["Storage"], set_paused.encode(name, paused), f"pause {name}")
    for who, amt in sc.deposits:
        send(a["TokenggAVAX"], deposit_for.encode(who, amt), "ggAVAX deposit")
    if sc.queue and sc.queue.provided:
        send(a["TokenggAVAX"], deposit_for.encode(DEPLOYER, sc.queue.provided), "ggAVAX for the seeded queue requests")
    send(a["TokenggAVAX"], sync_rewards.encode(), "first ggAVAX sync")
    if sc.queue and sc.queue.history():
        _seed_history(s, a, sc.queue)  # while the whole vault is liquid and a share is worth one AVAX
    _play_days(s, a, sc)
    if sc.queue:
        _seed_queue(s, a, sc)
    _seed_state(s, a, sc)


def _play_days(s: Sender, a: dict[str, str], sc: Scenario) -> None:
    """The history's days: each day's prices, DEX reserves and vault moves, a GGP rewards cycle
    started every 30 days, ggAVAX synced whenever its cycle ends (and once more before ``now``)."""
    send = s.send
    cycle_end = (s.clock + GGAVAX_CYCLE) // GGAVAX_CYCLE * GGAVAX_CYCLE
    ls_total = sum(m["avaxLiquidStakerAmt"] for m in sc.active_pools())
    daily_reward = int(ls_total * sc.validator_rate / 365)
    for day, (t, ggp_price, avax_usd) in enumerate(sc.prices):
        # A day's business in one block: anvil's work per block grows with the whole state (the
        # queue's history is already in it), its work per transaction does not.
        with s.one_block(t):
            send(a["Oracle"], set_price.encode(ggp_price, s.next_block_time()), "oracle price")
            send(a["PriceFeed"], update_answer.encode(avax_usd, s.next_block_time()), "AVAX/USD round")
            reserve_ggp = 400_000 * WAD
            dex_price = ggp_price * (1000 + (day % 7) - 3) // 1000
            send(a["DexPair"], set_reserves.encode(*_reserves(a, reserve_ggp, reserve_ggp * dex_price // WAD)), "DEX reserves")
            if day % 30 == 1:
                send(a["RewardsPool"], start_rewards_cycle.encode(), "start rewards cycle")
            if day == 2:
                send(a["TokenggAVAX"], withdraw_for_staking.encode(ls_total), "ggAVAX out to minipools")
            if day >= 3:
                send(a["TokenggAVAX"], deposit_from_staking.encode(0, daily_reward), "ggAVAX staking rewards")
        # A due sync in a block of its own after the day's: the chain keeps a block past the
        # stream's end that the sync has not restarted (readers must handle that state).
        if s.clock + 2 >= cycle_end:
            send(a["TokenggAVAX"], sync_rewards.encode(), "ggAVAX sync")
            cycle_end = (s.clock + GGAVAX_CYCLE) // GGAVAX_CYCLE * GGAVAX_CYCLE
    s.check()
    s.at(sc.now - 60)
    if s.clock + 2 >= cycle_end:
        send(a["TokenggAVAX"], sync_rewards.encode(), "ggAVAX sync")
    s.check()


def _seed_queue(s: Sender, a: dict[str, str], sc: Scenario) -> None:
    """Write the queue's history (scenarios.QueuePlan) in the blocks just before ``sc.now``, then
    check the chain holds what the plan says."""
    q = sc.queue
    assert q is not None
    queue, gg = a["WithdrawQueue"], a["TokenggAVAX"]
    seeded = [r for r in q.requests if r.via == "seed"]
    old = [r for r in seeded if r.unstake_delay == q.launch_unstake_delay]
    new = [r for r in seeded if r.unstake_delay != q.launch_unstake_delay]

    def by_holder(reqs: list[scenarios.QueueRequest], fate: str, served: bool) -> None:
        for r in reqs:
            if r.fate == fate and r.served == served:
                if fate == "reclaimed":  # anyone may: the deployer does
                    s.send(queue, reclaim_expired.encode(r.id), f"reclaim request {r.id}", QUEUE_GAS)
                else:
                    fn = claim_unstake if fate == "claimed" else cancel_request
                    s.send(queue, fn.encode(r.id), f"{fate} request {r.id}", QUEUE_GAS, sender=r.requester)

    # Six blocks ending at q.seeded_at, the many small transactions apart from the few that log a
    # lot (anvil's receipts for a block cost its transactions times its logs).
    t = q.seeded_at - 5
    with s.one_block(t):
        if seeded:
            s.send(gg, approve.encode(queue, MAX_UINT), "approve the queue", QUEUE_GAS)
        s.send(queue, set_unstake_delay.encode(q.launch_unstake_delay), "launch unstake delay", QUEUE_GAS)
        _seed_requests(s, queue, old)
    with s.one_block(t + 1):
        by_holder(old, "cancelled", False)
        by_holder(old, "reclaimed", False)
    with s.one_block(t + 2):
        # Every old request still pending is served; closed ones are stale entries in the line.
        for _ in range(len(old) // q.max_per_deposit + 1):
            s.send(queue, queue_deposit.encode(0, 0, SEED_SOURCE), "serve the line", SERVE_GAS)
    with s.one_block(t + 3):
        by_holder(old, "claimed", True)
        by_holder(old, "cancelled", True)
        by_holder(old, "reclaimed", True)
    with s.one_block(t + 4):
        s.send(queue, set_unstake_delay.encode(q.unstake_delay), "lower the unstake delay", QUEUE_GAS)
        _seed_requests(s, queue, new)
    with s.one_block(q.seeded_at):
        by_holder(new, "cancelled", False)
        by_holder(new, "reclaimed", False)
        for user, amount in q.pst_deposits:
            s.send(a["WAVAX"], wavax_mint.encode(user, amount), "WAVAX for a pstAVAX holder", QUEUE_GAS)
            s.send(a["WAVAX"], approve.encode(a["TokenpstAVAX"], amount), "approve pstAVAX", QUEUE_GAS, sender=user)
            s.send(a["TokenpstAVAX"], pst_deposit_wavax.encode(amount), "pstAVAX deposit", QUEUE_GAS, sender=user)
        for r in q.requests:
            if r.via in ("direct", "pst"):  # not the "seed" ones, nor the closed history
                _file(s, a, r)
    s.check()
    _check_queue(s.client, a, q)


def _seed_history(s: Sender, a: dict[str, str], q: scenarios.QueuePlan) -> None:
    """The queue's closed history (scenarios._closed_history), real logs of every step in a few
    blocks at ``q.history_at``: the requests filed for their requesters; those cancelled while
    pending cancelled by their requesters (cancelRequests: one transaction each); the line served
    whole (its stale entries dropped) in calls of HISTORY_PER_CALL steps; the claims, one
    transaction each, in blocks of HISTORY_BLOCK; the cancels after funding; one reclaim of every
    expired request (reclaimExpiredFunds). The day's other blocks come before and after."""
    queue, gg = a["WithdrawQueue"], a["TokenggAVAX"]
    history = q.history()
    mine: dict[tuple[str, bool], list[int]] = {}
    for r in history:
        if r.fate == "cancelled":
            mine.setdefault((r.requester, r.served), []).append(r.id)

    def cancels(served: bool) -> None:
        for (who, funded), ids in mine.items():
            if funded == served:
                s.send(queue, cancel_all.encode(0), f"cancel requests {ids[0]}..", HISTORY_GAS * len(ids) + SMALL_GAS, sender=who)

    with s.one_block(q.history_at):
        s.send(gg, approve.encode(queue, MAX_UINT), "approve the queue", QUEUE_GAS)
        s.send(queue, set_max_per_deposit.encode(HISTORY_PER_CALL), "serve the history in few calls", QUEUE_GAS)
        _seed_requests(s, queue, history)
    with s.one_block(s.clock + 1):
        cancels(served=False)
    with s.one_block(s.clock + 1):
        for _ in range(len(history) // HISTORY_PER_CALL + 1):
            s.send(queue, queue_deposit.encode(0, 0, SEED_SOURCE), "serve the history", HISTORY_GAS * HISTORY_PER_CALL)
        s.send(queue, set_max_per_deposit.encode(q.max_per_deposit), "the per-call limit back", QUEUE_GAS)
    claims = [r for r in history if r.fate == "claimed"]
    for k in range(0, len(claims), HISTORY_BLOCK):
        with s.one_block(s.clock + 1):
            for r in claims[k : k + HISTORY_BLOCK]:
                s.send(queue, claim_unstake.encode(r.id), f"claim request {r.id}", QUEUE_GAS, sender=r.requester)
    with s.one_block(s.clock + 1):
        cancels(served=True)
        reclaimed = sum(1 for r in history if r.fate == "reclaimed")
        s.send(queue, reclaim_all.encode(0), "reclaim the expired history", HISTORY_GAS * reclaimed + SMALL_GAS)
    s.check()


def _seed_requests(s: Sender, queue: str, reqs: list[scenarios.QueueRequest]) -> None:
    items = [(r.requester, r.shares, r.request_time, r.expiration_delay) for r in reqs]
    for i in range(0, len(items), SEED_BATCH):
        part = items[i : i + SEED_BATCH]
        s.send(queue, seed_requests.encode(part), f"seed requests {reqs[i].id}..", SEED_GAS * len(part) + SMALL_GAS)


def _file(s: Sender, a: dict[str, str], r: scenarios.QueueRequest) -> None:
    if r.via == "pst":
        s.send(a["TokenpstAVAX"], withdraw_via_queue.encode(r.pst_assets, r.expiration_delay), f"request {r.id} via pstAVAX",
               QUEUE_GAS, sender=r.requester)
        return
    s.send(a["TokenggAVAX"], approve.encode(a["WithdrawQueue"], r.shares), "approve the queue", QUEUE_GAS, sender=r.requester)
    s.send(a["WithdrawQueue"], request_unstake.encode(r.shares, r.expiration_delay), f"request {r.id}", QUEUE_GAS, sender=r.requester)


def _check_queue(client: RpcClient, a: dict[str, str], q: scenarios.QueuePlan) -> None:
    """The chain holds the plan: the same ids issued, the same pending and fulfilled sets, and
    the vault's liquidity covers exactly the first ``q.covered`` pending requests. pstAVAX
    requests' shares (the token's to work out) are filled into the plan."""
    queue, gg = a["WithdrawQueue"], a["TokenggAVAX"]
    front = sorted(r.id for r in q.requests if r.fate == "pending")[: q.covered + 1]
    pst = [r for r in q.requests if r.via == "pst"]
    calls: list[tuple[str, Fn, tuple]] = [(queue, next_request_id, ()), (queue, pending_ids, ()), (queue, fulfilled_ids, ()),
             (gg, Fn("totalAssets()", "uint256"), ()), (gg, Fn("stakingTotalAssets()", "uint256"), ())]
    calls += [(queue, queue_request, (i,)) for i in front] + [(queue, queue_request, (r.id,)) for r in pst]
    raw = client.batch([("eth_call", [{"to": to, "data": "0x" + fn.encode(*args).hex()}, "latest"]) for to, fn, args in calls])
    got = [fn.decode(bytes.fromhex(r[2:])) for (_, fn, _), r in zip(calls, raw, strict=True)]
    issued, pending, fulfilled, assets, staking = got[:5]
    front_rows, pst_rows = got[5 : 5 + len(front)], got[5 + len(front) :]

    def fail(what: str) -> PublisherError:
        return PublisherError(f"devnet seeding: the withdraw queue does not hold its plan: {what}")

    if issued != len(q.requests):
        raise fail(f"{issued} requests issued, not {len(q.requests)}")
    if set(pending) != {r.id for r in q.requests if r.fate == "pending"}:
        raise fail("the pending set differs")
    if set(fulfilled) != {r.id for r in q.requests if r.fate == "fulfilled"}:
        raise fail("the fulfilled set differs")
    for r, row in zip(pst, pst_rows, strict=True):
        if row[0].lower() != r.requester.lower():
            raise fail(f"request {r.id} belongs to {row[0]}, not {r.requester}")
        r.shares = row[1]
    liquid = max(0, assets - staking)
    need = [row[2] for row in front_rows]
    if not sum(need[: q.covered]) <= liquid < sum(need):
        raise fail(f"liquidity {liquid} should cover the first {q.covered} pending requests ({need}) and no more")


def _seed_state(s: Sender, a: dict[str, str], sc: Scenario) -> None:
    """Write stakers and minipools, each in its final status, in the last block, at ``sc.now``.

    Anvil's work per block grows with the whole state, and its work per receipt with the
    transactions of the block: so the large state goes into as few blocks (one, up to
    anvil.BLOCK_GAS_LIMIT) and as few transactions as possible, and seeding grows linearly with
    the size.
    """
    txs = []
    rows = [tuple(st[k] for k, _ in abis.STAKER_FIELDS) for st in sc.stakers]
    for i in range(0, len(rows), STAKER_BATCH):
        part = rows[i : i + STAKER_BATCH]
        txs.append((a["Staking"], set_stakers.encode(part), f"stakers {i}..", len(part) * STAKER_GAS))
    pools = [tuple(m[k] for k, _ in abis.MINIPOOL_FIELDS) for m in sc.minipools]
    for i in range(0, len(pools), MINIPOOL_BATCH):
        part = pools[i : i + MINIPOOL_BATCH]
        txs.append((a["MinipoolManager"], set_minipools.encode(part), f"minipools {i}..", len(part) * MINIPOOL_GAS))
    ls_total = sum(m["avaxLiquidStakerAmt"] for m in sc.active_pools())
    txs.append((a["MinipoolManager"], set_total_ls.encode(ls_total), "LS total", SMALL_GAS))
    blocks = _by_gas(txs, BLOCK_GAS_LIMIT)
    for k, block in enumerate(blocks):
        with s.one_block(sc.now - (len(blocks) - 1 - k)):
            for to, data, what, gas in block:
                s.send(to, data, what, gas)
    s.check()


def _by_gas(txs: list, budget: int) -> list[list]:
    """Consecutive groups of transactions whose gas limits fit one block each."""
    blocks: list[list] = [[]]
    used = 0
    for tx in txs:
        if blocks[-1] and used + tx[-1] > budget:
            blocks.append([])
            used = 0
        blocks[-1].append(tx)
        used += tx[-1]
    return blocks


def _reserves(a: dict[str, str], ggp: int, wavax: int) -> tuple[int, int]:
    return (ggp, wavax) if int(a["TokenGGP"], 16) < int(a["WAVAX"], 16) else (wavax, ggp)
