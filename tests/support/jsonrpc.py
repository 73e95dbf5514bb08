"""Local JSON-RPC servers for the tests: one that answers each request item with a function of it,
and a proxy in front of anvil whose eth_getLogs refuses wide ranges, as providers do.

    with JsonRpcServer(lambda item: {"jsonrpc": "2.0", "id": item["id"], "result": "0x1"}) as server:
        RpcClient([server.url])...
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests


class JsonRpcServer:
    """Answers a single request or a batch, item by item, with ``answer(item)``; ``paths`` holds
    the request target of every POST (a forward proxy is sent the whole URL)."""

    def __init__(self, answer: Callable[[dict], dict]):
        self.paths: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                server.paths.append(self.path)
                req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                out = [answer(i) for i in (req if isinstance(req, list) else [req])]
                data = json.dumps(out if isinstance(req, list) else out[0]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class LimitedRpc(JsonRpcServer):
    """A JSON-RPC proxy in front of ``upstream`` whose eth_getLogs refuses ranges wider than
    ``limit`` blocks, as providers do, or (``fail``) answers every eth_getLogs with a server error;
    ``refused`` counts the ranges refused."""

    def __init__(self, upstream: str, limit: int = 10**9, fail: bool = False):
        self.upstream, self.limit, self.fail, self.refused = upstream, limit, fail, 0
        super().__init__(self.answer)

    def answer(self, item: dict) -> dict:
        if item["method"] == "eth_getLogs":
            f = item["params"][0]
            if self.fail:
                return {"jsonrpc": "2.0", "id": item["id"], "error": {"code": -32000, "message": "internal error"}}
            if int(f["toBlock"], 16) - int(f["fromBlock"], 16) + 1 > self.limit:
                self.refused += 1
                return {"jsonrpc": "2.0", "id": item["id"], "error": {"code": -32005, "message": f"query exceeds max block range {self.limit}"}}
        return requests.post(self.upstream, json=item, timeout=10).json()
