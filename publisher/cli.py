"""The `publisher` command: thin wrappers that parse options, call one core function and print a
summary. Failures exit non-zero with a one-line cause."""
from __future__ import annotations

import functools
import logging
import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from . import __version__, interrupts
from .config import NETWORKS
from .deadline import DeadlineExceeded, deadline, run_seconds
from .errors import PublisherError, cause

if TYPE_CHECKING:
    from types import ModuleType

    from .config import Profile

INSTALL_DEVNET = "pip install -e ./devnet in a checkout of the publisher (make setup does)"


def devnet_package() -> ModuleType:
    """The devnet (ggp_devnet, a distribution of its own beside the runtime package), or a
    one-line error naming how to install it."""
    try:
        import ggp_devnet
        import ggp_devnet.seed  # its own dependencies (rlp) too, before anything starts
    except ModuleNotFoundError as exc:
        raise PublisherError(f"the devnet is not installed ({exc.name} not found): {INSTALL_DEVNET}, "
                             "or read a node with --rpc-url") from None
    return ggp_devnet


class _LazyChoice(click.Choice):
    """A choice whose values are read from the code when first needed: the devnet's scenarios
    import the whole devnet, which no other command should pay for at start-up. Without the devnet
    installed any value passes here, and the command that would start one says how to install it."""

    def __init__(self, load):
        self._load = load
        super().__init__(())

    choices = property(lambda self: tuple(self._load()), lambda self, _: None)  # type: ignore[assignment]

    def convert(self, value, param, ctx):
        # A default is one of the choices: checking it would load the devnet for every build.
        if ctx is not None and param is not None and ctx.get_parameter_source(param.name) is ParameterSource.DEFAULT:
            return value
        if not self.choices:
            return value
        return super().convert(value, param, ctx)

    def get_metavar(self, param, ctx=None):  # type: ignore[override]
        return super().get_metavar(param, ctx) if self.choices else "SCENARIO"


@contextmanager
def reading(network: str, rpc_url: str | None, scenario: str = "demo") -> Iterator[Profile]:
    """The profile stage one reads: with the given RPC URLs, else the profile's own, else (devnet
    only) a throwaway devnet of ``scenario`` started here and stopped on the way out."""
    from .config import load_profile

    profile = load_profile(network, rpc_urls=tuple(u for u in (rpc_url or "").split(",") if u))
    if profile.rpc_urls:
        yield profile
        return
    if network != "devnet":
        raise PublisherError(f"no RPC URL for {network}: pass --rpc-url or set PUBLISHER_RPC_URL")
    devnet = devnet_package()
    with devnet.running(scenario) as net:
        yield devnet.devnet_profile(profile, net)


def _scenarios() -> list[str]:
    try:
        from ggp_devnet.scenarios import names
    except ModuleNotFoundError:
        return []
    return names()


NETWORK = click.option("--network", type=click.Choice(NETWORKS), default="devnet", show_default=True)
SCENARIOS = _LazyChoice(_scenarios)
RPC_URL = click.option("--rpc-url", envvar="PUBLISHER_RPC_URL", help="RPC URL(s), comma-separated fallbacks (secret: never printed).")
BLOCK = click.option("--block", type=int, help="Pin the run to this block (default: latest).")


def publish_target(fn):
    """The options naming where a built directory is published (``publish`` and ``watch``)."""
    for option in reversed((
        click.option("--bucket", required=True, help="Target S3 bucket."),
        click.option("--prefix", default="", help="Key prefix inside the bucket."),
        click.option("--endpoint-url", help="An S3-compatible endpoint instead of AWS (also used for CloudFront)."),
        click.option("--region", help="AWS region (default: the AWS configuration's, else us-east-1)."),
        click.option("--distribution-id", help="CloudFront distribution to invalidate when docs change."),
        click.option("--max-age", type=click.IntRange(min=1), help="Data max-age in seconds (default: the build's cadenceSeconds)."),
    )):
        fn = option(fn)
    return fn


