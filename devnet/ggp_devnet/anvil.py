"""Lifecycle of a local anvil node: find the pinned binary, start it on a free port, wait until it
answers, stop it. Startup failures become one-line, actionable errors."""
from __future__ import annotations

import ctypes
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import requests

from publisher.errors import PublisherError

CHAIN_ID = 43112  # Avalanche's local-network C-Chain id
GENESIS_TIME = 1767225600  # 2026-01-01T00:00:00Z: fixed so every run has the same blocks
MNEMONIC = "test test test test test test test test test test test junk"
BLOCK_GAS_LIMIT = 100_000_000_000  # room for the 100 000-staker state in one seeding block

_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
PR_SET_PDEATHSIG = 1


def _resolve_prctl():
    # Resolved before any fork: the child may only call it, not load libraries.
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _resolve_prctl()


def _stop_with_parent() -> None:
    """Runs in the child: the kernel sends anvil SIGTERM when the thread that started it dies, so
    a crashed or killed publisher (or test run) leaves no node behind."""
    _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)


def find_anvil() -> str:
    """The pinned anvil from node_modules (native binary first), or $PUBLISHER_ANVIL, or PATH."""
    if os.environ.get("PUBLISHER_ANVIL"):
        return os.environ["PUBLISHER_ANVIL"]
    system = platform.system().lower()
    arch = _ARCH.get(platform.machine().lower(), platform.machine().lower())
    for root in _roots():
        native = root / "node_modules" / "@foundry-rs" / f"anvil-{system}-{arch}" / "bin" / "anvil"
        if native.is_file():
            return str(native)
        shim = root / "node_modules" / ".bin" / "anvil"
        if shim.is_file():
            return str(shim)
    found = shutil.which("anvil")
    if found:
        return found
    raise PublisherError("anvil not found: run `npm install` in the project root (or set PUBLISHER_ANVIL to an anvil binary)")


def _roots():
    seen = set()
    for start in (Path(__file__).resolve(), Path.cwd().resolve()):
        for parent in [start, *start.parents]:
            if parent not in seen and (parent / "package.json").is_file():
                seen.add(parent)
                yield parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_taken(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class Anvil:
    """``with Anvil() as node: node.url`` — a fresh, deterministic chain for the block's lifetime."""

    def __init__(self, port: int | None = None, *, chain_id: int = CHAIN_ID, genesis_time: int = GENESIS_TIME,
                 keep_states: int | None = None, dump_to: Path | None = None, load_from: Path | None = None):
        self.port = port or free_port()
        self.chain_id = chain_id
        self.genesis_time = genesis_time
        # A node without archive state: only the last ``keep_states`` blocks' states are kept
        # (headers and logs of every block still are), as on a pruned node.
        self.keep_states = keep_states
        # The whole chain (blocks, receipts, every block's state) written to ``dump_to`` as the
        # node stops, or read from ``load_from`` as it starts (images.py).
        self.dump_to = dump_to
        self.load_from = load_from
        self.proc: subprocess.Popen | None = None
        self.home: str | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Anvil:
        if _port_taken(self.port):
            raise PublisherError(f"port {self.port} is already in use: choose another with --port or stop the process using it")
        cmd = [
            find_anvil(), "--host", "127.0.0.1", "--port", str(self.port),
            "--chain-id", str(self.chain_id), "--timestamp", str(self.genesis_time),
            "--mnemonic", MNEMONIC, "--accounts", "4", "--balance", "10000000",
            "--gas-limit", str(BLOCK_GAS_LIMIT), "--base-fee", "0", "--gas-price", "0",
            "--hardfork", "cancun", "--disable-code-size-limit", "--no-request-size-limit",
            "--order", "fifo", "--quiet",
        ]
        if self.keep_states is not None:
            cmd += ["--prune-history", str(self.keep_states)]
        if self.dump_to is not None:
            cmd += ["--preserve-historical-states", "--dump-state", str(self.dump_to)]
        if self.load_from is not None:
            cmd += ["--load-state", str(self.load_from)]
        # A home of its own, removed as it stops: past some hundred blocks anvil moves older states
        # to files under $HOME/.foundry/anvil/tmp, which it leaves there when it is stopped by a
        # signal (gigabytes a day of test and benchmark runs).
        self.home = tempfile.mkdtemp(prefix="anvil-home-")
        try:
            # Only from the main thread: the death signal follows the starting thread, not the process.
            tie = _PRCTL is not None and threading.current_thread() is threading.main_thread()
            # A session of its own: a Ctrl-C at the terminal reaches the publisher only, which stops
            # the node after its own cleanup (which may still talk to it), not before.
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         env={**os.environ, "HOME": self.home},
                                         preexec_fn=_stop_with_parent if tie else None, start_new_session=True)
        except OSError as exc:
            self.stop()
            raise PublisherError(f"cannot start anvil ({cmd[0]}): {exc.strerror}; run `npm install` in the project root") from exc
        try:
            self._wait_ready()
        except BaseException:  # a Ctrl-C while it starts: ``with`` calls no __exit__ for a failed __enter__
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []}
        assert self.proc is not None and self.proc.stderr is not None  # started by start()
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = (self.proc.stderr.read() or b"").decode(errors="replace").strip().splitlines()
                raise PublisherError(f"anvil exited at startup: {err[-1] if err else 'no output'}")
            try:
                if requests.post(self.url, json=body, timeout=1).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.05)
        raise PublisherError(f"anvil did not answer on {self.url} within {timeout:.0f}s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(120 if self.dump_to else 5)  # writing the chain out takes a while
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                if self.dump_to is not None:  # cut off while writing: no chain rather than half of one
                    self.dump_to.unlink(missing_ok=True)
        if self.proc and self.proc.stderr:
            self.proc.stderr.close()
        self.proc = None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None

    def __enter__(self) -> Anvil:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
