"""The protocol operator: the transactions the protocol's multisig (Rialto) sends, on the devnet.

Rialto works off-chain and calls the contracts: it starts each GGP rewards cycle and distributes it
to every eligible staker with one total eligible stake (TEGS), launches, starts, ends and cycles
minipools and reports the AVAX rewards the network paid, syncs ggAVAX rewards. ``Operator`` does
the same against the devnet contracts, each call mined at a timestamp the caller chooses
(``Sender``), so a scenario replays to the same chain.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from publisher.chain import abis
from publisher.chain.abi import Fn
from publisher.chain.rpc import RpcClient, RpcError

from . import seed as seed_fns
from .seed import (
    DEPLOYER,
    QUEUE_GAS,
    SERVE_GAS,
    Sender,
    approve,
    cancel_request,
    claim_unstake,
    fulfilled_ids,
    pending_ids,
    pst_deposit_wavax,
    queue_request,
    reclaim_expired,
    request_unstake,
    wavax_mint,
    withdraw_via_queue,
)

WAD = 10**18
NAVAX = 10**9
YEAR = 365 * 86_400

# Rialto's calls (mainnet signatures where mainnet has them; owner_ is the devnet's stand-in for msg.sender).
start_rewards_cycle = Fn("startRewardsCycle()")
distribute = Fn("calculateAndDistributeRewards(address,uint256)")
create_minipool = Fn("createMinipool(address,address,uint256,uint256,uint256)")
cancel_minipool = Fn("cancelMinipool(address)")
claim_and_initiate = Fn("claimAndInitiateStaking(address)")
record_start = Fn("recordStakingStart(address,bytes32,uint256)")
record_end = Fn("recordStakingEnd(address,uint256,uint256)")
record_end_cycle = Fn("recordStakingEndThenMaybeCycle(address,uint256,uint256)")
record_error = Fn("recordStakingError(address,bytes32)")
withdraw_funds = Fn("withdrawMinipoolFunds(address)")
stake_ggp_for = Fn("stakeGGPFor(address,uint256)")
sync_rewards = Fn("syncRewards()")
deposit_for = Fn("depositFor(address,uint256)")
# The withdraw queue and pstAVAX: the seeder's signatures, and the depositor's call and the pause.
serve_line = seed_fns.queue_deposit
pause_queue = Fn("pause()")
unpause_queue = Fn("unpause()")
queue_paused = abis.wq_paused
REQUEST_FIELDS = ("requester", "shares", "expectedAssets", "requestTime", "claimableTime", "expirationTime", "allocatedFunds")
set_price = Fn("setGGPPriceInAVAX(uint256,uint256)")
update_answer = Fn("updateAnswer(int256,uint256)")
set_paused = Fn("setPaused(string,bool)")
ggp_rewards = Fn("getGGPRewards(address)", "uint256")


def network_reward(avax_staked_wei: int, seconds: int, rate_bp: int) -> int:
    """What the primary network pays a validator: the potential reward the validator APIs report
    for its stake and period (nAVAX, rounded down), in wei. The devnet pays exactly this."""
    stake = avax_staked_wei // NAVAX
    return stake * rate_bp * seconds // (10_000 * YEAR) * NAVAX


@dataclass
class Distribution:
    """One GGP rewards distribution as sent: when, the cycle's node-operator total, TEGS, and each
    eligible staker's reward (read back from the chain as the change in its ggpRewards)."""

    time: int
    cycle: int
    nodeop_total: int
    tegs: int
    paid: dict[str, int]


