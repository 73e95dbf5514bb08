"""A small loopback load generator for `publisher serve`: N requests over ``concurrency`` threads,
each on a fresh connection (as many distinct clients would), with per-request latencies."""
from __future__ import annotations

import http.client
import threading
import time
from dataclasses import dataclass, field


@dataclass
class LoadResult:
    requests: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def pct(self, q: float) -> float:
        xs = sorted(self.latencies)
        return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def run(port: int, paths: list[str], total: int, concurrency: int = 50, timeout: float = 10.0) -> LoadResult:
    lock = threading.Lock()
    counter = iter(range(total))
    result = LoadResult(total, 0.0)

    def worker() -> None:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            path = paths[i % len(paths)]
            t0 = time.perf_counter()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
                conn.request("GET", path)
                resp = conn.getresponse()
                body = resp.read()
                conn.close()
                ok = resp.status == 200 and len(body) == int(resp.headers.get("Content-Length", -1))
                err = None if ok else f"{path}: HTTP {resp.status}"
            except (OSError, http.client.HTTPException) as exc:
                err = f"{path}: {type(exc).__name__}"
            dt = time.perf_counter() - t0
            with lock:
                result.latencies.append(dt)
                if err:
                    result.errors.append(err)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout * total)
    result.seconds = time.perf_counter() - t0
    return result
