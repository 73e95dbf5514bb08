"""Local CDN emulation: the built files under their endpoint URLs with the same headers the CDN
sends, the rewards function for /rewards/byStake, and JSON errors for everything else."""
from __future__ import annotations

import os
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from .compute import rewards as R
from .compute.rewards import canonical_json
from .endpoints import requester_page
from .endpoints.calendar import CALENDAR_PATH
from .endpoints.registry import CACHE_POLICIES, Endpoint, file_for, load_all, match
from .endpoints.withdrawals import REQUESTER_PATH

CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS",
    "Access-Control-Allow-Headers": "*",
    "Access-Control-Max-Age": "86400",
}
MAX_PATH = 1024
MAX_SEGMENT = 200
TYPES = {".json": "application/json", ".html": "text/html; charset=utf-8", ".js": "text/javascript",
         ".css": "text/css", ".yaml": "application/yaml", ".ics": "text/calendar; charset=utf-8", ".xml": "application/atom+xml"}


def error_body(code: str, message: str) -> bytes:
    return canonical_json(R.error_body(code, message))


class Site:
    """Resolves a request to (status, headers, body) — the routing the CDN does."""

    def __init__(self, root: Path, max_age: int = 60):
        # Kept unresolved: a build flips the out/ link onto a new tree, and requests follow it.
        self.link = Path(os.path.abspath(root))
        self.max_age = max_age
        load_all()
        # The function answers from this directory's params, whatever the environment says.
        self.function_config = {"REWARDS_PARAMS_URL": (self.link / "rewards" / "params.json").as_uri(),
                                "QUEUE_PARAMS_URL": (self.link / "withdrawals" / "params.json").as_uri(),
                                "REWARDS_PARAMS_TTL": os.environ.get("REWARDS_PARAMS_TTL", "")}

    def get(self, raw_path: str, query: str, method: str) -> tuple[int, dict, bytes]:
        path = raw_path[:-1] if len(raw_path) > 1 and raw_path.endswith("/") else raw_path  # as the CDN's viewer function
        ep = match(path)
        if ep is not None and ep.is_function and ep.path != requester_page.LOOKUP_PATH:
            return self._function(path, query, method)  # every method, as the function answers it
        if method == "OPTIONS":
            return 204, dict(CORS), b""
        if method not in ("GET", "HEAD"):
            return 405, {"Allow": "GET, HEAD, OPTIONS"}, error_body("method_not_allowed", f"{method} is not allowed")
        if ep is not None and ep.path == requester_page.LOOKUP_PATH:
            return _lookup(query)
        if ep is not None:
            path = ep.canonical(path)
        target = self._file(path, ep)
        if target is None:
            return _missing(ep, path, raw_path)
        policy = CACHE_POLICIES[ep.cache if ep else "docs"].format(max_age=self.max_age)
        return 200, {"Content-Type": TYPES.get(target.suffix, "application/octet-stream"), "Cache-Control": policy}, target.read_bytes()

    def _file(self, path: str, ep: Endpoint | None) -> Path | None:
        """The published file at ``path`` in the live tree, or None."""
        if len(path) > MAX_PATH or any(len(part) > MAX_SEGMENT for part in path.split("/")):
            return None  # no published name is this long, and the file system would refuse it
        if any(part.startswith(".") for part in path.split("/")):
            return None  # the build's record and other dotfiles are not published
        try:
            root = self.link.resolve()
            target = (root / file_for(path)).resolve()
            if ep is None and path != "/" and not target.suffix:
                return None
            if not target.is_relative_to(root) or not target.is_file():
                return None
        except (OSError, ValueError):  # names the file system cannot even look up
            return None
        return target

    def _function(self, path: str, query: str, method: str) -> tuple[int, dict, bytes]:
        try:
            from .function.handler import handler
        except ImportError:
            return 503, {}, error_body("unavailable", "the rewards function is not available")
        # HEAD is answered as GET without the body (the handler writes none), so Content-Length is
        # the length a GET would return, as HTTP asks.
        as_method = "GET" if method == "HEAD" else method
        event = {"version": "2.0", "rawPath": path, "rawQueryString": query, "headers": {},
                 "requestContext": {"http": {"method": as_method, "path": path}}}
        resp = handler(event, None, config=self.function_config)
        body = resp.get("body", "")
        return resp["statusCode"], dict(resp.get("headers", {})), body.encode() if isinstance(body, str) else body


def _lookup(query: str) -> tuple[int, dict, bytes]:
    """The withdrawal lookup form's answer, as the CDN's viewer function gives it."""
    status, where, message = requester_page.lookup(query)
    if status != 302:
        return status, {}, error_body(where, message)
    return status, {"Location": where}, b""


def _missing(ep: Endpoint | None, path: str, raw_path: str) -> tuple[int, dict, bytes]:
    """The answer for a path without a file: for a requester's file, page or calendar a 400 when
    the address is malformed or a 404 that says why (``requester_page.missing``)."""
    if ep is not None and ep.path in REQUESTER_FILES:
        status, code, message = requester_page.missing(path.rsplit("/", 1)[-1])
        return status, {}, error_body(code, message)
    return 404, {}, error_body("not_found", f"no such resource: {raw_path[:200]}")


REQUESTER_FILES = (REQUESTER_PATH, requester_page.PAGE_PATH, CALENDAR_PATH)


class Server(ThreadingHTTPServer):
    # The stdlib listens with a backlog of 5: a burst of 50 clients overflows it and the kernel
    # drops SYNs, which clients see as 1 s (then 3 s …) retransmission stalls.
    request_queue_size = 1024
    daemon_threads = True


def make_server(root: Path, host: str = "127.0.0.1", port: int = 8000, max_age: int = 60) -> ThreadingHTTPServer:
    site = Site(root, max_age)

    class Handler(BaseHTTPRequestHandler):
        server_version = "publisher-serve"

        def _answer(self, method: str) -> None:
            parts = urlsplit(self.path)
            status, headers, body = site.get(parts.path, parts.query, method)
            self.send_response(status)
            for k, v in {**({"Content-Type": "application/json"} if body else {}), **CORS, **headers}.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if method != "HEAD":
                self.wfile.write(body)

        def __getattr__(self, name: str):
            # Every method gets an answer (405 for those we don't serve), not the stdlib's 501 page.
            if name.startswith("do_"):
                return lambda: self._answer(name[3:])
            raise AttributeError(name)

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            # A request the stdlib's parser refuses (a malformed or overlong request line, raw bytes
            # outside ASCII): the API's JSON error body, not the stdlib's HTML page.
            body = error_body(HTTPStatus(code).phrase.lower().replace(" ", "_").replace("-", "_"),
                              (message or HTTPStatus(code).phrase)[:200])
            self.send_response(code)
            for k, v in {"Content-Type": "application/json", **CORS, "Connection": "close"}.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.close_connection = True
            if self.command != "HEAD" and code >= 200 and code not in (204, 304):
                self.wfile.write(body)

        def log_message(self, fmt, *args):
            pass

    return Server((host, port), Handler)
