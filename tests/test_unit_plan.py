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


def _item(key: str, sha: str, shard: str, wave: str = "entities") -> plan.Item:
    return plan.Item(key, "/" + key, sha, len(sha), "application/json", "max-age=60", wave, shard)


def _bodies(items: list[plan.Item]) -> dict[str, bytes]:
    groups: dict[str, dict] = {}
    for i in items:
        if i.wave != "final":
            groups.setdefault(i.shard, {})[i.key] = i.entry()
    return {name: plan.canonical(entries) for name, entries in groups.items()}


def test_a_plan_from_the_shards_a_run_reads_equals_one_from_every_shard():
    """The shards whose digest is the live root's are taken as a block: the plan is the one made
    with every live shard read, whatever changed (files, files gone or come, a key in another shard)."""
    rng = random.Random(31)
    status = {"generatedAt": 1, "network": "devnet", "chainId": 31337, "block": {"number": 2}}
    final = _item("status", "st", plan.AGGREGATES, "final")
    for turn in range(80):
        live = [_item(f"k{n}", f"v{rng.randrange(3)}", f"{n % 7:02x}") for n in range(120) if rng.random() < 0.9]
        live += [_item(f"a{n}", f"w{rng.randrange(2)}", plan.AGGREGATES, "aggregates") for n in range(5)]
        mine = {i.key: i for i in live}
        for i in rng.sample(live, rng.choice((0, 1, 3))):  # changed
            mine[i.key] = i._replace(sha256=i.sha256 + "+")
        for i in rng.sample(live, rng.choice((0, 0, 2))):  # gone
            del mine[i.key]
        for n in range(rng.choice((0, 0, 2))):  # come
            mine[f"new{n}"] = _item(f"new{n}", "n", f"{n:02x}")
        if rng.random() < 0.2:  # a key listed in another shard than the live one lists it in
            moved = rng.choice(live)
            mine[moved.key] = moved._replace(shard="ff")
        items = [*mine.values(), final]
        bodies = {name: body for name, body in _bodies(live).items()}
        root = plan.Root({n: plan.shard_digest(b) for n, b in bodies.items()}, None, 1, 0)
        every = {n: plan.parse_shard(b) for n, b in bodies.items()}
        needed = {n: every.get(n) for n in plan.shards_to_read(items, root, _bodies(items))}
        made = [plan.make_plan(items, prefix="", status=status, live_root=root, live_shards=shards,
                               live_status=b"old", local_shards=_bodies(items))
                for shards in (needed, every)]
        a, b = made
        assert (sorted(a.upload), sorted(a.unchanged), a.delete, a.shards, a.manifest, a.new_entities) == \
               (sorted(b.upload), sorted(b.unchanged), b.delete, b.shards, b.manifest, b.new_entities), turn
        assert {i.key for i in a.upload} == {k for k, i in mine.items() if i not in live} | {"status"}, turn
