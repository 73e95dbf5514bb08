"""JSON-RPC over HTTP with fallback URLs, bounded retries with backoff and jitter, batching and
per-run counters.

This is the only place that talks to a node, so every request is counted here (the benchmark and
the run summary read the counters) and every URL is masked before it reaches a message.
"""
from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial
from typing import Any

import requests

from .. import jsonin
from ..deadline import Background
from ..errors import PublisherError
from ..transport import Backoff, BodyTooLarge, Exhausted, Retry, check_url, mask_url, with_retries  # noqa: F401 (mask_url: re-export)
from ..transport import attempt as send_attempt
from ..transport import session as new_session

# JSON-RPC error codes that mean "try again later" rather than "your call is wrong".
RETRY_RPC_CODES = {-32005, -32603}


class RpcError(PublisherError):
    """The node answered with a JSON-RPC error (e.g. a revert)."""

    def __init__(self, method: str, code: int | None, message: str, data: str | None = None):
        self.method, self.code, self.rpc_message, self.data = method, code, message, data
        super().__init__(f"{method} failed: {message} (code {code})")


class RpcUnavailable(PublisherError):
    """No URL gave a usable answer within the attempt budget."""

    def __init__(self, message: str, *, unreachable: bool = False, heavy: bool = False):
        super().__init__(message)
        # The request itself was too much for the node (timeouts, size refusals): smaller requests
        # may succeed. Rate limits and server errors are not that: splitting only multiplies them.
        self.heavy = heavy
        # Every attempt failed to even connect: smaller requests cannot help, so callers that
        # split requests on failure should give up at once.
        self.unreachable = unreachable


class PayloadTooLarge(RpcUnavailable):
    """The node refused the request for its size (HTTP 413 or a size error)."""

    def __init__(self, message: str):
        super().__init__(message, heavy=True)


class RawParams:
    """A call's params as JSON text, sent as they are. A multicall's params are megabytes of hex,
    which need no escaping: splicing them in spares json.dumps a scan of every character."""

    __slots__ = ("text",)

    def __init__(self, text: bytes):
        self.text = text


def _item(i: int, method: str, params) -> bytes:
    if isinstance(params, RawParams):
        return b'{"jsonrpc":"2.0","id":%d,"method":%b,"params":%b}' % (i, json.dumps(method).encode(), params.text)
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}, separators=(",", ":")).encode()


@dataclass
class Counters:
    http_requests: int = 0
    rpc_calls: int = 0
    eth_calls: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    retries: int = 0

    def add(self, other: Counters) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass
