"""HTTP plumbing shared by the chain RPC client and the third-party API clients: URL checks and
masking, which statuses are worth retrying, backoff with jitter that honours Retry-After, and one
attempt of a request under a total deadline with a bounded body."""
from __future__ import annotations

import contextlib
import random
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import TypeVar
from urllib.parse import urlsplit

import requests
import requests.adapters
import urllib3

from .deadline import DeadlineExceeded, deadline
from .errors import PublisherError

RETRY_STATUS = {429, 500, 502, 503, 504}
T = TypeVar("T")


def mask_url(url: str) -> str:
    """Keep scheme, host and port; hide path, query and credentials (where providers put keys)."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a malformed port may be where the key was pasted: show nothing of it
        return "(malformed URL)"
    host = parts.hostname or "?"
    hidden = "/***" if (parts.path.strip("/") or parts.query or parts.username) else ""
    return f"{parts.scheme}://{host}{port}{hidden}"


def check_url(url: str, kind: str) -> str:
    """``url`` if it is an absolute http(s) URL with a host and a valid port; otherwise a one-line
    error naming ``kind`` and the problem, never the URL (it may hold a key)."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError:
        raise PublisherError(f"{kind} URL is malformed (bad port or brackets)") from None
    if parts.scheme not in ("http", "https"):
        raise PublisherError(f"{kind} URL must start with http:// or https://")
    if not parts.hostname:
        raise PublisherError(f"{kind} URL has no host")
    return url.strip()


def retry_after_seconds(value: str | None) -> float:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); 0 when absent or invalid."""
    if not value:
        return 0.0
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return 0.0


@dataclass
class Backoff:
    """Exponential backoff with jitter; a server's Retry-After is a floor, capped so a hostile or
    confused server cannot park the run."""

    base: float = 0.25
    cap: float = 8.0
    max_retry_after: float = 30.0
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        # Jitter keeps many clients from retrying in lockstep.
        delay = min(self.cap, self.base * 2**attempt) * (0.5 + self.rng.random() / 2)
        return max(delay, min(self.max_retry_after, retry_after_seconds(retry_after)))

    def sleep(self, attempt: int, max_attempts: int, retry_after: str | None = None) -> None:
        if attempt + 1 < max_attempts:  # no point waiting after the last attempt
            time.sleep(self.delay(attempt, retry_after))


class BodyTooLarge(Exception):
    pass


class DeadlineTimeout(requests.Timeout):
    """One attempt outlived its total deadline (headers and body together)."""


def read_bounded(resp: requests.Response, limit: int, until: float | None = None) -> bytes:
    """The body of a streamed response, refusing more than ``limit`` bytes (declared or actual),
    and giving up at monotonic time ``until`` even while bytes keep trickling in."""
    declared = resp.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        resp.close()
        raise BodyTooLarge(limit)
    chunks, size = [], 0
    while True:
        # read1 returns what has arrived instead of waiting for a full chunk, so the deadline is
        # checked between drips even where no alarm can interrupt the read (off the main thread).
        chunk = _read1(resp)
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            resp.close()
            raise BodyTooLarge(limit)
        if until is not None and time.monotonic() > until:
            resp.close()
            raise DeadlineTimeout("body still arriving at the deadline")
        chunks.append(chunk)
    return b"".join(chunks)


def _read1(resp: requests.Response) -> bytes:
    """One read of what has arrived, with urllib3's errors mapped to requests' as iter_content
    maps them, so callers handle a cut or garbled body like any other failed attempt."""
    try:
        return resp.raw.read1(1 << 16, decode_content=True)
    except urllib3.exceptions.ReadTimeoutError as exc:
        raise requests.ReadTimeout(str(exc)) from None
    except urllib3.exceptions.ProtocolError as exc:
        raise requests.exceptions.ChunkedEncodingError(str(exc)) from None
    except urllib3.exceptions.DecodeError as exc:
        raise requests.exceptions.ContentDecodingError(str(exc)) from None
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise requests.ConnectionError(str(exc)) from None


class _Session(requests.Session):
    """The environment's settings for a host (proxies, no_proxy, CA bundle) read once: requests
    reads them on every request, which costs about as much as a local RPC call itself, and a
    run's environment does not change."""

    def __init__(self) -> None:
        super().__init__()
        self._settings: dict[tuple, dict] = {}

    def merge_environment_settings(self, url, proxies, stream, verify, cert):
        if proxies or not isinstance(verify, bool | None) or not isinstance(cert, str | None):
            return super().merge_environment_settings(url, proxies, stream, verify, cert)
        parts = urlsplit(url)  # they depend on the scheme and host only (no_proxy matches hosts)
        key = (parts.scheme, parts.netloc, stream, verify, cert)
        got = self._settings.get(key)
        if got is None:
            got = self._settings[key] = super().merge_environment_settings(url, proxies, stream, verify, cert)
        return {**got, "proxies": dict(got["proxies"])}


