"""The protocol after the end of operations: the wound-down scenario as seeded, the live operator
ending operations at a chosen time and running 60 days past it, and mainnet rehearsed in that state.

Everything is read back from the chain (and the stand-ins): the Oracle's price more than 60 days
old while the AVAX/USD feed keeps its daily rounds, the pause flags, no active minipool, the GGP
rewards cycle long overdue, the ggAVAX reward stream ended, and the vault drained through the
withdraw queue.
"""
from __future__ import annotations

import itertools
import re
from bisect import bisect_right
from dataclasses import dataclass, field

import pytest
import requests
from click.testing import CliRunner
from ggp_devnet import operator as O
from ggp_devnet import running, scenarios
from ggp_devnet.live import WIND_DOWN_SOURCE, Live
from ggp_devnet.scenarios import DAY, WIND_DOWN_AT, WIND_DOWN_PAUSED
from ggp_devnet.seed import next_request_id
from support.chain import eth_call, eth_calls, head, header
from support.devnet_cli import DevnetCli

from publisher.chain import abis
from publisher.chain.abi import Fn, event_topic
from publisher.chain.reader import registry_key
from publisher.chain.rpc import RpcClient
from publisher.config import load_profile
from publisher.protocol import MinipoolStatus

ENDED = {MinipoolStatus.WITHDRAWABLE, MinipoolStatus.FINISHED, MinipoolStatus.CANCELED, MinipoolStatus.ERROR}
canStartRewardsCycle = Fn("canStartRewardsCycle()", "bool")
getRewardsCycleSeconds = Fn("getRewardsCycleSeconds()", "uint256")
EV_REWARDS_CYCLE_STARTED = "NewRewardsCycleStarted(uint256)"
EV_DEPOSIT = "Deposit(address,address,uint256,uint256)"
EV_UNSTAKE_REQUESTED = "UnstakeRequested(uint256,address,uint256,uint256,uint48)"
EV_REQUEST_FULFILLED = "RequestFulfilled(bytes32,uint256,uint256)"
EV_UNSTAKE_CLAIMED = "UnstakeClaimed(uint256,address,uint256)"
EV_SHARES_RETURNED = "ExpiredSharesReturned(uint256,address,uint256)"


@dataclass
class Chain:
    """A devnet read back after its end of operations at ``ended``."""

    client: RpcClient
    a: dict[str, str]
    ended: int
    number: int = 0
    now: int = 0
    times: list[int] = field(default_factory=list)  # every block's timestamp, by number

    def __post_init__(self) -> None:
        self.number, self.now = head(self.client)
        blocks = self.client.batch([("eth_getBlockByNumber", [hex(n), False]) for n in range(self.number + 1)])
        self.times = [int(b["timestamp"], 16) for b in blocks]

    def call(self, name: str, fn: Fn, *args, block="latest"):
        return eth_call(self.client, self.a[name], fn, *args, block=block)

    def block_at(self, t: int) -> int:
        """The last block at or before ``t``."""
        return bisect_right(self.times, t) - 1

    def log_times(self, name: str, event: str) -> list[int]:
        logs = self.client.request("eth_getLogs", [{"address": self.a[name], "topics": [event_topic(event)],
                                                    "fromBlock": "0x0", "toBlock": "latest"}])
        return [self.times[int(e["blockNumber"], 16)] for e in logs]

    def after(self, name: str, event: str) -> list[int]:
        return [t for t in self.log_times(name, event) if t >= self.ended]


