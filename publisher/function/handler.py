"""The function: ``GET /rewards/byStake?ggpStaked=&avaxStaked=`` (DESIGN §8), ``GET
/rewards/estimate?address=`` (an existing staker's estimate next cycle) and ``GET
/withdrawals/estimate?amount=[&unit=avax|ggavax][&expirationDelay=]`` (a withdrawal request's estimate
before it is filed).

An AWS Lambda handler for Function URL / API Gateway HTTP API v2 events. Standard library only:
deployed as a zip holding this file, ``rewards.py`` and ``line.py`` side by side (``publisher
function package``); inside the source tree it imports the same modules from the package, so the
function and the build compute with the same code.

Each route's inputs are a published document: ``/rewards/params`` read from ``REWARDS_PARAMS_URL``,
``/withdrawals/params`` from ``QUEUE_PARAMS_URL`` (``file://`` or ``https://``), kept per warm
container for ``REWARDS_PARAMS_TTL`` seconds (default 60). ``/rewards/estimate`` also reads the
staker's ``/rewards/{address}``, next to the params (the last segment of ``REWARDS_PARAMS_URL``,
``params`` or ``params.json``, replaced by the lower-case address), kept as long per address. When a refresh fails the last good
params keep being served, marked by ``x-params-stale`` / ``x-params-error``; before any params
were loaded the answer is 503. Bad input is always a 400 naming the parameter, never a 5xx.
"""
from __future__ import annotations

import json
import os
import re
import time

# Neither typing nor dataclasses is imported at run time: with the withdrawal line's module (see
# ``_line``) they would be most of a cold start's import.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from types import ModuleType
    from typing import Any

try:
    from ..compute import rewards
except ImportError:  # packaged: rewards.py and line.py sit next to this file at the top of the zip
    import rewards  # type: ignore[no-redef]

PATH = "/rewards/byStake"
ESTIMATE_PATH = "/withdrawals/estimate"
STAKER_PATH = "/rewards/estimate"
ROUTES = (PATH, STAKER_PATH, ESTIMATE_PATH)
NAMES = ("ggpStaked", "avaxStaked")
STAKER_NAMES = ("address",)
ESTIMATE_NAMES = ("amount", "unit", "expirationDelay")
# What a required parameter is, for the message that asks for it.
REQUIRED = {**{n: f"whole tokens, e.g. {n}=1000" for n in (*NAMES, "amount")},
            "address": "a staker's address, 0x followed by 40 hex digits"}
UNITS = ("avax", "ggavax")  # what an estimate's amount is in: AVAX to receive, or ggAVAX to redeem
WAD = rewards.WAD
MAX_WEI = {name: limit * WAD for name, limit in rewards.QUERY_LIMITS.items()}
MAX_QUERY_CHARS = 1024
MAX_AMOUNT_CHARS = rewards.MAX_AMOUNT_CHARS
PARAMS_MAX_DEPTH = 16
PARAMS_MAX_BYTES = 1 << 20  # the rewards document is a few KB; refuse anything absurd
QUEUE_PARAMS_MAX_BYTES = 16 << 20  # the queue's holds the whole line: about 70 bytes an id
STAKER_MAX_BYTES = 64 << 10  # a staker's rewards document is about 2 KB
STAKER_CACHE_MAX = 4096  # staker documents a warm container keeps (a few hundred bytes each)
FETCH_TIMEOUT = 2.0  # per socket operation
# Total for one params fetch, headers and body, however slowly the server drips them; below the
# function's 5 s timeout so a stalled origin costs one slow answer, not a killed container.
FETCH_DEADLINE = 3.0
DEFAULT_TTL = 60.0
RETRY_SECONDS = 5.0  # after a failed refresh, wait this long (at most the TTL) before trying again
STALE_IF_ERROR = 86_400
# An answer keeps as long as the parameters it was made from: until the function reads them again.
CACHE_CONTROL = "public, max-age={max_age}, stale-if-error=" + str(STALE_IF_ERROR)
CORS = {"Access-Control-Allow-Origin": "*"}
ALLOW = "GET, HEAD, OPTIONS"
_HEX = frozenset("0123456789abcdefABCDEF")


class BadInput(Exception):
    def __init__(self, message: str, code: str = "bad_parameter"):
        super().__init__(message)
        self.message, self.code = message, code


