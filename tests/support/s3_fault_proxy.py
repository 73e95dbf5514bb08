"""A local HTTP proxy in front of moto's S3 server that fails on purpose, for publish fault tests.

Every request is forwarded unchanged (moto does not check signatures) unless a rule hits:

    S3FaultProxy(moto_url, fail_puts_after=3)        PUTs after the 3rd answer 500 InternalError
    S3FaultProxy(moto_url, drop_puts_after=3)        PUTs after the 3rd lose their connection
    S3FaultProxy(moto_url, fail_keys=("status",))    PUTs of these keys answer 500
    S3FaultProxy(moto_url, bad_key="AKIABAD")        requests signed with that key id answer 403
    S3FaultProxy(moto_url, drip_puts_under="a/")     answers to PUTs of keys under a/ trickle out, a
                                                     byte a second (each socket wait stays short)

``puts`` lists the keys of the PUTs that went through, in order.

``stored_objects(s3, bucket)`` reads what a bucket of the in-process moto server holds.
"""
from __future__ import annotations

import hashlib
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

import requests

ERROR = '<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message></Error>'
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


def stored_objects(s3, bucket: str) -> dict[str, bytes]:
    """Every object of ``bucket`` (key -> bytes), as ``s3`` (a boto3 client of the moto server
    the tests run in this process) would return them.

    The keys, sizes and ETags come from the S3 API's listing; the bytes from moto's store, which
    serves them, since fetching a few hundred objects one GET at a time costs seconds per look.
    Each body is held to its listing (size, and MD5 where the ETag is one), so a store that
    disagreed with what the API serves fails here instead of passing a comparison it should not."""
    from moto.s3.models import s3_backends

    listed = {o["Key"]: o for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
              for o in page.get("Contents", ())}
    partition, account = s3_backends.bucket_accounts[bucket]
    held = dict(s3_backends[account][partition].buckets[bucket].keys.items())
    assert held.keys() == listed.keys(), sorted(held.keys() ^ listed.keys())[:10]
    out = {}
    for key, entry in listed.items():
        body = held[key].value
        etag = entry["ETag"].strip('"')
        assert len(body) == entry["Size"] and ("-" in etag or hashlib.md5(body).hexdigest() == etag), key
        out[key] = body
    return out


class S3FaultProxy:
    def __init__(self, upstream: str, *, fail_puts_after: int | None = None, drop_puts_after: int | None = None,
                 fail_keys: tuple[str, ...] = (), bad_key: str | None = None, drip_puts_under: str | None = None,
                 drip_seconds: int = 60):
        self.upstream = upstream.rstrip("/")
        self.fail_puts_after = fail_puts_after
        self.drop_puts_after = drop_puts_after
        self.fail_keys = fail_keys
        self.bad_key = bad_key
        self.drip_puts_under = drip_puts_under
        self.drip_seconds = drip_seconds
        self.puts: list[str] = []
        self.put_count = 0
        self._lock = threading.Lock()
        self._session = requests.Session()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> S3FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._session.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"proxy": self})



class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    proxy: S3FaultProxy

    def log_message(self, *args) -> None:
        pass

    def _error(self, status: int, code: str, message: str) -> None:
        body = ERROR.format(code=code, message=message).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _any(self) -> None:
        proxy = self.proxy
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if proxy.bad_key and f"Credential={proxy.bad_key}/" in (self.headers.get("Authorization") or ""):
            return self._error(403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
        key = unquote(urlsplit(self.path).path).split("/", 2)[-1]
        if self.command == "PUT" and "?" not in self.path and self._put_fault(key):
            return None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        resp = proxy._session.request(self.command, proxy.upstream + self.path, data=body, headers=headers,
                                      timeout=60, allow_redirects=False)
        if self.command == "PUT" and resp.status_code == 200 and "?" not in self.path:
            with proxy._lock:
                proxy.puts.append(key)
            if proxy.drip_puts_under is not None and key.startswith(proxy.drip_puts_under):
                return self._drip(resp)
        self._relay(resp)

    def _drip(self, resp) -> None:
        """The answer, a byte a second, until the client hangs up (or ``drip_seconds`` pass)."""
        head = f"HTTP/1.1 {resp.status_code} OK\r\nContent-Length: {len(resp.content)}\r\n\r\n".encode()
        data = head + resp.content
        try:
            n = min(len(data), self.proxy.drip_seconds)
            for i in range(n):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(1)
            self.wfile.write(data[n:])
        except OSError:
            self.close_connection = True

    def _put_fault(self, key: str) -> bool:
        """Fail or drop this object's upload if the proxy is told to; whether it did."""
        proxy = self.proxy
        with proxy._lock:
            proxy.put_count += 1
            n = proxy.put_count
        if key in proxy.fail_keys or (proxy.fail_puts_after is not None and n > proxy.fail_puts_after):
            self._error(500, "InternalError", "We encountered an internal error. Please try again.")
            return True
        if proxy.drop_puts_after is not None and n > proxy.drop_puts_after:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return True
        return False

    def _relay(self, resp) -> None:
        self.send_response(resp.status_code)
        for k, v in resp.headers.items():
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(resp.content)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(resp.content)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any