def fail_cleanly(fn):
    """The one error boundary: every failure ends as one line naming its cause, and exit 1.
    "unexpected <type>" is reserved for bugs; its message is never shown (it could quote a URL with
    a key), and -v adds the traceback's frames, not its text."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except click.ClickException:
            raise  # a usage error: click prints it with the usage line and exits 2
        except KeyboardInterrupt:
            _interrupted()
        except DeadlineExceeded as exc:
            click.echo("error: " + f"{exc}: the run was stopped; nothing was written", err=True)
            sys.stdout.flush()
            sys.stderr.flush()
            # A worker thread stuck on a stalled upload would hold the interpreter's exit (it
            # joins them): the deadline is the run's whole life, so leave now.
            os._exit(1)
        except Exception as exc:
            if _by_interrupt(exc):
                _interrupted()
            _report(exc)
    return wrapper


def _report(exc: Exception) -> None:
    if isinstance(exc, PublisherError):
        _fail(str(exc))
    if isinstance(exc, OSError):
        _fail(cause(exc))
    if logging.getLogger().isEnabledFor(logging.INFO):
        import traceback

        frames = "".join(traceback.format_tb(exc.__traceback__))
        click.echo(f"traceback (message withheld):\n{frames}", err=True)
    _fail(f"unexpected {type(exc).__name__} (a bug; run with -v for the traceback); nothing was written")


def _fail(message: str) -> None:
    click.echo("error: " + " ".join(message.split()), err=True)
    sys.exit(1)


def _interrupted() -> None:
    """Ctrl-C: the devnet and the build's unfinished tree were cleaned up on the way out (their
    context managers), so this is all that is left to say; 130 as shells report a SIGINT."""
    click.echo("interrupted", err=True)
    sys.exit(130)


def _by_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while an interrupt unwound the run (a cleanup step that failed
    because the interrupt had stopped what it talks to): the cause to report is the interrupt."""
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        if isinstance(at, KeyboardInterrupt):
            return True
        seen.add(id(at))
        at = at.__cause__ or at.__context__
    return False


def stop_on_signals() -> None:
    """Ctrl-C and SIGTERM stop the long-running commands cleanly (devnet, serve), even when the
    process was started with SIGINT ignored, as a shell's background jobs and some supervisors do."""
    def interrupt(signum, frame):
        interrupts.note(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)