def session() -> requests.Session:
    """A session whose requests can be cut at their deadline from another thread (see attempt)."""
    s = _Session()
    adapter = _TrackedAdapter()
    s.mount("http://", adapter)
    s.mount("https://", adapter)
    return s


def attempt(session: requests.Session, method: str, url: str, *, timeout: float, total: float, limit: int,
            what: str, **kwargs) -> tuple[requests.Response, bytes]:
    """One request and its whole body within ``total`` seconds of wall time.

    ``timeout`` bounds each socket operation as usual; ``total`` bounds the attempt however slowly
    the server drips its headers or body. Expiry raises DeadlineTimeout (a requests.Timeout), so
    the caller's retry loop treats it like any other timeout. On the main thread an alarm cuts the
    attempt; on another thread (the validator groups) a timer shuts the request's socket, which
    a session from ``session()`` lets it find.
    """
    until = time.monotonic() + total
    timer = None
    if threading.current_thread() is not threading.main_thread():
        timer = threading.Timer(total, _cut, (threading.get_ident(),))
        timer.daemon = True
        timer.start()
    with deadline(total, what) as token:
        try:
            resp = session.request(method, url, timeout=(min(timeout, total), min(timeout, total)), stream=True, **kwargs)
            try:
                body = read_bounded(resp, limit, until)
            except BaseException:
                resp.close()
                raise
        except DeadlineExceeded as exc:
            if not exc.mine(token):
                raise
            raise DeadlineTimeout(f"no complete answer within {total:g}s") from None
        except requests.RequestException:
            if time.monotonic() >= until:  # the timer shut the socket
                raise DeadlineTimeout(f"no complete answer within {total:g}s") from None
            raise
        finally:
            if timer is not None:
                timer.cancel()
                _in_flight.pop(threading.get_ident(), None)
    return resp, body


# The connection each thread's request is using, so a timer can cut a request whose server
# drips its headers (no socket timeout ends that, and signals reach only the main thread).
_in_flight: dict[int, object] = {}


def _cut(thread: int) -> None:
    sock = getattr(_in_flight.get(thread), "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class _Tracked:
    def _get_conn(self, timeout=None):
        conn = super()._get_conn(timeout)  # type: ignore[misc]
        _in_flight[threading.get_ident()] = conn
        return conn


class _TrackedHTTP(_Tracked, urllib3.HTTPConnectionPool):
    pass


class _TrackedHTTPS(_Tracked, urllib3.HTTPSConnectionPool):
    pass


class _TrackedAdapter(requests.adapters.HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _TrackedHTTP, "https": _TrackedHTTPS}


class Retry(Exception):
    """Raised by a ``judge`` to have the loop try again; the message becomes the last cause."""


@dataclass
class Exhausted(Exception):
    """Every attempt failed; ``last`` is the last cause, ``refused`` how many could not connect."""

    last: str
    attempts: int
    refused: int
    timed_out: bool


def with_retries(send: Callable[[int], tuple[requests.Response, bytes]], judge: Callable[[requests.Response, bytes], T],
                 *, attempts: int, backoff: Backoff, on_retry: Callable[[int], None] | None = None) -> T:
    """The one retrying loop of the project, for the chain RPC and the third-party APIs alike.

    ``send(attempt)`` makes one attempt (``attempt()`` above: deadline, bounded body). Timeouts,
    broken connections and RETRY_STATUS answers are retried with backoff (Retry-After honoured);
    any other answer goes to ``judge(resp, body)``, which returns the result, raises ``Retry`` to
    try again, or raises its own error to stop. After the last attempt: ``Exhausted``.
    """
    last, refused = "no attempt made", 0
    for n in range(attempts):
        if n and on_retry:
            on_retry(n)
        retry_after = None
        try:
            resp, body = send(n)
        except requests.Timeout as exc:
            last = "timed out"
            refused += isinstance(exc, requests.ConnectTimeout)
        except requests.RequestException as exc:
            # Only the type: the text of a connection error can quote the URL with its key.
            last = f"connection error ({type(exc).__name__})"
            refused += _could_not_connect(exc)
        else:
            if resp.status_code in RETRY_STATUS:
                last = f"HTTP {resp.status_code}"
                retry_after = resp.headers.get("Retry-After")
            else:
                try:
                    return judge(resp, body)
                except Retry as exc:
                    last = str(exc)
        backoff.sleep(n, attempts, retry_after)
    raise Exhausted(last, attempts, refused, last == "timed out")


def _could_not_connect(exc: requests.RequestException) -> bool:
    """Refused or unroutable, as opposed to a connection that broke during the request."""
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(exc, requests.ConnectionError) and isinstance(reason, urllib3.exceptions.NewConnectionError)