class _Cache:
    """One route's params in this warm container, as loaded from one URL."""

    def __init__(self, url: str):
        self.url = url
        self.params: Any = None  # rewards.Params or line.Params
        self.resume: Any = None  # line.Resume: where a request at the back of the line first matters
        self.fresh_until = 0.0  # monotonic time of the next refresh
        self.error: str | None = None  # why the last refresh failed, while serving older params
        self.stakers: dict[str, _Staker] = {}  # the rewards route's: each staker's document, by address


_line_module: ModuleType | None = None


def _line() -> ModuleType:
    """The withdrawal line's module (``compute/line.py``), imported by the first withdrawal
    estimate: its records are dataclasses, and importing ``dataclasses`` (with ``inspect``) costs
    more than the rest of a cold start, which the rewards routes then do not pay."""
    global _line_module
    if _line_module is None:
        try:
            from ..compute import line
        except ImportError:
            import line  # type: ignore[no-redef]
        _line_module = line
    return _line_module


class _Source:
    """Where one route's document comes from, and how it is read."""

    __slots__ = ("env", "error", "max_bytes", "module", "parse")

    def __init__(self, env: str, max_bytes: int, module: Callable[[], ModuleType], parse: str):
        self.env = env  # the environment variable naming the document's URL
        self.max_bytes = max_bytes
        self.module = module  # the module that reads it, raising its ParamsError
        self.parse = parse  # its function: the document (decoded JSON) -> params


SOURCES = {
    PATH: _Source("REWARDS_PARAMS_URL", PARAMS_MAX_BYTES, lambda: rewards, "parse_params"),
    ESTIMATE_PATH: _Source("QUEUE_PARAMS_URL", QUEUE_PARAMS_MAX_BYTES, _line, "parse_params"),
}
STAKER_SOURCE = _Source("REWARDS_PARAMS_URL", STAKER_MAX_BYTES, lambda: rewards, "parse_staker")


class _Staker:
    """One staker's inputs in this warm container: None while it has no file (404)."""

    __slots__ = ("error", "fresh_until", "inputs", "known")

    def __init__(self) -> None:
        self.inputs: rewards.StakerInputs | None = None
        self.known = False  # loaded at least once (inputs or a definite 404)
        self.fresh_until = 0.0
        self.error: str | None = None


# Route path -> its params, filled as the container answers; empty, as in a cold container (which
# is how tests start one: CACHES.clear()). The stakers' documents live in the rewards params' entry:
# they are found next to that document, and forgotten with it.
CACHES: dict[str, _Cache] = {}


def handler(event, context=None, *, config: Mapping[str, str] | None = None) -> dict:
    """An HTTP API v2 event's answer. ``config``: the settings (the documents' URLs, the TTL), the
    process environment as Lambda sets it unless given (``publisher serve`` names its directory's)."""
    try:
        return _handle(event, os.environ if config is None else config)
    except Exception:  # a bug, not bad input: log it and answer without leaking details
        import traceback

        traceback.print_exc()
        return _error(500, "internal", "internal error", cache="no-store")


def _handle(event, config: Mapping[str, str]) -> dict:
    if not isinstance(event, dict):
        return _error(400, "bad_request", "the event is not an HTTP API v2 request")
    http = _dict(_dict(event.get("requestContext")).get("http"))
    path = event.get("rawPath") or http.get("path") or "/"
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]  # one trailing slash, as the CDN's viewer function drops it for the files
    if path not in ROUTES:
        return _error(404, "not_found", f"unknown path: this function answers {', '.join(ROUTES)} only")
    method = http.get("method") or "GET"
    if method == "OPTIONS":
        return {"statusCode": 204, "body": "", "headers": {
            **CORS, "Access-Control-Allow-Methods": ALLOW, "Access-Control-Allow-Headers": "*",
            "Access-Control-Max-Age": "86400", "Cache-Control": "public, max-age=86400"}}
    if method not in ("GET", "HEAD"):
        return _error(405, "method_not_allowed", f"method not allowed: use GET ({ALLOW})", extra={"Allow": ALLOW})
    try:
        query, amounts = _inputs(path, event.get("rawQueryString") or "")
    except BadInput as exc:
        return _error(400, exc.code, exc.message)

    return _respond(path, method, query, amounts, config)


