"""Ctrl-C during `publisher build --scenario demo`, as a terminal sends it (SIGINT to the whole
process group): one line, "interrupted", exit 130; the devnet's node is stopped; the out directory
is as it was before the run, with no half-written tree beside it, and no temporary files are left."""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.trees import copy_of

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads processes from /proc")


def _processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, start time, command line) of every process."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fields[0] not in ("Z", "X"):
            out[int(entry.name)] = (int(fields[1]), fields[19], cmdline)
    return out


def _state(directory: Path) -> dict[str, str]:
    """Every entry under ``directory``: a file's sha256, a link's target, a folder."""
    got = {}
    for path in sorted(directory.rglob("*")):
        name = str(path.relative_to(directory))
        if path.is_symlink():
            got[name] = "-> " + os.readlink(path)
        elif path.is_dir():
            got[name] = "folder"
        else:
            got[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return got


@pytest.mark.parametrize("moment", ["seeding the devnet", "writing the tree"])
def test_ctrl_c_during_a_devnet_build_stops_everything_and_leaves_nothing(moment, tmp_path):
    site, tmp = tmp_path / "site", tmp_path / "tmp"
    tmp.mkdir()
    out = site / "out"
    copy_of({"/": b"<html>the previous run</html>", "/status": b'{"previous": true}'}, out)
    before = _state(site)
    assert before["out"] == "-> .out.a"
    staging = site / ".out.b"  # the tree a build writes while out/ still shows .out.a

    env = {**os.environ, "TMPDIR": str(tmp), "SOURCE_DATE_EPOCH": "1800000000"}
    env.pop("PUBLISHER_RPC_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "publisher.cli", "build", "--scenario", "demo", "--out", str(out), "--force"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,  # its own group, as a terminal's foreground job
                            # and Ctrl-C at its default, as there: a suite run as a background job
                            # (nohup, &) would otherwise pass on SIGINT ignored
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        anvil: dict[int, str] = {}
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None, f"the build ended before its interrupt: {proc.communicate()}"
            assert time.monotonic() < deadline, f"no {moment} within 240s"
            anvil.update({pid: started for pid, (parent, started, cmd) in _processes().items()
                          if parent == proc.pid and "anvil" in cmd})
            if anvil and (moment == "seeding the devnet" or (staging.is_dir() and any(staging.iterdir()))):
                break
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C at the terminal does
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    assert (proc.returncode, stderr, stdout) == (130, "interrupted\n", "")
    now = _processes()
    assert not [pid for pid, started in anvil.items() if pid in now and now[pid][1] == started], "anvil outlived the build"
    assert _state(site) == before, "out/ changed, or a partial tree is left beside it"
    assert not list(tmp.iterdir()), "temporary files left behind"


def test_a_ctrl_c_a_finalizer_swallows_is_still_noted_for_the_loops():
    """The interpreter prints and drops a KeyboardInterrupt raised in a finalizer, and the run would
    go on (`publisher devnet --live` kept playing days after a Ctrl-C): the commands' handler notes
    every signal, which the live loop checks at each day."""
    code = ("import signal\n"
            "from publisher import cli, interrupts\n"
            "cli.stop_on_signals()\n"
            "class Finalized:\n"
            "    def __del__(self):\n"
            "        signal.raise_signal(signal.SIGINT)\n"
            "Finalized()\n"
            "print('went on', interrupts.received())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "Exception ignored" in done.stderr and "KeyboardInterrupt" in done.stderr
    assert done.stdout.strip() == "went on True"