class RpcClient:
    urls: list[str]
    timeout: float = 30.0
    # Total seconds for one attempt, however slowly the node drips its answer (timeout is per read).
    deadline: float = 45.0
    max_attempts: int = 6
    backoff: float = 0.25
    max_backoff: float = 8.0
    max_response_bytes: int = 256 * 1024 * 1024
    counters: Counters = field(default_factory=Counters)
    session: requests.Session = field(default_factory=new_session, repr=False)

    def __post_init__(self) -> None:
        if not self.urls:
            raise PublisherError("no RPC URL configured")
        many = len(self.urls) > 1
        self.urls = [check_url(u, f"RPC #{i + 1}" if many else "RPC") for i, u in enumerate(self.urls)]
        self._ids = itertools.count(1)
        self._url_index = 0
        self._backoff = Backoff(self.backoff, self.max_backoff)

    @property
    def url(self) -> str:
        return self.urls[self._url_index]

    def describe(self) -> str:
        """How messages name the node: by kind (and position among fallbacks), never by URL, so
        that no message, log or published warning carries a host or a key."""
        return "RPC" if len(self.urls) == 1 else f"RPC ({len(self.urls)} URLs)"

    def sibling(self) -> RpcClient:
        """A client to the same node with a connection and counters of its own: for a request sent
        from another thread beside this client's (the caller adds its counters to these after)."""
        other = replace(self, session=new_session(), counters=Counters())
        other._url_index = self._url_index  # a node this client failed over from is not tried first again
        return other

    # -- public API -------------------------------------------------------------------------

    def request(self, method: str, params: list | None = None):
        return self.batch([(method, params or [])])[0]

    def batch(self, calls: Sequence[tuple[str, list | RawParams]], *, raise_errors: bool = True) -> list:
        """Send calls in one HTTP request (a JSON-RPC batch when more than one).

        Returns results in order. With ``raise_errors=False`` a failed item is returned as an
        ``RpcError`` instance instead of raising, so callers can report every failure.
        """
        if not calls:
            return []
        ids = [next(self._ids) for _ in calls]
        # The same bytes as json.dumps of the whole list, item by item.
        texts = [_item(i, m, p) for i, (m, p) in zip(ids, calls, strict=True)]
        payload = texts[0] if len(texts) == 1 else b"[" + b",".join(texts) + b"]"
        self.counters.rpc_calls += len(calls)
        self.counters.eth_calls += sum(1 for m, _ in calls if m == "eth_call")
        answer = self._post(payload, calls[0][0] if len(calls) == 1 else f"batch of {len(calls)}")
        items = answer if isinstance(answer, list) else [answer]
        # Only integer ids are ours (True == 1 and a list is no key: both are a node's malformed answer).
        by_id = {item["id"]: item for item in items if isinstance(item, dict) and type(item.get("id")) is int}
        results: list[Any] = []
        for i, (method, _) in zip(ids, calls, strict=True):
            item = by_id.get(i)
            if item is None:
                raise RpcUnavailable(f"{self._where()} returned no answer for {method}")
            if "error" in item and item["error"] is not None:
                err = item["error"] if isinstance(item["error"], dict) else {"message": str(item["error"])}
                code = err.get("code")
                exc = RpcError(method, code if isinstance(code, int) else None, str(err.get("message", "unknown error"))[:300], err.get("data"))
                if raise_errors:
                    raise exc
                results.append(exc)
            else:
                results.append(item.get("result"))
        return results

    # -- transport --------------------------------------------------------------------------

    def _where(self) -> str:
        return "RPC" if len(self.urls) == 1 else f"RPC #{self._url_index + 1}"

    def _post(self, payload: bytes, what: str):
        def send(n: int):
            self.counters.http_requests += 1
            self.counters.bytes_sent += len(payload)
            try:
                resp, body = send_attempt(self.session, "POST", self.url, timeout=self.timeout, total=self.deadline,
                                          limit=self.max_response_bytes, what=self._where(), data=payload,
                                          headers={"Content-Type": "application/json"})
            except BodyTooLarge:
                raise RpcUnavailable(f"{self._where()} response exceeds {self.max_response_bytes} bytes", heavy=True) from None
            self.counters.bytes_received += len(body)
            return resp, body

        def judge(resp, body):
            if resp.status_code == 413:
                raise PayloadTooLarge(f"{self._where()} refused {what}: request too large (HTTP 413)")
            if resp.status_code != 200:
                raise RpcUnavailable(f"{self._where()} answered HTTP {resp.status_code} to {what}")
            try:
                answer = jsonin.loads(body)
            except ValueError:  # hostile nesting such as 50 MB of "[" too (jsonin)
                raise Retry("malformed JSON") from None
            if self._retryable_error(answer):
                raise Retry("node busy (JSON-RPC error)")
            return answer

        def on_retry(n: int) -> None:
            self.counters.retries += 1
            # Move to the next URL after a failure: the fallback order of the profile.
            self._url_index = (self._url_index + 1) % len(self.urls)

        try:
            return with_retries(send, judge, attempts=self.max_attempts, backoff=self._backoff, on_retry=on_retry)
        except Exhausted as exc:
            raise RpcUnavailable(f"{self.describe()} failed for {what} after {exc.attempts} attempts: {exc.last}",
                                 unreachable=exc.refused == exc.attempts, heavy=exc.timed_out) from None

    @staticmethod
    def _retryable_error(answer) -> bool:
        if isinstance(answer, dict):
            return _transient(answer.get("error"))
        if isinstance(answer, list):
            # Providers rate-limit batches item by item; retrying the whole batch is the only way
            # to get those items back, and it is cheap next to failing the run.
            return any(isinstance(item, dict) and _transient(item.get("error")) for item in answer)
        return False


# Words of errors about the request itself (a block range, a result count, gas): asking again
# unchanged cannot help, the caller has to split the request.
_REQUEST_TOO_BIG = ("range", "result", "too large", "too big", "size", "exceed", "gas")


def _transient(err) -> bool:
    """A JSON-RPC error worth retrying unchanged: rate limiting or a node-side hiccup."""
    if not isinstance(err, dict):
        return False
    text = str(err.get("message", "")).lower()
    if "revert" in text:
        return False
    if "rate limit" in text or "too many requests" in text:
        return True
    code = err.get("code")
    return type(code) is int and code in RETRY_RPC_CODES and not any(w in text for w in _REQUEST_TOO_BIG)


class Beside:
    """``work(client)`` on a daemon thread (``deadline.Background``) with a sibling of ``owner`` (a
    connection of its own), beside the caller's requests to the same node. ``join``, in the
    caller's thread, gives its result or raises its failure (a deadline that fires meanwhile names
    the node); ``on_failure`` is called on the thread when it fails (to stop work the caller shares
    with it). The sibling's counters are added to the owner's once, when both the work has ended
    and the caller has closed it, whichever comes last (work still in a request when the caller
    fails adds them when that request ends)."""

    def __init__(self, work: Callable[[RpcClient], Any], owner: RpcClient, on_failure: Callable[[], None] | None = None,
                 name: str = "rpc-beside"):
        self.owner, self.client, self.on_failure = owner, owner.sibling(), on_failure
        self.lock, self.running, self.closed = threading.Lock(), True, False
        self.task = Background(partial(self._run, work), name, owner.describe())

    def _run(self, work: Callable[[RpcClient], Any]) -> Any:
        try:
            return work(self.client)
        except BaseException:
            if self.on_failure is not None:
                self.on_failure()
            raise
        finally:
            with self.lock:
                self.running = False
                if self.closed:
                    self.owner.counters.add(self.client.counters)

    def join(self) -> Any:
        return self.task.result()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            if not self.running:
                self.owner.counters.add(self.client.counters)

    def __enter__(self) -> Beside:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