def _respond(path: str, method: str, query: dict[str, str], amounts: dict[str, Any], config: Mapping[str, str]) -> dict:
    """The answer to well-formed input, from the route's params (and a staker's document)."""
    now = time.monotonic()
    cache = current_params(now, ESTIMATE_PATH if path == ESTIMATE_PATH else PATH, config)
    if cache.params is None:
        what = "withdrawal queue" if path == ESTIMATE_PATH else "rewards"
        return _error(503, "params_unavailable", f"{what} parameters could not be loaded: {cache.error}",
                      cache="no-store", extra={"Retry-After": str(int(RETRY_SECONDS))})
    stale = cache.error
    if path == STAKER_PATH:
        staker = current_staker(cache, now, amounts["address"], _ttl(config))
        if staker.inputs is None:
            return _staker_missing(staker, amounts["address"])
        stale = stale or staker.error
        body = rewards.staker_estimate(cache.params, staker.inputs)
    else:
        body = _answer(path, cache, query, amounts)
    max_age = max(0, int(cache.fresh_until - now))
    headers = {"Content-Type": "application/json", **CORS,
               "Cache-Control": CACHE_CONTROL.format(max_age=max_age)}
    if stale:
        headers["x-params-stale"] = "true"
        headers["x-params-error"] = stale
    return {"statusCode": 200, "headers": headers,
            "body": "" if method == "HEAD" else rewards.canonical_json(body).decode()}


def _staker_missing(staker: _Staker, address: str) -> dict:
    if staker.known:
        return _error(404, "not_found", f"no staker {address}: /rewards/{address} does not exist")
    return _error(503, "staker_unavailable", f"the staker's rewards document could not be loaded: {staker.error}",
                  cache="no-store", extra={"Retry-After": str(int(RETRY_SECONDS))})


def _inputs(path: str, raw) -> tuple[dict[str, str], dict[str, Any]]:
    """The route's query parameters and the amounts they name (wei, or None where an estimate's is
    not given), or BadInput."""
    if not isinstance(raw, str):
        raise BadInput("rawQueryString is not a string", "bad_request")
    if path == PATH:
        query = parse_query(raw)
        return query, {name: parse_amount(name, query[name], MAX_WEI[name]) for name in NAMES}
    if path == STAKER_PATH:
        query = parse_query(raw, STAKER_NAMES, STAKER_NAMES)
        return query, {"address": parse_address(query["address"])}
    query = parse_query(raw, ESTIMATE_NAMES, ("amount",))
    return query, estimate_amounts(query)


def _answer(path: str, cache: _Cache, query: dict[str, str], amounts: dict[str, Any]) -> dict:
    """The route's answer from its loaded params."""
    if path == PATH:
        return {
            "inputs": {"ggpStaked": query["ggpStaked"], "avaxStaked": query["avaxStaked"],
                       "ggpStakedWei": str(amounts["ggpStaked"]), "avaxStakedWei": str(amounts["avaxStaked"])},
            "meta": cache.params.stamp(),
            "result": rewards.estimate(cache.params, amounts["ggpStaked"], amounts["avaxStaked"]),
        }
    line = _line()
    if cache.resume is None:
        cache.resume = line.resume_point(cache.params)
    return line.answer(cache.params, query, shares=amounts["shares"], avax=amounts["avax"],
                       expiration_delay=amounts["expirationDelay"], resume=cache.resume)


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _error(status: int, code: str, message: str, *, cache: str = "public, max-age=300", extra: dict | None = None) -> dict:
    headers = {"Content-Type": "application/json", **CORS, "Cache-Control": cache, **(extra or {})}
    body = rewards.canonical_json(rewards.error_body(code, message)).decode()
    return {"statusCode": status, "headers": headers, "body": body}


# ---- query ---------------------------------------------------------------------------------------


