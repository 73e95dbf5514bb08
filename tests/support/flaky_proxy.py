"""A local HTTP proxy in front of a real JSON-RPC node that misbehaves on purpose.

Faults are scripted per request, in arrival order: each request takes the next entry of
``faults`` (``None`` forwards it untouched), so a test decides exactly which requests fail and
how. Size limits model nodes that refuse big requests: ``max_body`` answers HTTP 413 above a body
size, ``max_call_data`` answers a JSON-RPC "out of gas" error for each eth_call whose calldata is
longer than the limit while the rest of the batch goes through.

    with FlakyProxy(node_url, faults=[429, 500, "hang", None, 503]) as proxy:
        RpcClient([proxy.url], timeout=0.3, backoff=0.01)...
"""
from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests

# What each scripted fault does:
#   429, 500, 502, 503, 504  HTTP error status with a small body (429 carries Retry-After: 0)
#   "hang"                   never answer (the client must time out), then drop the connection
#   "reset"                  close the connection without answering
#   "garbage"                HTTP 200 with a body that is not JSON
#   "busy"                   HTTP 200 with a JSON-RPC "rate limited" error (-32005) for the request
#   "busy items"             HTTP 200 with that error for every item of a batch, as providers do
#   "too wide"               HTTP 200 with a -32005 "query exceeds max block range" error: same code,
#                            but about the request itself, so it must not be retried unchanged
#   "drip"                   the real answer, its body sent one byte every ``drip_seconds``
#   "slow"                   the real answer after ``hang_seconds``
#   "random"                 the real answer with every eth_call result replaced by random bytes
#   "nested"                 HTTP 200 with 50 MB of "[" (a JSON parser's recursion bomb)
#   "huge"                   HTTP 200 with a 60 MB body that is not JSON
#   "truncated"              the real answer cut in half, with the full Content-Length declared
#   "chain 1"                the real answer, with eth_chainId rewritten to 0x1
#
# ``always`` applies one fault to every request after the scripted ones, and ``only`` restricts
# faults to requests that contain that JSON-RPC method (e.g. "eth_call": everything else passes).
# ``on_request(n, body)`` runs before request n (1-based) is handled, e.g. to reorg the upstream.
# ``edit_logs(logs)`` rewrites every eth_getLogs answer that passes untouched (a node that loses or
# alters logs).
FAULTS = (429, 500, 502, 503, 504, "hang", "reset", "garbage", "busy", "busy items", "too wide",
          "drip", "slow", "random", "nested", "huge", "truncated", "chain 1")