class Operator:
    def __init__(self, client: RpcClient, addresses: dict[str, str], sender: Sender):
        self.client = client
        self.a = addresses
        self.s = sender
        self._held: dict[str, int] | None = None  # settings read while settings_held

    @contextmanager
    def settings_held(self) -> Iterator[None]:
        """Inside, each ProtocolDAO setting is read once: the operator never changes one, so within
        one of its steps (nobody else acting) a second read would answer the same."""
        if self._held is not None:  # nested: the outer hold goes on
            yield
            return
        self._held = {}
        try:
            yield
        finally:
            self._held = None

    # ---- reads (at the latest block) ----

    def call(self, name: str, fn: Fn, *args, block="latest"):
        data = self.client.request("eth_call", [{"to": self.a[name], "data": "0x" + fn.encode(*args).hex()},
                                                block if isinstance(block, str) else hex(block)])
        return fn.decode(bytes.fromhex(data[2:]))

    def calls(self, items: list[tuple[str, Fn, tuple]]) -> list:
        return self.calls_at("latest", items)

    def calls_at(self, block: str, items: list[tuple[str, Fn, tuple]]) -> list:
        raw = self.client.batch([("eth_call", [{"to": self.a[n], "data": "0x" + fn.encode(*args).hex()}, block])
                                 for n, fn, args in items])
        return [fn.decode(bytes.fromhex(r[2:])) for (_, fn, _), r in zip(items, raw, strict=True)]

    def setting(self, name: str) -> int:
        """A ProtocolDAO uint setting by name (e.g. "MinipoolCycleDuration")."""
        if self._held is not None and name in self._held:
            return self._held[name]
        value = self.call("ProtocolDAO", Fn(f"get{name}()", "uint256"))
        if self._held is not None:
            self._held[name] = value
        return value

    def stakers(self) -> list[dict]:
        rows = self.call("Staking", abis.getStakers, 0, 0)
        return [dict(zip((k for k, _ in abis.STAKER_FIELDS), row, strict=True)) for row in rows]

    def minipools(self) -> list[dict]:
        count = self.call("MinipoolManager", abis.getMinipoolCount)
        rows = self.calls([("MinipoolManager", abis.getMinipool, (i,)) for i in range(count)])
        return [dict(zip((k for k, _ in abis.MINIPOOL_FIELDS), row, strict=True)) for row in rows]

    # ---- GGP rewards ----

    def eligible_stakes(self, when: int) -> dict[str, int]:
        """Effective GGP stake of every staker ClaimNodeOp.isEligible would accept at ``when``
        (worked out off-chain, as Rialto does, from the state at the latest block)."""
        min_seconds = self.setting("RewardsEligibilityMinSeconds")
        eligible = [st["stakerAddr"] for st in self.stakers()
                    if st["rewardsStartTime"] != 0 and st["rewardsStartTime"] <= when
                    and when - st["rewardsStartTime"] >= min_seconds and st["avaxValidatingHighWater"] > 0]
        stakes = self.calls([("Staking", abis.getEffectiveGGPStaked, (addr,)) for addr in eligible])
        return dict(zip(eligible, stakes, strict=True))

    def distribute_rewards(self, when: int) -> Distribution:
        """Start the next rewards cycle and distribute it to every eligible staker, all in one
        block at ``when``: TEGS = Σ effective stake of the eligible stakers."""
        stakes = self.eligible_stakes(when)
        tegs = sum(stakes.values())
        before = self.calls([("Staking", ggp_rewards, (addr,)) for addr in stakes])
        with self.s.one_block(when):
            self.s.send(self.a["RewardsPool"], start_rewards_cycle.encode(), "startRewardsCycle")
            if tegs:
                for addr in stakes:
                    self.s.send(self.a["ClaimNodeOp"], distribute.encode(addr, tegs), f"distribute to {addr}")
        self.s.check()
        after = self.calls([("Staking", ggp_rewards, (addr,)) for addr in stakes])
        cycle = self.call("RewardsPool", abis.getRewardsCycleCount)
        total = self.call("ClaimNodeOp", abis.getRewardsCycleTotal)
        paid = {addr: a - b for addr, a, b in zip(stakes, after, before, strict=True)}
        return Distribution(self.s.clock, cycle, total, tegs, paid)

    # ---- minipools ----

    def send(self, contract: str, data: bytes, what: str) -> None:
        self.s.send(self.a[contract], data, what)

    def create_minipool(self, owner: str, node_id: str, duration: int, avax: int, fee: int = 20_000) -> None:
        self.send("MinipoolManager", create_minipool.encode(owner, node_id, duration, fee, avax), f"create {node_id}")

    def launch(self, node_id: str) -> None:
        self.send("MinipoolManager", claim_and_initiate.encode(node_id), f"launch {node_id}")

    def start(self, node_id: str, tx_id: bytes, start_time: int) -> None:
        self.send("MinipoolManager", record_start.encode(node_id, tx_id, start_time), f"start {node_id}")

    def end(self, node_id: str, end_time: int, reward: int) -> None:
        """End the validation period; the contract cycles the pool when its duration has room."""
        self.send("MinipoolManager", record_end_cycle.encode(node_id, end_time, reward), f"end {node_id}")

    def end_only(self, node_id: str, end_time: int, reward: int) -> None:
        self.send("MinipoolManager", record_end.encode(node_id, end_time, reward), f"end {node_id} (no cycle)")

    def error(self, node_id: str, code: bytes = b"EC2") -> None:
        self.send("MinipoolManager", record_error.encode(node_id, code.ljust(32, b"\0")), f"error {node_id}")

    def cancel(self, node_id: str) -> None:
        self.send("MinipoolManager", cancel_minipool.encode(node_id), f"cancel {node_id}")

    def withdraw(self, node_id: str) -> None:
        self.send("MinipoolManager", withdraw_funds.encode(node_id), f"withdraw {node_id}")

    # ---- others ----

    def stake_ggp(self, staker: str, amount: int) -> None:
        self.send("Staking", stake_ggp_for.encode(staker, amount), f"stake GGP for {staker}")

    def sync_ggavax(self) -> None:
        self.send("TokenggAVAX", sync_rewards.encode(), "ggAVAX syncRewards")

    def deposit(self, who: str, assets: int) -> None:
        self.send("TokenggAVAX", deposit_for.encode(who, assets), "ggAVAX deposit")

    # ---- the withdraw queue ----

    def request_unstake(self, who: str, shares: int, expiration_delay: int = 0) -> None:
        """A holder leaves through the queue (the only exit): approve, then file the request."""
        self.s.send(self.a["TokenggAVAX"], approve.encode(self.a["WithdrawQueue"], shares), "approve the queue", QUEUE_GAS, sender=who)
        self.s.send(self.a["WithdrawQueue"], request_unstake.encode(shares, expiration_delay), "queue request", QUEUE_GAS, sender=who)

    def pst_deposit(self, who: str, amount: int) -> None:
        """A holder puts WAVAX into pstAVAX (the deployer mints the WAVAX: the devnet moves no AVAX)."""
        self.send("WAVAX", wavax_mint.encode(who, amount), "WAVAX for a pstAVAX holder")
        self.s.send(self.a["WAVAX"], approve.encode(self.a["TokenpstAVAX"], amount), "approve pstAVAX", QUEUE_GAS, sender=who)
        self.s.send(self.a["TokenpstAVAX"], pst_deposit_wavax.encode(amount), "pstAVAX deposit", QUEUE_GAS, sender=who)

    def pst_withdraw_via_queue(self, who: str, assets: int, expiration_delay: int = 0) -> None:
        self.s.send(self.a["TokenpstAVAX"], withdraw_via_queue.encode(assets, expiration_delay), "pstAVAX via the queue",
                    QUEUE_GAS, sender=who)

    def claim(self, who: str, request_id: int) -> None:
        self.s.send(self.a["WithdrawQueue"], claim_unstake.encode(request_id), f"claim request {request_id}", QUEUE_GAS, sender=who)

    def cancel_request(self, who: str, request_id: int) -> None:
        self.s.send(self.a["WithdrawQueue"], cancel_request.encode(request_id), f"cancel request {request_id}", QUEUE_GAS, sender=who)

    def reclaim(self, request_id: int) -> None:
        """Anyone may reclaim an expired request: the operator does."""
        self.s.send(self.a["WithdrawQueue"], reclaim_expired.encode(request_id), f"reclaim request {request_id}", QUEUE_GAS)

    def serve(self, source: bytes) -> None:
        """One depositor call with no AVAX attached: serve the line from the vault's liquidity."""
        self.s.send(self.a["WithdrawQueue"], serve_line.encode(0, 0, source.ljust(32, b"\0")), "serve the line", SERVE_GAS)

    def serve_reverts(self, source: bytes) -> bool:
        """Whether the depositor's call would revert in the block being filled (its pending state):
        a redemption worth more than the liquidity left fails the whole call, so a depositor does
        not send it."""
        tx = {"from": DEPLOYER, "to": self.a["WithdrawQueue"], "gas": hex(SERVE_GAS),
              "data": "0x" + serve_line.encode(0, 0, source.ljust(32, b"\0")).hex()}
        try:
            self.s.client.request("eth_call", [tx, "pending"])
        except RpcError:
            return True
        return False

    def pause_queue(self, paused: bool) -> None:
        self.send("WithdrawQueue", (pause_queue if paused else unpause_queue).encode(), f"queue paused={paused}")

    def open_requests(self, block="latest") -> dict[int, dict]:
        """Every open request (pending or fulfilled) by id, with "fulfilled" telling which."""
        pending = self.call("WithdrawQueue", pending_ids, block=block)
        fulfilled = self.call("WithdrawQueue", fulfilled_ids, block=block)
        ids = sorted([*pending, *fulfilled])
        tag = block if isinstance(block, str) else hex(block)
        raw = self.client.batch([("eth_call", [{"to": self.a["WithdrawQueue"], "data": "0x" + queue_request.encode(i).hex()}, tag])
                                 for i in ids])
        done = set(fulfilled)
        out = {}
        for i, r in zip(ids, raw, strict=True):
            row = dict(zip(REQUEST_FIELDS, queue_request.decode(bytes.fromhex(r[2:])), strict=True))
            row["fulfilled"] = i in done
            out[i] = row
        return out

    def set_prices(self, ggp_in_avax: int, avax_usd: int) -> None:
        self.send("Oracle", set_price.encode(ggp_in_avax, self.s.next_block_time()), "oracle price")
        self.send("PriceFeed", update_answer.encode(avax_usd, self.s.next_block_time()), "AVAX/USD round")

    def set_feed(self, avax_usd: int) -> None:
        """An AVAX/USD round only (the Oracle's GGP price left as it is)."""
        self.send("PriceFeed", update_answer.encode(avax_usd, self.s.next_block_time()), "AVAX/USD round")

    def pause(self, name: str, paused: bool) -> None:
        self.send("Storage", set_paused.encode(name, paused), f"pause {name}={paused}")