def parse_query(raw: str, names: tuple[str, ...] = NAMES, required: tuple[str, ...] = NAMES) -> dict[str, str]:
    """The ``names`` given, each at most once, the ``required`` ones present, nothing else. Parsed
    here rather than trusting the platform's ``queryStringParameters``, which joins duplicates
    with commas."""
    if len(raw) > MAX_QUERY_CHARS:
        raise BadInput(f"the query string is longer than {MAX_QUERY_CHARS} characters")
    values: dict[str, str] = {}
    for part in raw.split("&"):
        if not part:
            continue  # "a=1&&b=2" and a trailing "&" are harmless
        name_raw, _, value_raw = part.partition("=")
        name = _unquote(name_raw)
        if name is None:
            raise BadInput(f"a parameter name has invalid percent-encoding: {_show(name_raw)}")
        # Unknown names are refused so a typo (avaxstaked) reads as such, not as a missing parameter.
        if name not in names:
            accepted = names[0] + " is" if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]} are"
            raise BadInput(f"unknown parameter {_show(name)}: only {accepted} accepted (names are case-sensitive)")
        value = _unquote(value_raw)
        if value is None:
            raise BadInput(f"{name} has invalid percent-encoding: {_show(value_raw)}")
        if name in values:
            raise BadInput(f"{name} is given more than once")
        values[name] = value
    for name in required:
        if name not in values:
            raise BadInput(f"{name} is required: {REQUIRED[name]}")
    return values


def parse_address(text: str) -> str:
    """A 0x-prefixed 20-byte hex address, checksummed or not -> its lower-case spelling (the
    published key of its files)."""
    if len(text) != 42 or not text.startswith("0x") or not all(c in _HEX for c in text[2:]):
        raise BadInput(f"address must be 0x followed by 40 hex digits (got {_show(text)})")
    return text.lower()


def estimate_amounts(query: dict[str, str]) -> dict[str, int | None]:
    """/withdrawals/estimate's inputs: the amount, whole tokens, in AVAX to receive (the default) or
    ggAVAX to redeem (``unit``); an optional expirationDelay, whole seconds."""
    unit = query.get("unit", "avax")
    if unit not in UNITS:
        raise BadInput(f"unit must be avax or ggavax (got {_show(unit)})")
    amount = parse_amount("amount", query["amount"], _line().QUERY_LIMIT * WAD)
    out: dict[str, int | None] = {"shares": amount if unit == "ggavax" else None,
                                  "avax": amount if unit == "avax" else None, "expirationDelay": None}
    if "expirationDelay" in query:
        text = query["expirationDelay"]
        if not (text.isascii() and text.isdigit() and len(text) <= 12):
            raise BadInput(f"expirationDelay must be whole seconds, at most 12 digits, e.g. 604800 (got {_show(text)})")
        out["expirationDelay"] = int(text)
    return out


def _unquote(text: str) -> str | None:
    """Form-style percent-decoding ('+' is a space) as strict UTF-8; None when malformed."""
    if "%" not in text and "+" not in text:
        return text
    text = text.replace("+", " ")
    pieces = text.split("%")
    try:
        out = bytearray(pieces[0].encode())
        for piece in pieces[1:]:
            if len(piece) < 2 or piece[0] not in _HEX or piece[1] not in _HEX:
                return None
            out.append(int(piece[:2], 16))
            out += piece[2:].encode()
        return out.decode()
    except UnicodeError:
        return None


_EXPONENT = re.compile(r"[0-9]*\.?[0-9]*[eE][+-]?[0-9]+")


def parse_amount(name: str, text: str, max_wei: int) -> int:
    """A whole-token decimal string -> wei: digits, optionally '.' and 1–18 fractional digits."""
    if text == "":
        raise BadInput(f"{name} is empty: give whole tokens, e.g. {name}=1000")
    if len(text) > MAX_AMOUNT_CHARS:
        raise BadInput(f"{name} is longer than {MAX_AMOUNT_CHARS} characters")
    whole, dot, frac = text.partition(".")
    if not (whole.isascii() and whole.isdigit() and (not dot or (frac.isascii() and frac.isdigit()))):
        if text[0] in "+-":
            why = "must not have a sign"
        elif text[:2] in ("0x", "0X"):
            why = "must be decimal, not hexadecimal"
        elif _EXPONENT.fullmatch(text):
            why = "must not use an exponent"
        elif any(c.isspace() for c in text):
            why = "must not contain spaces (in a query string a '+' reads as a space: a sign is not taken)"
        else:
            why = "must be a plain decimal number"
        raise BadInput(f"{name} {why}: give whole tokens as digits with an optional '.' and up to 18 "
                       f"fractional digits, e.g. 1000 or 1234.5 (got {_show(text)})")
    if len(frac) > 18:
        raise BadInput(f"{name} has more than 18 fractional digits")
    wei = int(whole) * WAD + (int(frac.ljust(18, "0")) if frac else 0)
    if wei > max_wei:
        raise BadInput(f"{name} is above the maximum of {max_wei // WAD} tokens")
    return wei