def check_wound_down(c: Chain) -> dict[str, int]:
    """What every chain 60 days past its end of operations holds; returns the queue's states at
    the head (counts by state)."""
    assert c.now - c.ended >= 60 * DAY

    # Nobody updates the Oracle: its last price is from before the end, 60 days old and more.
    price, stamp = c.call("Oracle", abis.getGGPPriceInAVAX)
    assert price > 0 and stamp < c.ended and c.now - stamp >= 60 * DAY
    assert not c.after("Oracle", abis.EV_GGP_PRICE_UPDATED)
    # The AVAX/USD feed, a third-party feed, keeps its daily rounds up to now.
    _, answer, _, updated, _ = c.call("PriceFeed", abis.latestRoundData)
    assert answer > 0 and c.now - updated <= DAY
    rounds = c.log_times("PriceFeed", abis.EV_ANSWER_UPDATED)
    recent = [t for t in rounds if t >= stamp]
    assert len(c.after("PriceFeed", abis.EV_ANSWER_UPDATED)) >= 60
    assert max(b - a for a, b in itertools.pairwise(recent)) <= DAY + 3600

    # The protocol's pauser set its flags; Staking stays open; the queue takes requests.
    flags = dict(zip(("Staking", *WIND_DOWN_PAUSED), eth_calls(
        c.client, [(c.a["Storage"], abis.storage_getBool, (registry_key("contract.paused", n),)) for n in ("Staking", *WIND_DOWN_PAUSED)]),
        strict=True))
    assert flags == {"Staking": False, **{n: True for n in WIND_DOWN_PAUSED}}
    assert c.call("WithdrawQueue", O.queue_paused) is False
    assert c.call("TokenggAVAX", Fn("maxDeposit(address)", "uint256"), c.a["Storage"]) == 0

    # Every minipool ended and handed its AVAX back; none was created or launched after the end.
    pools = eth_calls(c.client, [(c.a["MinipoolManager"], abis.getMinipool, (i,))
                                 for i in range(c.call("MinipoolManager", abis.getMinipoolCount))])
    assert {p[2] for p in pools} <= ENDED and {p[2] for p in pools} & {MinipoolStatus.WITHDRAWABLE, MinipoolStatus.FINISHED}
    changes = c.client.request("eth_getLogs", [{"address": c.a["MinipoolManager"], "topics": [event_topic(abis.EV_MINIPOOL_STATUS_CHANGED)],
                                                "fromBlock": hex(c.block_at(c.ended) + 1), "toBlock": "latest"}])
    assert changes and not {int(e["topics"][2], 16) for e in changes} & {MinipoolStatus.PRELAUNCH, MinipoolStatus.LAUNCHED}
    assert c.call("MinipoolManager", abis.getTotalAVAXLiquidStakerAmt) == 0
    assert c.call("TokenggAVAX", abis.stakingTotalAssets) == 0

    # No GGP cycle since the end: the last one started before it, more than a cycle overdue.
    cycle = c.call("ProtocolDAO", getRewardsCycleSeconds)
    started = c.call("RewardsPool", abis.getRewardsCycleStartTime)
    assert started < c.ended and c.now - started > 2 * cycle
    assert not c.after("RewardsPool", EV_REWARDS_CYCLE_STARTED) and c.call("RewardsPool", canStartRewardsCycle) is False

    # The ggAVAX reward stream ended long ago; no deposit since the end (they are paused).
    assert c.call("TokenggAVAX", abis.lastSync) < c.ended
    assert c.call("TokenggAVAX", abis.rewardsCycleEnd) < c.now - 30 * DAY
    assert not c.after("TokenggAVAX", abis.EV_NEW_REWARDS_CYCLE) and not c.after("TokenggAVAX", EV_DEPOSIT)

    # The vault drained through the queue: requests filed, funded, claimed, some left to expire.
    assets = [c.call("TokenggAVAX", abis.totalAssets, block=c.block_at(t))
              for t in (c.ended - 1, c.ended + 20 * DAY, c.ended + 40 * DAY, c.now)]
    assert assets == sorted(assets, reverse=True) and len(set(assets)) == 4 and assets[-1] < assets[0] // 2, assets
    assert len(c.after("WithdrawQueue", EV_UNSTAKE_REQUESTED)) >= 10
    assert len(c.after("WithdrawQueue", EV_REQUEST_FULFILLED)) >= 10
    assert len(c.after("WithdrawQueue", EV_UNSTAKE_CLAIMED)) >= 10
    issued = c.call("WithdrawQueue", next_request_id)
    rows = eth_calls(c.client, [(c.a["WithdrawQueue"], O.queue_request, (i,)) for i in range(issued)])
    fulfilled = set(c.call("WithdrawQueue", O.fulfilled_ids))
    pending = set(c.call("WithdrawQueue", O.pending_ids))
    states: dict[str, int] = {}
    for i, r in enumerate(rows):
        if r[0] == "0x" + "0" * 40:
            state = "closed"
        elif i in fulfilled:
            state = "expired" if c.now >= r[5] else "cancellable" if c.now < r[4] else "claimable"
        else:
            assert i in pending
            state = "pending-expired" if c.now >= r[5] else "pending"
        states[state] = states.get(state, 0) + 1
    # With every minipool's AVAX back, the vault's liquidity covers every request still waiting.
    waiting = sum(rows[i][2] for i in pending)
    assert waiting <= c.call("TokenggAVAX", abis.totalAssets) - c.call("TokenggAVAX", abis.stakingTotalAssets)
    assert states["closed"] >= issued // 2 and states.get("expired", 0) >= 1
    return states


