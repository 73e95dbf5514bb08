"""Local stand-ins for the third-party HTTP APIs the publisher reads: Avalanche's Glacier validators
API, the P-Chain ``platform.getCurrentValidators`` JSON-RPC, and CoinGecko's ``simple/price``.

Each is a small stdlib HTTP server on 127.0.0.1 (a random port, a background thread) answering in
the real service's shape and units (nAVAX strings, unix seconds, uptime in percent), with data
derived from the seeded scenario so node IDs and prices agree with the chain.

One active minipool is deliberately absent from both validator APIs: the Launched minipool with
the lowest index (``missing_node``), standing for a node whose AddValidatorTx is not accepted yet.
With no active minipool (a wound-down protocol) both list no validator.

The price API quotes AVAX at the feed's last answer and GGP, by default, at the Oracle's last
price: after the end of operations the Oracle is no longer updated while GGP keeps trading, and
quoting the market there instead (``Standins.quote_ggp("market")``, ``publisher devnet --ggp-quote
market``) can put the cross-check beyond its bound.

Faults are switched at runtime, in process (``standins.glacier.fault = Fault(status=429, times=2)``)
or over HTTP (``POST /__fault`` with the Fault fields as JSON; ``{}`` clears; ``GET /__fault``
shows the current fault and the request count). A Fault with ``times`` applies to that many
requests and then heals; without it, it stays until cleared.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from eth_utils import keccak

from publisher.compute.nodeid import cb58encode, node_id, tx_id

from .scenarios import DAY, LAUNCHED, NAVAX, STAKING, WAD, Scenario

NETWORK = "local"  # the Glacier network name the devnet profile uses
PRIMARY_NETWORK = "11111111111111111111111111111111LpoYY"
AVALANCHEGO = "avalanchego/1.13.2"
REWARD_OWNER = "P-local18jma8ppw3nhx5r4ap8clazz0dps7rv5u00z96u"
MAX_DELEGATION_NAVAX = 3_000_000 * NAVAX
MAX_BODY = 1 << 20


@dataclass
class Fault:
    status: int | None = None  # answer with this HTTP status (an error body)
    times: int | None = None  # apply to the next N requests only (None: until cleared)
    delay: float = 0.0  # seconds to wait before answering (client timeouts)
    malformed: bool = False  # answer 200 with a truncated JSON body
    body: str | None = None  # answer 200 with exactly this body (shape errors)
    page_loop: bool = False  # Glacier: every page carries a fresh nextPageToken, forever
    divergence_pct: float = 0.0  # price API: quote prices this many percent away from the chain
    retry_after: str | None = None  # Retry-After header sent with ``status``


@dataclass(frozen=True)
class Hit:
    at: float  # time.monotonic()
    method: str
    path: str
    query: dict[str, list[str]]
    body: bytes
    api_key: str | None


# -- data -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """One active validator in exact units, rendered by each API in its own shape."""

    node_id: str
    tx_id: str
    start: int
    end: int
    stake: int  # nAVAX
    delegated: int  # nAVAX
    delegators: int
    fee_pct: str  # "2.0000"
    uptime: Decimal  # percent, 4 decimals
    above80: Decimal
    validation_reward: int  # nAVAX
    delegation_reward: int  # nAVAX
    capacity: int  # nAVAX
    bls_public_key: str
    bls_pop: str


def missing_node(scenario: Scenario) -> str | None:
    """The active minipool the validator APIs deliberately lack (see the module docstring)."""
    pools = [m for m in scenario.minipools if m["status"] == LAUNCHED] or scenario.active_pools()
    return node_id(pools[0]["nodeID"]) if pools else None


def validator_records(scenario: Scenario) -> list[Record]:
    missing = missing_node(scenario)
    rate_bp = round(scenario.validator_rate * 10_000)
    out = []
    for m in scenario.active_pools():
        nid = node_id(m["nodeID"])
        if nid == missing:
            continue
        rng = random.Random(f"standin-{nid}")
        if m["status"] == STAKING:
            start, end, tx = m["startTime"], m["endTime"], tx_id(m["txID"]) or ""  # staking pools carry their txID
        else:  # Launched: the P-Chain validation began shortly after creation
            start = m["creationTime"] + 1800
            end = start + m["duration"]
            tx = cb58encode(keccak(bytes.fromhex(m["nodeID"][2:]) + b"AddPermissionlessValidatorTx"))
        stake = (m["avaxNodeOpAmt"] + m["avaxLiquidStakerAmt"]) // (WAD // NAVAX)
        delegators = rng.randint(1, 6) if rng.random() < 0.4 else 0
        delegated = sum(rng.randrange(25, 800) for _ in range(delegators)) * NAVAX
        fee_millionths = m["delegationFee"]
        year = 365 * DAY
        # Pools the live devnet creates carry no BLS key on-chain; the network still reports one.
        bls = m["blsPubkeyAndSig"] or (keccak(bytes.fromhex(m["nodeID"][2:])) * 5)[:144]
        out.append(Record(
            node_id=nid, tx_id=tx, start=start, end=end, stake=stake, delegated=delegated,
            delegators=delegators, fee_pct=f"{Decimal(fee_millionths) / 10_000:.4f}",
            uptime=Decimal(rng.randrange(950_000, 1_000_001)) / 10_000,
            above80=Decimal(rng.randrange(9_000, 10_001)) / 100,
            validation_reward=stake * rate_bp * (end - start) // (10_000 * year),
            delegation_reward=delegated * rate_bp * (end - start) // (10_000 * year) * fee_millionths // 1_000_000,
            capacity=max(0, min(5 * stake, MAX_DELEGATION_NAVAX) - stake - delegated),
            bls_public_key="0x" + bls[:48].hex(),
            bls_pop="0x" + bls[48:].hex(),
        ))
    return out


def validating(records: list[Record], now: int | None) -> list[Record]:
    """The records still validating at ``now`` (every one when the time is not known)."""
    return records if now is None else [r for r in records if r.end > now]


def glacier_json(r: Record) -> dict:
    """Glacier's ActiveValidatorDetails."""
    return {
        "txHash": r.tx_id, "nodeId": r.node_id, "subnetId": PRIMARY_NETWORK,
        "amountStaked": str(r.stake), "delegationFee": r.fee_pct,
        "startTimestamp": r.start, "endTimestamp": r.end,
        "blsCredentials": {"publicKey": r.bls_public_key, "proofOfPossession": r.bls_pop},
        "stakePercentAbove80": float(r.above80), "stakePercentAbove90": float(r.above80 - 1),
        "validationStatus": "active", "delegatorCount": r.delegators, "amountDelegated": str(r.delegated),
        "potentialRewards": {"validationRewardAmount": str(r.validation_reward),
                             "delegationRewardAmount": str(r.delegation_reward)},
        "uptimePerformance": float(r.uptime), "avalancheGoVersion": AVALANCHEGO,
        "delegationCapacity": str(r.capacity),
    }