def _show(text: str) -> str:
    """User text quoted for a message: ASCII only, bounded."""
    shown = ascii(text)
    return shown if len(shown) <= 60 else shown[:57] + "..."


# ---- params --------------------------------------------------------------------------------------


def current_params(now: float, path: str = PATH, config: Mapping[str, str] = os.environ) -> _Cache:
    """The route's cache, refreshed when due; a failed refresh keeps the last good params."""
    source = SOURCES[path]
    url = config.get(source.env, "")
    c = CACHES.get(path)
    if c is None or url != c.url:  # another document: nothing loaded from the last one applies
        c = CACHES[path] = _Cache(url)
    if now >= c.fresh_until:
        ttl = _ttl(config)
        try:
            c.params, c.resume = load_params(url, source), None
            c.error = None
            c.fresh_until = now + ttl
        except Exception as exc:  # a bad or unreachable document is a refresh failure, never a crash
            c.error = _reason(exc)
            c.fresh_until = now + min(ttl, RETRY_SECONDS)
    return c


def staker_url(params_url: str, address: str) -> str:
    """The staker's /rewards/{address} next to /rewards/params: the params URL's last segment
    (``params`` or ``params.json``) with the address in place of ``params``."""
    base, _, last = params_url.rpartition("/")
    if not base or last.split("?", 1)[0] not in ("params", "params.json"):
        raise rewards.ParamsError("REWARDS_PARAMS_URL does not end in /params or /params.json: the stakers' "
                                  "documents cannot be located next to it")
    return f"{base}/{address}{last[len('params'):]}"


def current_staker(params: _Cache, now: float, address: str, ttl: float) -> _Staker:
    """The staker's cached inputs (found next to the rewards ``params``), refreshed when due; a
    failed refresh keeps the last good ones."""
    stakers = params.stakers
    c = stakers.get(address)
    if c is None:
        if len(stakers) >= STAKER_CACHE_MAX:
            del stakers[next(iter(stakers))]  # the oldest entry: a bounded memory whatever is asked
        c = stakers[address] = _Staker()
    if now >= c.fresh_until:
        try:
            inputs = load_params(staker_url(params.url, address), STAKER_SOURCE)
            if inputs.address.lower() != address:
                raise rewards.ParamsError("the staker document names another address")
            c.inputs, c.known, c.error = inputs, True, None
            c.fresh_until = now + ttl
        except Exception as exc:  # missing: a 404 for the TTL; anything else keeps the last good inputs
            if _missing(exc):
                c.inputs, c.known, c.error = None, True, None
                c.fresh_until = now + ttl
            else:
                c.error = _reason(exc)
                c.fresh_until = now + min(ttl, RETRY_SECONDS)
    return c


def _missing(exc: Exception) -> bool:
    """No such document: a missing file, or a 404 (a private bucket answers 403 for a missing key)."""
    return isinstance(exc, FileNotFoundError) or (getattr(exc, "code", None) in (403, 404) and hasattr(exc, "headers"))


def _ttl(config: Mapping[str, str]) -> float:
    raw = config.get("REWARDS_PARAMS_TTL", "")
    try:
        ttl = float(raw) if raw else DEFAULT_TTL
    except ValueError:
        ttl = DEFAULT_TTL
    return ttl if 0 <= ttl <= 86_400 else DEFAULT_TTL