def within_run_deadline(fn):
    """Bound a whole run (PUBLISHER_RUN_DEADLINE seconds) so a stalled source cannot hold the
    scheduled job past its next turn."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with deadline(run_seconds(), "the run"):
            return fn(*args, **kwargs)
    return wrapper


@click.group()
@click.version_option(__version__)
@click.option("-v", "--verbose", is_flag=True, help="Log warnings and details to stderr.")
def main(verbose: bool) -> None:
    """Build and publish the GoGoPool (Hypha) staking data API as static JSON."""
    logging.basicConfig(level=logging.INFO if verbose else logging.ERROR, format="%(levelname)s %(message)s")


def own_command() -> str:
    """This publisher as a shell runs it from anywhere: ``publisher`` when that is the command the
    PATH finds, else its script beside the running interpreter by absolute path (a virtualenv that is
    not activated), else the interpreter with ``-m publisher.cli``."""
    script = Path(sys.executable).parent / "publisher"
    if script.is_file() and os.access(script, os.X_OK):
        found = shutil.which("publisher")
        if found and Path(found).resolve() == script.resolve():
            return "publisher"
        return shlex.quote(str(script))
    return f"{shlex.quote(sys.executable)} -m publisher.cli"


@main.command()
@click.option("--scenario", type=SCENARIOS, default="demo", show_default=True)
@click.option("--stakers", type=click.IntRange(min=2), help="Resize the scenario to this many stakers (minipools follow in proportion).")
@click.option("--minipools", type=click.IntRange(min=0), help="Resize the scenario to this many minipools.")
@click.option("--port", type=int, help="Port for the node (default: a free one).")
@click.option("--as", "as_network", type=click.Choice([n for n in NETWORKS if n != "devnet"]),
              help="Rehearse a network: its chain id, contracts at its profile's addresses, stand-ins at its request paths.")
@click.option("--live", is_flag=True, help="Keep the protocol moving: one protocol day per --pace seconds (demo; wound-down goes on winding down).")
@click.option("--pace", type=click.FloatRange(min=0), default=2.0, show_default=True,
              help="Wall-clock seconds per protocol day with --live.")
@click.option("--seed", type=int, default=1, show_default=True, help="RNG seed of the --live run (same seed, same chain).")
@click.option("--wind-down-at", type=click.IntRange(min=0), metavar="UNIX_SECONDS",
              help="With --live: end operations at this protocol time (pause deposits, minipools and GGP rewards; "
                   "no more Oracle updates, GGP cycles, minipools or ggAVAX syncs; the queue stays open).")
@click.option("--wind-down-after", type=click.FloatRange(min=0), metavar="DAYS",
              help="With --live: end operations this many protocol days after the devnet's start (see --wind-down-at).")
@click.option("--ggp-quote", type=click.Choice(["oracle", "market"]), default="oracle", show_default=True,
              help="What the price API stand-in quotes for GGP: the Oracle's last price, or the market's, "
                   "which keeps moving once the Oracle is no longer updated.")
@fail_cleanly
def devnet(scenario: str, stakers: int | None, minipools: int | None, port: int | None, as_network: str | None,
           live: bool, pace: float, seed: int, wind_down_at: int | None, wind_down_after: float | None, ggp_quote: str) -> None:
    """Run the devnet (ggp-devnet, installed beside the publisher) until interrupted."""
    running = devnet_package().running
    _check_devnet_options(scenario, stakers, minipools, live, wind_down_at, wind_down_after)
    stop_on_signals()
    with running(scenario, port, as_network=as_network, stakers=stakers, minipools=minipools, ggp_quote=ggp_quote) as net:
        # A Ctrl-C at any moment after the devnet is up (while its addresses print, too) stops it cleanly.
        try:
            _announce_devnet(net, as_network)
            if live:
                _run_live(net, seed, pace, wind_down_at, wind_down_after)
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            click.echo("stopping")


def _check_devnet_options(scenario: str, stakers: int | None, minipools: int | None, live: bool,
                          wind_down_at: int | None, wind_down_after: float | None) -> None:
    """Refuse the combinations of ``publisher devnet`` options that mean nothing."""
    from ggp_devnet.scenarios import SHAPES

    if live and (scenario not in ("demo", "wound-down") or stakers or minipools is not None):
        raise click.UsageError("--live runs the demo scenario at its own size (or wound-down, which goes on winding down)")
    if (wind_down_at is not None or wind_down_after is not None) and not live:
        raise click.UsageError("--wind-down-at and --wind-down-after need --live")
    if wind_down_at is not None and wind_down_after is not None:
        raise click.UsageError("give --wind-down-at or --wind-down-after, not both")
    wound_down = scenario in SHAPES and SHAPES[scenario].wound_down_at
    if wound_down and (wind_down_at is not None or wind_down_after is not None):
        raise click.UsageError(f"the {scenario} scenario has wound down already")


def _announce_devnet(net, as_network: str | None) -> None:
    """Print what the running devnet offers and how to build from it."""
    sc = net.scenario
    click.echo(f"devnet '{sc.name}'{f' rehearsing {as_network}' if as_network else ''} ready in {net.seconds:.1f}s: "
               f"{len(sc.stakers):,} stakers, {len(sc.minipools):,} minipools")
    click.echo(f"RPC URL   {net.url}   (chain id {net.chain_id})")
    for name, addr in sorted(net.addresses.items()):
        click.echo(f"  {name:<16} {addr}")
    click.echo("stand-ins for third-party APIs:")
    for name, url in sorted(net.services.items()):
        click.echo(f"  {name:<16} {url}")
    click.echo("use it:")
    click.echo(f"  export PUBLISHER_VALIDATOR_API_URL={net.services['validator_api']} "
               f"PUBLISHER_PCHAIN_RPC_URL={net.services['pchain_rpc']} PUBLISHER_PRICE_API_URL={net.services['price_api']}")
    # Into a directory of its own: out/ holds what `make demo` built, and a build of another
    # chain there is refused (its price history would shrink) or would replace it.
    out_dir = f"out-{as_network}-{sc.name}" if as_network else f"out-{sc.name}"
    click.echo(f"  {own_command()} build{f' --network {as_network}' if as_network else ''} --rpc-url {net.url}"
               f" --out {out_dir}")
    click.echo("Ctrl-C to stop")


def _run_live(net, seed: int, pace: float, wind_down_at: int | None, wind_down_after: float | None) -> None:
    """Keep the devnet moving (``--live``), reporting each protocol day, until interrupted."""
    from ggp_devnet.live import Live

    sc = net.scenario

    def report(driver, events):
        if interrupts.received():  # a Ctrl-C a finalizer swallowed still stops the run, at the next day
            raise KeyboardInterrupt
        notable = [e for e in events if e.startswith(("GGP", "ggAVAX sync", "operations ended"))]
        click.echo(f"day {driver.day} t={driver.now}: {len(events)} events" + "".join(f"; {e}" for e in notable))

    ends = wind_down_at
    if wind_down_after is not None:
        ends = sc.now + round(wind_down_after * 86_400)
    if sc.wind_down:
        ends = sc.wind_down.at
    if ends is not None:
        click.echo(f"operations end{'ed' if ends <= sc.now else ''} at protocol time {ends}")
    Live(net, seed=seed, wind_down_at=ends).run(pace=pace, on_step=report)


@main.command()
@NETWORK
@RPC_URL
@BLOCK
@click.option("--out", "out_path", type=click.Path(dir_okay=False), required=True, help="Where to save the snapshot JSON.")
@click.option("--scenario", type=SCENARIOS, default="demo", help="Devnet scenario when no RPC is given.")
@fail_cleanly
@within_run_deadline
def snapshot(network: str, rpc_url: str | None, block: int | None, out_path: str, scenario: str) -> None:
    """Read the whole protocol at one block and save it."""
    from .collect import collect
    from .progress import Progress

    with reading(network, rpc_url, scenario) as profile:
        got = collect(profile, block, Progress())
    got.snapshot.save(out_path)
    _summary(got)
    click.echo(f"saved     {out_path}")


@main.command()
@NETWORK
@RPC_URL
@BLOCK
@click.option("--from-snapshot", "from_snapshot", type=click.Path(exists=True, dir_okay=False), help="Build offline from a saved snapshot.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="out", show_default=True)
@click.option("--scenario", type=SCENARIOS, default="demo", help="Devnet scenario when no RPC is given.")
@click.option("--force", is_flag=True, help="Publish even beyond the change bounds against the previous run.")
@click.option("--full", is_flag=True, help="Render and validate every file, not only those whose inputs changed.")
@fail_cleanly
@within_run_deadline
def build(network, rpc_url, block, from_snapshot, out_dir, scenario, force, full) -> None:
    """Build every endpoint into OUT (default out/), validated, swapped in atomically."""
    from .build.incremental import Cache
    from .build.workers import cores
    from .config import load_profile
    from .progress import Progress
    from .runs import build as build_snapshot
    from .runs import read_and_build
    from .snapshot import Snapshot

    t0 = time.monotonic()
    if from_snapshot:
        snap = Snapshot.load(from_snapshot)
        built = build_snapshot(snap, load_profile(snap.network), out_dir, cache=Cache(keep_rows=False),
                               workers=cores(), force=force, full=full)
        for w in snap.warnings:  # what the read that saved it warned of, published again in /status
            click.echo(f"warning   {w}")
    else:
        with reading(network, rpc_url, scenario) as profile:
            run = read_and_build(profile, out_dir, block, cache=Cache(keep_rows=False), workers=cores(), force=force,
                                 full=full, progress=Progress())
        _summary(run.collected)
        snap, built = run.collected.snapshot, run.built
    click.echo(f"built     {built.endpoints} endpoints, {built.count} files, {built.bytes:,} bytes "
               f"into {built.out_dir} (block {snap.block.number}) in {time.monotonic() - t0:.2f}s")
    click.echo(f"changed   {built.rendered} rendered, {built.carried} carried unchanged, "
               f"{built.written} written into {built.tree.name}")


@main.command()
@click.argument("directory", type=click.Path(exists=True, file_okay=False), required=False)
@click.option("--dir", "dir_option", type=click.Path(exists=True, file_okay=False),
              help="The directory, as serve and publish name it (the same as DIRECTORY; default: out).")
@click.option("--previous", type=click.Path(exists=True, file_okay=False),
              help="Also apply the change bounds against this earlier run (block, prices, accumulated files).")
@fail_cleanly
def check(directory: str | None, dir_option: str | None, previous: str | None) -> None:
    """Validate a built directory: its files against the build's record, schemas and invariants
    as build does, with the bounds of the network its status.json names."""
    from .build.validate import compare_previous, load_dir, network_profile, recorded_problems, validate

    if directory and dir_option and os.path.realpath(directory) != os.path.realpath(dir_option):
        raise click.UsageError(f"two directories to check: {directory} and --dir {dir_option}")
    directory = directory or dir_option or "out"
    if not os.path.isdir(directory):
        raise click.UsageError(f"no directory {directory} to check")

    root = os.path.realpath(directory)  # one tree, even if a build flips the link meanwhile
    files = load_dir(root)
    if not files:
        raise PublisherError(f"{directory} holds no files")
    profile = network_profile(files, directory)
    problems = recorded_problems(root, files)
    problems += validate(files, feed_max_age=profile.feed_max_age, oracle_max_age=profile.oracle_max_age)
    if previous:
        problems += compare_previous(load_dir(previous), files, max_price_move_pct=profile.max_price_move_pct,
                                     max_staker_drop_pct=profile.max_staker_drop_pct)
    for p in problems:
        click.echo(f"problem   {p}", err=True)
    if problems:
        raise PublisherError(f"{len(problems)} problem(s) in {directory}")
    click.echo(f"ok        {len(files)} files in {directory} pass schemas and invariants")


@main.command()
@click.option("--dir", "directory", type=click.Path(exists=True, file_okay=False), default="out", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8000, show_default=True, help="0 picks a free port.")
@fail_cleanly
def serve(directory: str, host: str, port: int) -> None:
    """Serve a built directory as the CDN would (plus the rewards function)."""
    from pathlib import Path

    from .serve import make_server

    if not 0 <= port <= 65535:
        raise PublisherError(f"port {port} is not a TCP port (0-65535; 0 picks a free one)")
    try:
        server = make_server(Path(directory), host, port)
    except OSError as exc:
        raise PublisherError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    stop_on_signals()
    bound_host, bound_port = str(server.server_address[0]), server.server_address[1]
    click.echo(f"serving {directory} at http://{bound_host}:{bound_port}/  (Ctrl-C to stop)")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopping")
    finally:
        server.server_close()


@main.command()
@click.option("--dir", "directory", type=click.Path(exists=True, file_okay=False), default="out", show_default=True)
@publish_target
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--force", is_flag=True, help="Publish even beyond the change bounds or with an older block than the live data.")
@click.option("--verify", is_flag=True, help="Reconcile with a listing of the bucket: re-upload lost or altered objects.")
@fail_cleanly
@within_run_deadline
def publish(directory, bucket, prefix, endpoint_url, region, distribution_id, max_age, dry_run, force, verify) -> None:
    """Upload a built directory to S3: changed objects only, manifest and /status last."""
    from .publish import publish as publish_dir

    result = publish_dir(directory, bucket, prefix, endpoint_url=endpoint_url, region=region,
                         distribution_id=distribution_id, max_age=max_age, dry_run=dry_run, force=force,
                         verify=verify)
    for line in result.describe():
        click.echo(line)


@main.command()
@NETWORK
@RPC_URL
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="out", show_default=True)
@publish_target
@click.option("--poll", type=click.FloatRange(min=0.1), default=2.0, show_default=True,
              help="Seconds between looks at the head.")
@click.option("--heartbeat", type=click.FloatRange(min=1),
              help="Publish at least this often, changed or not (default: the network's cadence).")
@click.option("--runs", type=click.IntRange(min=0), default=0, show_default=True,
              help="Stop after this many publishes (0: run until interrupted).")
@fail_cleanly
def watch(network, rpc_url, out_dir, bucket, prefix, endpoint_url, region, distribution_id, max_age,
          poll, heartbeat, runs) -> None:
    """Follow the head; build and publish each block that changes the protocol (every guard of a
    single run holds; a failed run changes nothing and is retried)."""
    from .build.workers import cores
    from .runs import Target
    from .watch import watch as follow

    target = Target(bucket, prefix, endpoint_url, region, distribution_id, max_age)
    stop_on_signals()
    with reading(network, rpc_url) as profile:
        every = heartbeat or profile.cadence_seconds
        click.echo(f"watching  {network} every {poll:g}s, publishing to s3://{bucket}/{prefix} "
                   f"(heartbeat {every:g}s; Ctrl-C to stop)")
        try:
            done = follow(profile, out_dir, target, poll=poll, heartbeat=every, workers=cores(), runs=runs,
                          echo=click.echo)
        except KeyboardInterrupt:
            click.echo("stopping")
            return
    click.echo(f"stopped   after {done} publishes")


@main.group()
def function() -> None:
    """The /rewards/byStake function (AWS Lambda)."""


@function.command("package")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default="dist/rewards-function.zip", show_default=True)
@fail_cleanly
def function_package(out_path: str) -> None:
    """Build the deployable zip: the handler and the formula, standard library only, with bytecode for
    this Python, the Lambda runtime to deploy it on."""
    from .function.package import HANDLER, RUNTIME, build_zip

    path, size = build_zip(out_path)
    click.echo(f"packaged  {path} ({size:,} bytes), handler {HANDLER}, bytecode for runtime {RUNTIME}")


def _summary(got) -> None:
    s, c = got.snapshot, got.counters
    click.echo(f"block     {s.block.number} {s.block.hash[:18]}… at {s.block.timestamp} ({s.network}, chain {s.chain_id})")
    click.echo(f"read      {s.staker_count} stakers, {s.minipool_count} minipools in {got.seconds:.2f}s")
    click.echo(f"requests  {c.http_requests} HTTP, {c.rpc_calls} JSON-RPC ({c.eth_calls} eth_call), "
               f"{c.bytes_sent + c.bytes_received:,} bytes, {c.retries} retries")
    if got.http.requests:
        click.echo(f"sources   {got.http.requests} HTTP requests to price/validator APIs, {got.http.retries} retries")
    for w in s.warnings:
        click.echo(f"warning   {w}")


if __name__ == "__main__":
    main()
