"""Shared fixtures: one seeded demo devnet per test session (per xdist worker), and its snapshot;
one wound-down devnet likewise."""
from __future__ import annotations

import logging

import pytest
from ggp_devnet import devnet_profile, images, running
from moto.server import ThreadedMotoServer
from support import kinds

from publisher.chain.rpc import RpcClient
from publisher.collect import collect
from publisher.config import load_profile


@pytest.fixture(scope="session", autouse=True)
def devnet_images(tmp_path_factory, request):
    """Each devnet chain seeded once per test run, not once per worker and test: every devnet
    started meanwhile (subprocesses too) starts from the run's image of it (ggp_devnet/images.py).
    The workers of a run share the directory; a test of the seeding itself asks ``fresh=True``."""
    base = tmp_path_factory.getbasetemp()  # an xdist worker's lies in its run's
    where = (base.parent if hasattr(request.config, "workerinput") else base) / "devnet-images"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(images.ENV, str(where))
        yield where


@pytest.fixture(scope="session")
def demo():
    with running("demo") as net:
        yield net


@pytest.fixture(scope="session")
def wound_devnet():
    """One seeded wound-down devnet per test session (per xdist worker), some ten seconds to seed:
    for the tests that only read it, or move it inside an evm snapshot and revert it (and put back
    what they changed in its scenario). A test that leaves it moved seeds its own."""
    with running("wound-down") as net:
        yield net


@pytest.fixture(scope="session")
def demo_profile(demo):
    return devnet_profile(load_profile("devnet"), demo)


@pytest.fixture(scope="session")
def demo_snapshot(demo_profile):
    return collect(demo_profile).snapshot


@pytest.fixture(scope="module")
def built(demo_snapshot, demo_profile, tmp_path_factory):
    """The demo snapshot built into a fresh out/ (the plain build core), once per module."""
    from publisher.build.pipeline import build

    out = tmp_path_factory.mktemp("api") / "out"
    build(demo_snapshot, demo_profile, out)
    return out


@pytest.fixture
def rpc(demo):
    return RpcClient([demo.url])


@pytest.fixture(scope="module")
def moto():
    """moto's S3 (and CloudFront) server over real HTTP, one per test module."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


# ---- kinds of test: unit, devnet, browser, node (pyproject.toml declares them) ------------------


def pytest_configure(config):
    kinds.install_guard()


def pytest_collection_modifyitems(config, items):
    """Mark each test with its kind from what it uses (tests/support/kinds.py): `pytest -m unit`
    runs the tests that need no node, anvil or Chromium. The ``slow`` ones go first, so that
    parallel workers start them together instead of one of them trailing the run."""
    reader = kinds.Reader()
    for item in items:
        found = kinds.kinds(item, reader)
        for kind in sorted(found):
            if not item.get_closest_marker(kind):
                item.add_marker(kind)
        if not found:
            item.add_marker("unit")
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """While a unit test runs (setup to teardown), starting anvil, node or Chromium fails it."""
    kinds.current = item.nodeid if item.get_closest_marker("unit") else None
    try:
        return (yield)
    finally:
        kinds.current = None