# ---- the seeded scenario -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wound(wound_devnet):
    return wound_devnet  # the session's: the test that moves it reverts it


def test_wound_down_is_a_scenario_of_its_own():
    assert "wound-down" in scenarios.names()
    sc = scenarios.build("wound-down")
    assert sc.wind_down == scenarios.WindDown(WIND_DOWN_AT, 62) and sc.paused == {}
    assert sc.now < WIND_DOWN_AT and sc.wind_down.paused == ("TokenggAVAX", "MinipoolManager", "RewardsPool", "ClaimNodeOp")
    assert scenarios.build("demo").wind_down is None


def test_seeded_wound_down_is_sixty_days_past_the_end_of_operations(wound):
    c = Chain(RpcClient([wound.url]), wound.addresses, WIND_DOWN_AT)
    states = check_wound_down(c)
    # It ends with requests in every open state: funded awaiting their claim (some still before
    # their claimableTime), expired unclaimed, and pending ones the next run will fund.
    assert states["claimable"] >= 1 and states["cancellable"] >= 2 and states["pending"] >= 2, states
    # The requests that had expired unserved by the end were reclaimed (shares back) before the
    # depositor's first run; a funded one cannot be while deposits are paused, so none of those is.
    assert states.get("pending-expired", 0) == 0 and c.after("WithdrawQueue", EV_SHARES_RETURNED)
    assert wound.scenario.now == c.now and c.now - WIND_DOWN_AT >= 62 * DAY
    # The Oracle's last update is from the day before operations ended, 62 days and more ago; the
    # scenario's price rows go on with it (and the feed's answers) to now.
    price, stamp = c.call("Oracle", abis.getGGPPriceInAVAX)
    assert WIND_DOWN_AT - DAY < stamp < WIND_DOWN_AT and c.now - stamp >= 62 * DAY
    assert wound.scenario.prices[-1][1] == price and wound.scenario.prices[-1][0] > c.now - DAY
    # Some operators never came back for their AVAX or their errored pool's; the others finished.
    count = c.call("MinipoolManager", abis.getMinipoolCount)
    statuses = {p[2] for p in eth_calls(c.client, [(c.a["MinipoolManager"], abis.getMinipool, (i,)) for i in range(count)])}
    assert statuses == ENDED


def test_wound_down_seeds_the_same_chain_every_time(wound):
    with running("wound-down", fresh=True) as other:
        theirs, ours = header(RpcClient([other.url])), header(RpcClient([wound.url]))
        assert (theirs["number"], theirs["hash"]) == (ours["number"], ours["hash"])
        assert other.scenario.now == wound.scenario.now