class FlakyProxy:
    def __init__(self, upstream: str, faults=(), *, hang_seconds: float = 2.0,
                 max_body: int | None = None, max_call_data: int | None = None, always=None,
                 only: str | None = None, drip_seconds: float = 0.5, on_request=None, edit_logs=None):
        for f in (*faults, always):
            if f is not None and f not in FAULTS:
                raise ValueError(f"unknown fault {f!r}")
        self.upstream = upstream
        self.faults = list(faults)
        self.always = always
        self.only = only
        self.drip_seconds = drip_seconds
        self.on_request = on_request
        self.edit_logs = edit_logs
        self.hang_seconds = hang_seconds
        self.max_body = max_body
        self.max_call_data = max_call_data
        self.requests = 0  # every HTTP request received
        self.injected: list = []  # the faults actually applied, in order
        self.refused_calls = 0  # eth_calls answered "out of gas" for their size
        self.refused_bodies = 0  # bodies answered 413
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._upstream = requests.Session()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        # A client that gave up (a deadline) closes its end: nothing to report.
        self._server.handle_error = lambda request, address: None
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FlakyProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._upstream.close()

    # -- behaviour ------------------------------------------------------------------------------

    def _next_fault(self, body: bytes):
        with self._lock:
            self.requests += 1
            n = self.requests
        if self.on_request is not None:
            self.on_request(n, body)
        if self.only is not None and f'"{self.only}"'.encode() not in body:
            return None
        with self._lock:
            fault = self.faults.pop(0) if self.faults else self.always
            if fault is not None:
                self.injected.append(fault)
            return fault

    def _forward(self, body: bytes) -> tuple[int, bytes]:
        resp = self._upstream.post(self.upstream, data=body, headers={"Content-Type": "application/json"}, timeout=120)
        return resp.status_code, resp.content

    def _edit_logs(self, body: bytes, raw: bytes) -> bytes:
        sent = json.loads(body)
        methods = {i.get("id"): i.get("method") for i in (sent if isinstance(sent, list) else [sent])}
        got = json.loads(raw)
        for item in got if isinstance(got, list) else [got]:
            if methods.get(item.get("id")) == "eth_getLogs" and isinstance(item.get("result"), list):
                item["result"] = self.edit_logs(item["result"])
        return json.dumps(got).encode()

    def _rewrite(self, body: bytes, raw: bytes, fault: str) -> bytes:
        import os

        sent = json.loads(body)
        methods = {i.get("id"): i.get("method") for i in (sent if isinstance(sent, list) else [sent])}
        got = json.loads(raw)
        for item in got if isinstance(got, list) else [got]:
            method = methods.get(item.get("id"))
            if fault == "random" and method == "eth_call" and "result" in item:
                item["result"] = "0x" + os.urandom(64 + (len(item["result"]) // 4)).hex()
            if fault == "chain 1" and method == "eth_chainId":
                item["result"] = "0x1"
        return json.dumps(got).encode()

    def _refuse_big_calls(self, body: bytes) -> tuple[int, bytes]:
        """Answer oversized eth_calls with an error; forward the rest as one request."""
        payload = json.loads(body)
        items = payload if isinstance(payload, list) else [payload]
        refused, passed = {}, []
        for item in items:
            data = ""
            if item.get("method") == "eth_call":
                data = (item.get("params") or [{}])[0].get("data", "")
            if len(data) > self.max_call_data:
                refused[item.get("id")] = {"jsonrpc": "2.0", "id": item.get("id"),
                                           "error": {"code": -32000, "message": "out of gas"}}
            else:
                passed.append(item)
        with self._lock:
            self.refused_calls += len(refused)
        if not refused:
            return self._forward(body)
        answers = dict(refused)
        if passed:
            status, raw = self._forward(json.dumps(passed).encode())
            if status != 200:
                return status, raw
            got = json.loads(raw)
            for a in got if isinstance(got, list) else [got]:
                answers[a.get("id")] = a
        ordered = [answers[item.get("id")] for item in items]
        out = ordered if isinstance(payload, list) else ordered[0]
        return 200, json.dumps(out).encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"proxy": self})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    proxy: FlakyProxy

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: bytes, extra: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _drip(self, raw: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.close_connection = True
        try:
            for i in range(len(raw)):
                if self.proxy._stop.wait(self.proxy.drip_seconds):
                    return
                self.wfile.write(raw[i:i + 1])
                self.wfile.flush()
        except OSError:  # the client gave up, as it should
            pass

    def do_GET(self) -> None:
        """Third-party REST APIs: forwarded with the path and query; status, drip and
        slow faults apply as for JSON-RPC."""
        proxy = self.proxy
        fault = proxy._next_fault(b"")
        if isinstance(fault, int):
            self._send(fault, b'{"error":"injected"}', {"Retry-After": "0"} if fault == 429 else {})
            return
        if fault == "slow":
            proxy._stop.wait(proxy.hang_seconds)
        resp = proxy._upstream.get(proxy.upstream.rstrip("/") + self.path, timeout=120,
                                   headers={k: v for k, v in self.headers.items() if k.lower().startswith("x-")})
        if fault == "drip":
            return self._drip(resp.content)
        if fault == "garbage":
            return self._send(200, b"<html>bad gateway</html>")
        self._send(resp.status_code, resp.content)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        fault = self.proxy._next_fault(body)
        if isinstance(fault, int):
            self._send(fault, b'{"error":"injected"}', {"Retry-After": "0"} if fault == 429 else {})
            return
        act = _POST_FAULTS.get(fault)
        if act is not None:
            act(self, body, fault)
            return
        self._pass_on(body)

    def _nested(self, body: bytes, fault: str) -> None:
        self._send(200, b"[" * (50 << 20))

    def _huge(self, body: bytes, fault: str) -> None:
        self._send(200, b"x" * (60 << 20))

    def _forwarded(self, body: bytes, fault: str) -> None:
        """Forwarded, then answered late, slowly, cut short or edited."""
        if fault == "slow":
            self.proxy._stop.wait(self.proxy.hang_seconds)
        status, raw = self.proxy._forward(body)
        if fault == "drip":
            return self._drip(raw)
        if fault == "truncated":
            return self._truncated(status, raw)
        if fault in ("random", "chain 1"):
            raw = self.proxy._rewrite(body, raw, fault)
        self._send(status, raw)

    def _truncated(self, status: int, raw: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw[: len(raw) // 2])
        self.close_connection = True

    def _hang(self, body: bytes, fault: str) -> None:
        self.proxy._stop.wait(self.proxy.hang_seconds)
        self.close_connection = True

    def _reset(self, body: bytes, fault: str) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _garbage(self, body: bytes, fault: str) -> None:
        self._send(200, b"<html>bad gateway</html>")

    def _busy(self, body: bytes, fault: str) -> None:
        payload = json.loads(body)
        items = payload if isinstance(payload, list) else [payload]
        message = "query exceeds max block range 2048" if fault == "too wide" else "rate limited"
        errors = [{"jsonrpc": "2.0", "id": i.get("id"), "error": {"code": -32005, "message": message}} for i in items]
        if fault == "busy" or not isinstance(payload, list):
            errors = errors[0] if len(errors) == 1 else {"jsonrpc": "2.0", "id": None, "error": errors[0]["error"]}
        self._send(200, json.dumps(errors).encode())

    def _pass_on(self, body: bytes) -> None:
        """No fault: forwarded, unless the body or a call's data is over the proxy's limits."""
        proxy = self.proxy
        if proxy.max_body is not None and len(body) > proxy.max_body:
            with proxy._lock:
                proxy.refused_bodies += 1
            self._send(413, b'{"error":"request entity too large"}')
            return
        if proxy.max_call_data is not None:
            status, raw = proxy._refuse_big_calls(body)
        else:
            status, raw = proxy._forward(body)
        if proxy.edit_logs is not None and status == 200 and b'"eth_getLogs"' in body:
            raw = proxy._edit_logs(body, raw)
        self._send(status, raw)


# JSON-RPC faults other than an HTTP status, by name.
_POST_FAULTS = {
    "nested": _Handler._nested, "huge": _Handler._huge, "hang": _Handler._hang, "reset": _Handler._reset,
    "garbage": _Handler._garbage,
    **dict.fromkeys(("drip", "slow", "random", "truncated", "chain 1"), _Handler._forwarded),
    **dict.fromkeys(("busy", "busy items", "too wide"), _Handler._busy),
}