def pchain_json(r: Record) -> dict:
    """One entry of ``platform.getCurrentValidators``."""
    owner = {"locktime": "0", "threshold": "1", "addresses": [REWARD_OWNER]}
    return {
        "txID": r.tx_id, "startTime": str(r.start), "endTime": str(r.end), "weight": str(r.stake),
        "nodeID": r.node_id, "validationRewardOwner": owner, "delegationRewardOwner": owner,
        "potentialReward": str(r.validation_reward), "accruedDelegateeReward": "0",
        "delegationFee": r.fee_pct, "uptime": f"{r.uptime:.4f}", "connected": True,
        "signer": {"publicKey": r.bls_public_key, "proofOfPossession": r.bls_pop},
        "delegatorCount": str(r.delegators), "delegatorWeight": str(r.delegated), "delegators": None,
    }


# -- servers ----------------------------------------------------------------------------------------


class Service:
    """A stand-in HTTP server with a runtime fault switch and a request log."""

    prefix = ""  # path of the base URL the publisher is configured with

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fault: Fault | None = None
        self._fault_used = 0
        self.hits: list[Hit] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("stand-in not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.prefix}"

    @property
    def fault(self) -> Fault | None:
        return self._fault

    @fault.setter
    def fault(self, value: Fault | None) -> None:
        with self._lock:
            self._fault, self._fault_used = value, 0

    def reset(self) -> None:
        self.fault = None
        with self._lock:
            self.hits.clear()

    def start(self) -> Service:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.service = self  # type: ignore[attr-defined]  # read back by _Handler
        threading.Thread(target=self._server.serve_forever, args=(0.05,), name=type(self).__name__, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _take_fault(self) -> Fault | None:
        with self._lock:
            f = self._fault
            if f is None:
                return None
            if f.times is not None:
                if self._fault_used >= f.times:
                    return None
                self._fault_used += 1
            return f

    def serve(self, hit: Hit, fault: Fault | None) -> tuple[int, object]:
        raise NotImplementedError


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "standin/1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes on keep-alive

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def log_message(self, *args) -> None:  # quiet: tests and `publisher devnet` own the terminal
        pass

    def _dispatch(self, method: str) -> None:
        svc: Service = self.server.service  # type: ignore[attr-defined]
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            return self._send(413, {"message": "request too large"})
        body = self.rfile.read(length) if length else b""
        try:
            if parts.path == "/__fault":
                return self._control(svc, method, body)
            hit = Hit(time.monotonic(), method, parts.path, parse_qs(parts.query, keep_blank_values=True),
                      body, self.headers.get("x-glacier-api-key"))
            with svc._lock:
                svc.hits.append(hit)
            fault = svc._take_fault()
            if fault and fault.delay:
                time.sleep(fault.delay)
            if fault and fault.status:
                headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                return self._send(fault.status, {"statusCode": fault.status, "message": "injected fault"}, headers)
            if fault and fault.malformed:
                return self._send(200, b'{"validators": [{"nodeId": "NodeID-')
            if fault and fault.body is not None:
                return self._send(200, fault.body.encode())
            status, answer = svc.serve(hit, fault)
            self._send(status, answer)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test): nothing to answer

    def _control(self, svc: Service, method: str, body: bytes) -> None:
        if method == "GET":
            f = svc.fault
            return self._send(200, {"fault": dataclasses.asdict(f) if f else None, "requests": len(svc.hits)})
        try:
            spec = json.loads(body or b"{}")
            svc.fault = Fault(**spec) if spec else None
        except (ValueError, TypeError) as exc:
            return self._send(400, {"message": f"bad fault: {exc}"})
        self._send(200, {"fault": spec or None})

    def _send(self, status: int, answer, headers: dict[str, str] | None = None) -> None:
        data = answer if isinstance(answer, bytes) else json.dumps(answer, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


class GlacierStandin(Service):
    """``GET /v1/networks/{network}/validators`` (validationStatus, nodeIds, pageSize, pageToken)."""

    def __init__(self, records: list[Record], network: str = NETWORK, api_key: str | None = None,
                 clock: Callable[[], int | None] = lambda: None):
        super().__init__()
        # Glacier lists the most recent validations first.
        self.records = sorted(records, key=lambda r: (-r.start, r.node_id))
        self.clock = clock
        self.network = network
        self.api_key = api_key  # when set, requests must carry it in x-glacier-api-key
        self._serial = 0

    def serve(self, hit, fault):
        if hit.method != "GET" or hit.path != f"/v1/networks/{self.network}/validators":
            return 404, {"statusCode": 404, "message": f"Cannot {hit.method} {hit.path}"}
        if self.api_key and hit.api_key != self.api_key:
            return 401, {"statusCode": 401, "message": "Unauthorized"}
        one = {k: v[-1] for k, v in hit.query.items()}
        try:
            size = int(one.get("pageSize", "10"))
            offset = int(base64.urlsafe_b64decode(one["pageToken"]).split(b":")[0]) if one.get("pageToken") else 0
        except (ValueError, TypeError):
            return 400, {"statusCode": 400, "message": "invalid pageSize or pageToken"}
        if not 1 <= size <= 100:
            return 400, {"statusCode": 400, "message": "pageSize must be between 1 and 100"}
        rows = validating(self.records, self.clock()) if one.get("validationStatus", "active") == "active" else []
        if one.get("nodeIds"):
            ids = set(one["nodeIds"].split(","))
            if any(not i.startswith("NodeID-") for i in ids):
                return 400, {"statusCode": 400, "message": "invalid nodeIds"}
            rows = [r for r in rows if r.node_id in ids]
        page = rows[offset : offset + size]
        following = offset + size
        if fault and fault.page_loop:
            following = following % max(1, len(rows))  # back to the start: it never ends
        answer: dict[str, Any] = {"validators": [glacier_json(r) for r in page]}
        if following < len(rows) or (fault and fault.page_loop):
            self._serial += 1
            answer["nextPageToken"] = base64.urlsafe_b64encode(f"{following}:{self._serial}".encode()).decode()
        return 200, answer


class PChainStandin(Service):
    """avalanchego's ``/ext/bc/P`` JSON-RPC, method ``platform.getCurrentValidators``."""

    prefix = "/ext/bc/P"

    def __init__(self, records: list[Record], clock: Callable[[], int | None] = lambda: None):
        super().__init__()
        self.records = {r.node_id: r for r in records}
        self.clock = clock

    def serve(self, hit, fault):
        if hit.method != "POST" or hit.path != self.prefix:
            return 404, {"message": "404 page not found"}
        try:
            req = json.loads(hit.body)
            if not isinstance(req, dict):
                raise ValueError
        except ValueError:
            return 200, {"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse error"}, "id": None}
        rid = req.get("id")
        if req.get("method") != "platform.getCurrentValidators":
            return 200, {"jsonrpc": "2.0", "error": {"code": -32601, "message": f"the method {req.get('method')} does not exist/is not available"}, "id": rid}
        params = req.get("params") or {}
        ids = params.get("nodeIDs") if isinstance(params, dict) else None
        if ids is None:
            rows = sorted(self.records.values(), key=lambda r: r.node_id)
        elif isinstance(ids, list) and all(isinstance(i, str) and i.startswith("NodeID-") for i in ids):
            rows = [self.records[i] for i in ids if i in self.records]
        else:
            return 200, {"jsonrpc": "2.0", "error": {"code": -32000, "message": "couldn't unmarshal an argument"}, "id": rid}
        rows = validating(rows, self.clock())
        return 200, {"jsonrpc": "2.0", "result": {"validators": [pchain_json(r) for r in rows]}, "id": rid}


class PriceStandin(Service):
    """CoinGecko's ``GET /api/v3/simple/price?ids=…&vs_currencies=usd``."""

    prefix = "/api/v3"

    def __init__(self, usd: dict[str, Decimal]):
        super().__init__()
        self.usd = usd  # coin id -> USD price

    def serve(self, hit, fault):
        if hit.method != "GET" or hit.path != f"{self.prefix}/simple/price":
            return 404, {"error": "Not Found"}
        ids = [i for i in (hit.query.get("ids") or [""])[-1].split(",") if i]
        currencies = (hit.query.get("vs_currencies") or [""])[-1].split(",")
        if not ids or not currencies[0]:
            return 400, {"error": "Missing parameter ids or vs_currencies"}
        move = 1 + Decimal(str(fault.divergence_pct if fault else 0)) / 100
        answer = {}
        for coin in ids:
            if coin in self.usd:
                answer[coin] = {"usd": float(round(self.usd[coin] * move, 6))} if "usd" in currencies else {}
        return 200, answer


GGP_QUOTES = ("oracle", "market")


def scenario_usd(scenario: Scenario, ggp_quote: str = "oracle") -> dict[str, Decimal]:
    """USD prices matching the chain's final feed answer (8 decimals) and, for GGP, the Oracle's
    last price ("oracle") or the market's when the scenario has one apart from it ("market": after
    the end of operations the market moves on while the Oracle keeps its last price)."""
    if ggp_quote not in GGP_QUOTES:
        raise ValueError(f"GGP quote {ggp_quote!r}: choose one of {', '.join(GGP_QUOTES)}")
    _, ggp_avax, avax_usd = scenario.prices[-1]
    if ggp_quote == "market" and scenario.ggp_market:
        ggp_avax = scenario.ggp_market
    avax = Decimal(avax_usd) / 10**8
    return {"avalanche-2": avax, "gogopool": Decimal(ggp_avax) / WAD * avax}


@dataclass
class Standins:
    """The three stand-ins for one scenario; ``services`` maps names to base URLs."""

    scenario: Scenario
    network: str = NETWORK  # Glacier's network name in the request path ("mainnet", "fuji", …)
    # What the price API quotes for GGP: "oracle" (the Oracle's last GGP/AVAX price times the
    # feed's AVAX/USD, so the build's cross-check agrees however stale the Oracle is) or "market"
    # (the GGP market price, which keeps moving after the end of operations and can leave the
    # stale Oracle beyond the cross-check's bound). Change it with ``quote_ggp``.
    ggp_quote: str = "oracle"
    # The chain's time now: a validator whose period has ended by then is no longer listed, as
    # Glacier and the P-Chain drop it at its end whether or not MinipoolManager has recorded the
    # end. The live devnet sets it as it moves time; a test moving the node's clock by itself gives
    # its own. None: every record is listed (the seeded scenarios have no such end).
    clock: Callable[[], int] | None = None
    glacier: GlacierStandin = field(init=False)
    pchain: PChainStandin = field(init=False)
    prices: PriceStandin = field(init=False)

    def __post_init__(self) -> None:
        records = validator_records(self.scenario)
        self.glacier = GlacierStandin(records, self.network, clock=self.now)
        self.pchain = PChainStandin(records, clock=self.now)
        self.prices = PriceStandin(scenario_usd(self.scenario, self.ggp_quote))

    def now(self) -> int | None:
        return self.clock() if self.clock is not None else None

    def refresh(self) -> None:
        """Describe the scenario as it is now (the live devnet updates it after every step)."""
        records = validator_records(self.scenario)
        self.glacier.records = sorted(records, key=lambda r: (-r.start, r.node_id))
        self.pchain.records = {r.node_id: r for r in records}
        self.prices.usd = scenario_usd(self.scenario, self.ggp_quote)

    def quote_ggp(self, which: str) -> None:
        """Quote GGP at the Oracle's price ("oracle") or the market's ("market") from now on."""
        self.prices.usd = scenario_usd(self.scenario, which)
        self.ggp_quote = which

    @property
    def all(self) -> tuple[Service, ...]:
        return (self.glacier, self.pchain, self.prices)

    @property
    def services(self) -> dict[str, str]:
        return {"validator_api": self.glacier.url, "pchain_rpc": self.pchain.url, "price_api": self.prices.url}

    def reset(self) -> None:
        for s in self.all:
            s.reset()

    def start(self) -> Standins:
        try:
            for s in self.all:
                s.start()
        except OSError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for s in self.all:
            s.stop()

    def __enter__(self) -> Standins:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