def test_stand_ins_agree_with_a_wound_down_chain(wound):
    services, sc = wound.services, wound.scenario
    got = requests.get(f"{services['validator_api']}/v1/networks/local/validators", params={"pageSize": 100}, timeout=10).json()
    assert got == {"validators": []}
    body = {"jsonrpc": "2.0", "id": 1, "method": "platform.getCurrentValidators", "params": {}}
    assert requests.post(services["pchain_rpc"], json=body, timeout=10).json()["result"]["validators"] == []
    # The price API quotes GGP at the Oracle's last price (what the chain says), not the market's...
    client = RpcClient([wound.url])
    price, _ = eth_call(client, wound.addresses["Oracle"], abis.getGGPPriceInAVAX)
    _, answer, *_ = eth_call(client, wound.addresses["PriceFeed"], abis.latestRoundData)
    quote = requests.get(f"{services['price_api']}/simple/price", params={"ids": "avalanche-2,gogopool", "vs_currencies": "usd"},
                         timeout=10).json()
    assert quote["avalanche-2"]["usd"] == pytest.approx(answer / 1e8) and quote["gogopool"]["usd"] == pytest.approx(price / 1e18 * answer / 1e8)
    # ...unless asked for the market's, which moved on while the Oracle stood still.
    assert sc.ggp_market and sc.ggp_market != price
    try:
        wound.standins.quote_ggp("market")
        quote = requests.get(f"{services['price_api']}/simple/price", params={"ids": "gogopool", "vs_currencies": "usd"}, timeout=10).json()
        assert quote["gogopool"]["usd"] == pytest.approx(sc.ggp_market / 1e18 * answer / 1e8)
    finally:
        wound.standins.quote_ggp("oracle")


def test_a_wound_down_chain_goes_on_winding_down_live(wound):
    """`publisher devnet --live --scenario wound-down`: the operator finds the chain wound down."""
    client, sc = RpcClient([wound.url]), wound.scenario
    kept = (list(sc.prices), sc.ggp_market, list(sc.minipools))
    snap = client.request("evm_snapshot", [])
    try:
        live = Live(wound, seed=4, wind_down_at=WIND_DOWN_AT)
        assert live.wound_down
        waiting = eth_call(client, wound.addresses["WithdrawQueue"], O.pending_ids)
        live.run(days=3, pace=0)
        assert waiting and {f.request_id for f in live.fundings} >= set(waiting)
        assert {f.source for f in live.fundings} == {WIND_DOWN_SOURCE}
        assert eth_call(client, wound.addresses["Oracle"], abis.getGGPPriceInAVAX)[1] < WIND_DOWN_AT
    finally:
        assert client.request("evm_revert", [snap]) is True
        sc.prices[:], sc.minipools[:] = kept[0], kept[2]
        sc.ggp_market = kept[1]
        wound.standins.refresh()


# ---- the live transition -------------------------------------------------------------------------


@pytest.mark.slow
def test_live_operator_winds_the_protocol_down_and_runs_sixty_days_past_it():
    with running("demo") as net:
        client = RpcClient([net.url])
        ends = net.scenario.now + 2 * DAY + 5 * 3600
        live = Live(net, seed=11, wind_down_at=ends)
        assert not live.wound_down
        live.run(days=2, pace=0)  # operating as before: the Oracle updated daily
        assert not live.wound_down and eth_call(client, net.addresses["Oracle"], abis.getGGPPriceInAVAX)[1] > net.scenario.now
        cycles = eth_call(client, net.addresses["RewardsPool"], abis.getRewardsCycleCount)
        events: list[str] = []
        live.run(days=63, pace=0, on_step=lambda _live, e: events.extend(e))  # no step reverts
        assert live.wound_down and f"operations ended at {ends}: {', '.join(WIND_DOWN_PAUSED)} paused" in events
        c = Chain(client, net.addresses, ends)
        assert c.times[c.block_at(ends)] == ends
        check_wound_down(c)
        assert eth_call(client, net.addresses["RewardsPool"], abis.getRewardsCycleCount) == cycles
        assert not [e for e in events if e.startswith(("GGP cycle", "ggAVAX syncRewards", "create ", "launch "))]
        sources = {f.source for f in live.fundings if f.time > ends}
        assert WIND_DOWN_SOURCE in sources and sources <= {WIND_DOWN_SOURCE, b"MINIPOOL_END"}
        # The stand-ins follow: no validator is left.
        assert net.standins.glacier.records == [] and net.standins.pchain.records == {}


