"""A short soak of the scheduled publish loop (tests/support/soak.py; the long one is
`python benchmarks/soak.py`): every fault kind once against a devnet that moves between runs."""
from __future__ import annotations

import pytest
from ggp_devnet import running
from support.soak import soak

SCHEDULE = ["none", "stall", "s3 error", "reorg", "price jump", "missing history", "none"]


@pytest.fixture(scope="module")
def moving_devnet():
    # Its own devnet: the soak moves time and prices, which the shared one must not see.
    with running("demo") as net:
        yield net


@pytest.mark.slow
def test_short_soak_loses_nothing(moving_devnet, moto, tmp_path):
    report = soak(moving_devnet, moto, tmp_path, runs=len(SCHEDULE), schedule=SCHEDULE, echo=print)
    print(report.table())
    by = {r.fault: r for r in report.runs}
    assert report.lost == []
    assert [r.ok for r in report.runs if r.fault == "none"] == [True, True]
    assert by["reorg"].ok  # retried once at the new head
    for fault in ("stall", "s3 error", "price jump"):
        assert not by[fault].ok and by[fault].cause.startswith("error: "), (fault, by[fault].cause)
    assert "deadline" in by["stall"].cause
    assert all(r.seconds <= 2 * r.deadline + 15 for r in report.runs)
