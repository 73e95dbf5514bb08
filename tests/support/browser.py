"""Drive the system's headless Chromium over the DevTools protocol (CDP).

CDP over the ``websockets`` package (already installed as a dependency of web3) rather than
playwright or pyppeteer, which download their own browser builds, or selenium, which would add
chromium-driver and a WebDriver layer for the few commands the page tests need: navigate, evaluate,
resize, screenshot, and collect console errors.
"""
from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path

import requests
from websockets.sync.client import connect

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def executable() -> str | None:
    return next((p for p in map(shutil.which, CANDIDATES) if p), None)


class Chromium:
    def __init__(self, profile_dir: Path, timeout: float = 30.0):
        exe = executable()
        if exe is None:
            raise RuntimeError("no chromium on PATH: apt-get install chromium (.ci/run installs it)")
        self.timeout = timeout
        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
             "--remote-debugging-port=0", f"--user-data-dir={profile_dir}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile_dir / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        page = next(t for t in requests.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json() if t["type"] == "page")
        self._stack = ExitStack()
        self.ws = self._stack.enter_context(connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=timeout))
        self._id = 0
        self.events: list[dict] = []
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")

    # ---- protocol ------------------------------------------------------------------------------

    def send(self, method: str, params: dict | None = None) -> dict:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params or {}}))
        while True:
            msg = json.loads(self.ws.recv(timeout=self.timeout))
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method: str, since: int = 0) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            for ev in self.events[since:]:
                if ev.get("method") == method:
                    return ev
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(method)
            try:
                self.events.append(json.loads(self.ws.recv(timeout=left)))
            except TimeoutError:
                raise TimeoutError(method) from None

    # ---- actions -------------------------------------------------------------------------------

    def viewport(self, width: int, height: int) -> None:
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})

    def scripts(self, enabled: bool) -> None:
        self.send("Emulation.setScriptExecutionDisabled", {"value": not enabled})

    def goto(self, url: str) -> None:
        mark = len(self.events)
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired", mark)

    def eval(self, expression: str):
        res = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in res:
            raise RuntimeError(f"page script failed: {res['exceptionDetails'].get('text')}: {expression[:80]}")
        return res["result"].get("value")

    def wait_for(self, expression: str) -> None:
        """Until ``expression`` is true. A page navigating meanwhile (a form submitted) drops the
        evaluation's context: that counts as not yet."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                if self.eval(expression):
                    return
            except RuntimeError as exc:
                if "navigated or closed" not in str(exc) and "context" not in str(exc).lower():
                    raise
            if time.monotonic() > deadline:
                raise TimeoutError(expression)
            time.sleep(0.05)

    def screenshot(self, path: Path, full_page: bool = False, max_height: int = 8000) -> tuple[int, int]:
        params = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            width, height = int(size["width"]), min(int(size["height"]), max_height)
            params.update(captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1})
        data = base64.b64decode(self.send("Page.captureScreenshot", params)["data"])
        path.write_bytes(data)
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")  # PNG IHDR size

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads the browser logged so far."""
        out = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"{p['entry'].get('text')} {p['entry'].get('url', '')}".strip())
        return out

    def close(self) -> None:
        try:
            if getattr(self, "_stack", None) is not None:
                self._stack.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