def load_params(url: str, source: _Source = SOURCES[PATH]):
    module = source.module()
    error, limit = module.ParamsError, source.max_bytes
    if url.startswith("file://"):
        data = _read_file(url, limit)
    elif url.startswith("https://") or url.startswith("http://"):
        data = _read_http(url, limit)
    elif not url:
        raise error(f"{source.env} is not set")
    else:
        raise error(f"{source.env} must be a file:// or https:// URL")
    if len(data) > limit:
        raise error(f"params document is larger than {limit} bytes")
    if _nesting(data) > PARAMS_MAX_DEPTH:
        # json's C decoder recurses per level: refuse deep nesting before it can exhaust the stack.
        raise error(f"params document nests deeper than {PARAMS_MAX_DEPTH} levels")
    return getattr(module, source.parse)(json.loads(data))


_BRACKET_OR_QUOTE = re.compile(rb'["\[\]{}]')


def _nesting(data: bytes) -> int:
    """Deepest [ / { nesting outside strings, stopping early once past the limit."""
    depth = deepest = 0
    at = 0
    while (found := _BRACKET_OR_QUOTE.search(data, at)) is not None:
        at = found.end()
        byte = data[found.start()]
        if byte == 0x22:  # quote
            at = _string_end(data, at)
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > PARAMS_MAX_DEPTH:
                    return deepest
        else:
            depth -= 1
    return deepest


def _string_end(data: bytes, at: int) -> int:
    """Where the string opened just before ``at`` ends: past its closing quote, the first one
    after an even run of backslashes; the end of ``data`` if it never closes."""
    while (quote := data.find(b'"', at)) >= 0:
        run = quote
        while run > at and data[run - 1] == 0x5C:  # backslash
            run -= 1
        if (quote - run) % 2 == 0:
            return quote + 1
        at = quote + 1
    return len(data)


def _read_file(url: str, limit: int = PARAMS_MAX_BYTES) -> bytes:
    path = _unquote(url[len("file://"):].replace("+", "%2B"))
    if path is not None and path.startswith("localhost/"):
        path = path[len("localhost"):]
    if not path or not path.startswith("/"):
        raise rewards.ParamsError("a file:// URL needs an absolute path (file:///path/to/params.json)")
    with open(path, "rb") as f:
        return f.read(limit + 1)


def _read_http(url: str, limit: int = PARAMS_MAX_BYTES) -> bytes:
    """The document within FETCH_DEADLINE. Socket timeouts bound each read, not a server that
    drips a byte at a time: the body is read in what-has-arrived pieces against the deadline, and
    the whole fetch runs in a helper thread that is abandoned (as a daemon) should the headers
    themselves be dripped."""
    import threading  # only when used: keeps cold starts short for file:// and warm requests

    until = time.monotonic() + FETCH_DEADLINE
    done: dict = {}

    def fetch() -> None:
        try:
            done["data"] = _fetch_http(url, until, limit)
        except BaseException as exc:  # handed to the caller
            done["error"] = exc

    worker = threading.Thread(target=fetch, name="params-fetch", daemon=True)
    worker.start()
    worker.join(FETCH_DEADLINE + 0.2)
    if "error" in done:
        raise done["error"]
    if "data" not in done:
        raise TimeoutError(f"params fetch exceeded its {FETCH_DEADLINE:g}s deadline")
    return done["data"]


def _fetch_http(url: str, until: float, limit: int = PARAMS_MAX_BYTES) -> bytes:
    import urllib.request

    req = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "ggp-rewards-function"})
    chunks, size = [], 0
    with urllib.request.urlopen(req, timeout=FETCH_TIMEOUT) as resp:
        while size <= limit:
            chunk = resp.read1(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if time.monotonic() > until:
                raise TimeoutError(f"params fetch exceeded its {FETCH_DEADLINE:g}s deadline")
    return b"".join(chunks)


def _reason(exc: Exception) -> str:
    """A short, header-safe cause: no paths or URLs."""
    code = getattr(exc, "code", None)
    if isinstance(code, int) and hasattr(exc, "headers"):
        text = f"HTTP {code} from the params URL"
    elif isinstance(exc, OSError):
        reason = getattr(exc, "reason", None) or exc.strerror or (exc.args[0] if exc.args and isinstance(exc, TimeoutError) else "I/O error")
        text = f"{type(exc).__name__}: {reason}"
    elif isinstance(exc, (ValueError, RecursionError)):
        text = f"invalid params document: {exc}"
    else:
        text = type(exc).__name__
    text = "".join(c if " " <= c <= "~" else "?" for c in str(text))
    return text if len(text) <= 200 else text[:197] + "..."