# ---- the command line and a rehearsal --------------------------------------------------------------


def test_wind_down_options_need_live_and_a_protocol_still_operating():
    from publisher.cli import main

    runner = CliRunner()
    got = runner.invoke(main, ["devnet", "--wind-down-after", "3"])
    assert got.exit_code == 2 and "--wind-down-at and --wind-down-after need --live" in got.output
    got = runner.invoke(main, ["devnet", "--live", "--wind-down-after", "3", "--wind-down-at", "1786752000"])
    assert got.exit_code == 2 and "not both" in got.output
    got = runner.invoke(main, ["devnet", "--live", "--scenario", "wound-down", "--wind-down-after", "3"])
    assert got.exit_code == 2 and "has wound down already" in got.output
    got = runner.invoke(main, ["devnet", "--help"])
    assert "--wind-down-at UNIX_SECONDS" in got.output and "--wind-down-after DAYS" in got.output


def test_publisher_devnet_live_ends_operations_when_told():
    with DevnetCli("--live", "--pace", "0", "--seed", "3", "--wind-down-after", "1.5") as dev:
        text = dev.wait_for("operations ended", seconds=180)
        ends = int(re.search(r"^operations end at protocol time (\d+)$", text, re.M).group(1))
        assert re.search(rf"; operations ended at {ends}: TokenggAVAX, MinipoolManager, RewardsPool, ClaimNodeOp paused$", text, re.M)
        last = int(re.findall(r"^day (\d+) ", text, re.M)[-1])
        dev.wait_for(f"day {last + 2} ", seconds=60)  # and it goes on
        dev.interrupt()


def test_mainnet_rehearsal_in_the_wound_down_state():
    profile = load_profile("mainnet")
    with DevnetCli("--as", "mainnet", "--scenario", "wound-down") as dev:
        text = dev.wait_for("Ctrl-C", seconds=240)
        assert re.search(r"^devnet 'wound-down' rehearsing mainnet ready in [\d.]+s: 48 stakers, 64 minipools$", text, re.M), text
        url, chain_id = re.search(r"RPC URL\s+(\S+)\s+\(chain id (\d+)\)", text).groups()
        assert int(chain_id) == profile.chain_id == 43114
        printed = dict(re.findall(r"^\s+(\w+)\s+(0x[0-9a-fA-F]{40})\s*$", text, re.M))
        for name, want in (("Storage", profile.storage), ("PriceFeed", profile.avax_usd_feed), ("WithdrawQueue", profile.withdraw_queue),
                           *profile.addresses.items()):
            assert printed[name].lower() == want.lower(), name
        services = dict(re.findall(r"^\s+(validator_api|pchain_rpc|price_api)\s+(\S+)\s*$", text, re.M))
        got = requests.get(f"{services['validator_api']}/v1/networks/mainnet/validators", params={"pageSize": 100}, timeout=10).json()
        assert got == {"validators": []}
        c = Chain(RpcClient([url]), printed, WIND_DOWN_AT)
        check_wound_down(c)
        # The rehearsal's fresh AVAX/USD round is the head block, a minute after the scenario's last.
        assert c.call("PriceFeed", abis.latestRoundData)[3] == c.now
        dev.interrupt()
