"""The operator's announced dates (the end of operations, the withdrawal window's end): counted from
the block's time before, on and after each day, published in /status and shown on the dashboard."""
from __future__ import annotations

import dataclasses
import json

import jsonschema
import pytest

from publisher.build.pipeline import build
from publisher.config import Announcement, load_profile
from publisher.endpoints.announcements import ANNOUNCEMENTS_SCHEMA, announcement_records, window_closed

DAY = 86_400
END_OF_OPERATIONS = 1_786_752_000  # 2026-08-15 00:00 UTC
WINDOW_END = 1_798_675_200  # 2026-12-31 00:00 UTC: the day the site shuts down begins
DATES = (Announcement("withdrawalWindowEnd", "2026-12-31", "The window closes.", "an announcement"),
         Announcement("endOfOperations", "2026-08-15", "Operations end.", "an announcement"))


def records(now: int) -> dict[str, dict]:
    got = announcement_records(DATES, now)
    jsonschema.validate(got, ANNOUNCEMENTS_SCHEMA)
    assert [r["key"] for r in got] == ["endOfOperations", "withdrawalWindowEnd"]  # time order
    return {r["key"]: r for r in got}


def left(record: dict) -> tuple[int, bool]:
    return record["daysLeft"], record["passed"]


def test_each_date_is_one_moment():
    r = records(0)
    assert r["endOfOperations"]["time"] == END_OF_OPERATIONS and r["endOfOperations"]["date"] == "2026-08-15"
    assert r["withdrawalWindowEnd"]["time"] == WINDOW_END and r["withdrawalWindowEnd"]["date"] == "2026-12-31"
    assert r["endOfOperations"]["meaning"] == "Operations end." and r["endOfOperations"]["source"] == "an announcement"


@pytest.mark.parametrize(("now", "ops", "window"), [
    # before both: the demo's block time (2026-03-17 06:00 UTC)
    (1_773_705_600 + 6 * 3600, (150, False), (288, False)),
    # the wound-down scenario's block time (2026-10-16 02:02:08 UTC): between them
    (1_792_116_128, (0, True), (75, False)),
    # the day before operations end, at noon; its last second; the first second of the day
    (END_OF_OPERATIONS - DAY // 2, (0, False), (138, False)),
    (END_OF_OPERATIONS - 1, (0, False), (138, False)),
    (END_OF_OPERATIONS, (0, True), (138, False)),
    # the day before the window's end: open all through it, closed from the first second of 2026-12-31
    (WINDOW_END - DAY, (0, True), (1, False)),
    (WINDOW_END - DAY // 2, (0, True), (0, False)),
    (WINDOW_END - 1, (0, True), (0, False)),
    (WINDOW_END, (0, True), (0, True)),
    (WINDOW_END + 90 * DAY, (0, True), (0, True)),
])
def test_days_left_and_passed(now, ops, window):
    r = records(now)
    assert left(r["endOfOperations"]) == ops
    assert left(r["withdrawalWindowEnd"]) == window
    assert window_closed(DATES, now) is window[1]


def test_without_the_window_announced_it_never_closes():
    assert announcement_records((), 0) == []
    assert window_closed(DATES[1:], WINDOW_END + DAY) is False
    assert window_closed((), WINDOW_END + DAY) is False


def test_status_and_the_dashboard_carry_them(built, demo_snapshot, demo_profile):
    """The demo is before both dates: /status has both records counted from its block, the page
    shows them with the days left."""
    status = json.loads((built / "status.json").read_text())
    now = demo_snapshot.block.timestamp
    assert status["announcements"] == announcement_records(demo_profile.announced(), now)
    r = {a["key"]: a for a in status["announcements"]}
    assert left(r["endOfOperations"]) == ((END_OF_OPERATIONS - now) // DAY, False) == (150, False)
    assert left(r["withdrawalWindowEnd"]) == (288, False)
    page = (built / "index.html").read_text()
    shown = page.split('id="announced-list"')[1].split("</ul>")[0]
    assert '<li id="announced-endOfOperations"><strong class="when">2026-08-15</strong> · <span class="left">150 days left' in shown
    assert '<li id="announced-withdrawalWindowEnd"><strong class="when">2026-12-31</strong> · <span class="left">288 days left' in shown
    assert "passed" not in shown
    # The profile is where they come from: a build whose profile announces none publishes none.
    assert load_profile("devnet").announced() == demo_profile.announced()


def test_after_the_window_both_show_as_passed(demo_snapshot, demo_profile, tmp_path):
    """The demo snapshot read at 2027-01-02 (prices kept fresh, as the guards want): both dates
    have passed."""
    s = demo_snapshot
    t = WINDOW_END + DAY
    snap = dataclasses.replace(
        s, block=dataclasses.replace(s.block, timestamp=t), oracle=dataclasses.replace(s.oracle, timestamp=t - 600),
        feed=dataclasses.replace(s.feed, started_at=t - 600, updated_at=t - 600))
    out = tmp_path / "out"
    build(snap, demo_profile, out)
    status = json.loads((out / "status.json").read_text())
    assert [(a["key"], a["daysLeft"], a["passed"]) for a in status["announcements"]] == [
        ("endOfOperations", 0, True), ("withdrawalWindowEnd", 0, True)]
    shown = (out / "index.html").read_text().split('id="announced-list"')[1].split("</ul>")[0]
    assert shown.count('<span class="left"><strong>passed</strong></span>') == 2 and "left<" not in shown
