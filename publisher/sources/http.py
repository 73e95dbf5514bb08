"""GET/POST of JSON to third-party APIs: timeouts, bounded bodies, retries with backoff and jitter,
and errors that name the source with its URL masked.

Request headers may carry API keys: they are sent, never printed. Messages name the source by its
kind ("price API"), never by URL, so neither keys nor internal hosts reach a log or ``out/``.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from decimal import Decimal

import requests

from .. import jsonin
from ..errors import PublisherError
from ..transport import Backoff, BodyTooLarge, Exhausted, check_url, with_retries
from ..transport import attempt as send_attempt
from ..transport import session as new_session


class SourceError(PublisherError):
    """A third-party source failed; the message names it."""


class SourceUnavailable(SourceError):
    """Down, refusing, or out of retries: a fallback source may be tried."""


class SourceMalformed(SourceError):
    """Answered, but not in the documented shape: never silently worked around."""


@dataclass
class HttpCounters:
    """Requests to third-party APIs in one run (the chain RPC has its own counters). Validator
    groups are fetched on several threads, so counts are added under a lock."""

    requests: int = 0
    retries: int = 0
    bytes_received: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, *, requests: int = 0, retries: int = 0, bytes_received: int = 0) -> None:
        with self._lock:
            self.requests += requests
            self.retries += retries
            self.bytes_received += bytes_received


@dataclass
class HttpClient:
    label: str  # how messages name the source, e.g. "validator API"
    base_url: str
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    timeout: float = 15.0
    deadline: float = 20.0  # total seconds per attempt, however slowly the answer drips
    max_attempts: int = 5
    backoff: float = 0.2
    max_backoff: float = 5.0
    max_retry_after: float = 30.0
    max_bytes: int = 8 * 1024 * 1024
    counters: HttpCounters = field(default_factory=HttpCounters)
    session: requests.Session = field(default_factory=new_session, repr=False)

    def __post_init__(self) -> None:
        self.base_url = check_url(self.base_url, self.label).rstrip("/")
        self._backoff = Backoff(self.backoff, self.max_backoff, self.max_retry_after)

    def where(self, path: str = "") -> str:
        return self.label

    def get_json(self, path: str, params: dict[str, str] | None = None):
        return self._request("GET", path, params=params)

    def post_json(self, path: str, body) -> object:
        return self._request("POST", path, data=json.dumps(body, separators=(",", ":")).encode())

    def malformed(self, path: str, reason: str) -> SourceMalformed:
        return SourceMalformed(f"{self.where(path)} returned a malformed body: {reason}")

    # -- transport ------------------------------------------------------------------------------

    def _request(self, method: str, path: str, *, params=None, data: bytes | None = None):
        url = self.base_url + path
        headers = {"Accept": "application/json", **self.headers}
        if data is not None:
            headers["Content-Type"] = "application/json"

        def send(n: int):
            self.counters.add(requests=1)
            try:
                # No redirects: they could carry the API key header to another host.
                resp, body = send_attempt(self.session, method, url, timeout=self.timeout, total=self.deadline,
                                          limit=self.max_bytes, what=self.label, params=params, data=data,
                                          headers=headers, allow_redirects=False)
            except BodyTooLarge:
                raise self.malformed(path, f"body exceeds {self.max_bytes} bytes") from None
            self.counters.add(bytes_received=len(body))
            return resp, body

        def judge(resp, body):
            if resp.status_code != 200:
                raise SourceUnavailable(f"{self.where(path)} failed: HTTP {resp.status_code}")
            try:
                # Decimals keep numbers exact as the source wrote them (prices, uptime percent).
                return jsonin.loads(body, parse_float=Decimal)
            except ValueError:
                raise self.malformed(path, "not JSON") from None

        def on_retry(n: int) -> None:
            self.counters.add(retries=1)

        try:
            return with_retries(send, judge, attempts=self.max_attempts, backoff=self._backoff, on_retry=on_retry)
        except Exhausted as exc:
            raise SourceUnavailable(f"{self.where(path)} failed: {exc.last} after {exc.attempts} attempts") from None


def one_line(text: str, limit: int = 200) -> str:
    """Remote text made fit for a one-line message."""
    return " ".join(str(text).split())[:limit]
