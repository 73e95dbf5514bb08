"""A publish's items and manifest shards, made again from the last publish's for the files that
changed (``publisher watch``), are those made afresh, whatever changed in between."""
from __future__ import annotations

import random

from publisher.publish import plan


def fresh(files: dict, prefix: str, max_age: int) -> tuple[list, dict]:
    plan._Last.items = plan._Last.shards = None
    made = plan.items(files, prefix, max_age)
    return made, plan.shards(made)


def test_items_and_shards_made_from_the_last_equal_those_made_afresh():
    rng = random.Random(30)
    stakers = [f"0x{n:040x}" for n in range(1, 400)]
    files = {"/status": ("s0", 10), "/stakers": ("a0", 100), "/": ("i0", 50), "/docs": ("d0", 70)}
    for a in stakers[:300]:
        files[f"/stakers/{a}"] = (f"st{a}", 5)
        files[f"/rewards/{a}"] = (f"rw{a}", 6)
    prefix, max_age = "", 60
    plan._Last.items = plan._Last.shards = None
    for turn in range(60):
        files = dict(files)
        kind = rng.random()
        for url in rng.sample(sorted(files), rng.choice((0, 1, 2, 10))):  # files changed in place
            files[url] = (f"{files[url][0]}+{turn}", files[url][1] + 1)
        if kind < 0.15:  # a staker comes or goes
            a = rng.choice(stakers)
            for url in (f"/stakers/{a}", f"/rewards/{a}"):
                if url in files:
                    del files[url]
                else:
                    files[url] = (f"new{turn}", 7)
        elif kind < 0.2:
            max_age = rng.choice((60, 300))
        elif kind < 0.25:
            prefix = rng.choice(("", "api/"))
        made = plan.items(files, prefix, max_age)
        bodies = plan.shards(made)
        assert (made, bodies) == fresh(files, prefix, max_age), turn


def test_the_lists_handed_out_are_the_callers_to_change():
    files = {"/status": ("s", 1), "/stakers": ("a", 2)}
    plan._Last.items = plan._Last.shards = None
    first = plan.items(files, "", 60)
    first.clear()
    assert plan.items(files, "", 60) == fresh(files, "", 60)[0]
