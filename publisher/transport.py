"""HTTP plumbing shared by the chain RPC client and the third-party API clients: masked URLs,
which statuses are worth retrying, backoff with jitter that honours Retry-After, bounded bodies."""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import requests

RETRY_STATUS = {429, 500, 502, 503, 504}


def mask_url(url: str) -> str:
    """Keep scheme, host and port; hide path, query and credentials (where providers put keys)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    hidden = "/***" if (parts.path.strip("/") or parts.query or parts.username) else ""
    return f"{parts.scheme}://{host}{port}{hidden}"


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


def read_bounded(resp: requests.Response, limit: int) -> bytes:
    """The body of a streamed response, refusing more than ``limit`` bytes (declared or actual)."""
    declared = resp.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        resp.close()
        raise BodyTooLarge(limit)
    chunks, size = [], 0
    for chunk in resp.iter_content(1 << 16):
        size += len(chunk)
        if size > limit:
            resp.close()
            raise BodyTooLarge(limit)
        chunks.append(chunk)
    return b"".join(chunks)
