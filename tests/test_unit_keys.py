"""A build takes the digests of the records its last build digested, where they are the same: each
digest it takes is the one a fresh digest gives, whatever the records became in between."""
from __future__ import annotations

import dataclasses

from support import factory

from publisher.build.incremental import Cache, Keys
from publisher.endpoints.registry import Deferred
from publisher.snapshot import Known, instances


@dataclasses.dataclass(frozen=True)
class Point:
    n: int
    x: float
    tag: object


def digests(records) -> list[bytes]:
    """Each record's digest, from a fresh Keys (no last build)."""
    return Keys().warm((tuple(records),))[0][1]


def test_a_warm_build_takes_only_digests_a_fresh_one_would_give():
    stakers = tuple(factory.staker(n) for n in range(1, 6))
    points = (Point(1, 0.0, None), Point(2, 1.5, "a"), Point(3, 2.0, (1, 2)), Point(4, 3.0, 1))
    first = Keys().warm((stakers, points))
    changed = dataclasses.replace(stakers[2], ggp_staked=stakers[2].ggp_staked + 1)
    again = (stakers[0],                       # the same object
             dataclasses.replace(stakers[1]),  # an equal one, read again
             changed,                          # another value
             stakers[4], stakers[3])           # two swapped: each compared at its place
    others = (Point(1, -0.0, None),            # equal to the last (0.0 == -0.0), pickled otherwise
              Point(2, 1.5, "a"), Point(3, 2.0, (1, 2)),
              Point(4, 3.0, True))             # equal to the last (1 == True), pickled otherwise
    keys = Keys()
    warmed = keys.warm((again, others), first)
    assert warmed[0][1] == digests(again) and warmed[1][1] == digests(others)
    assert warmed[0][1][:2] == first[0][1][:2] and warmed[0][1][2] != first[0][1][2]
    assert warmed[1][1][0] != first[1][1][0] and warmed[1][1][3] != first[1][1][3]
    # Every record warmed is in the memo with its digest, as a file's key reads it.
    assert all(keys.memo[id(r)] == (r, d) for r, d in zip(again + others, warmed[0][1] + warmed[1][1], strict=True))


@dataclasses.dataclass(frozen=True)
class Tagged:
    n: int
    tag: object


def test_records_of_enum_members_are_taken_while_the_member_is_the_same():
    """A schedule's places hold a status, a StrEnum: an equal member is the same object, so its
    record's digest is taken without digesting it; the string it equals is not (another pickle)."""
    from publisher.compute.queue import RequestStatus

    first_list = (Tagged(1, RequestStatus.PENDING), Tagged(2, RequestStatus.FUNDED))
    first = Keys().warm((first_list,))
    again = (Tagged(1, RequestStatus.PENDING), Tagged(2, "funded"))
    assert again[1] == first_list[1]  # "funded" == RequestStatus.FUNDED
    keys = Keys()
    warmed = keys.warm((again,), first)
    assert warmed[0][1] == digests(again)
    assert warmed[0][1][0] == first[0][1][0] and warmed[0][1][1] != first[0][1][1]
    assert keys.exact == {(int, RequestStatus): True}  # the equal member compared, not digested
    assert Keys()._same(again[1], first_list[1]) is False


def test_a_longer_or_shorter_list_is_compared_where_both_have_a_record():
    stakers = tuple(factory.staker(n) for n in range(1, 5))
    first = Keys().warm((stakers,))
    for now in (stakers[:2], (*stakers, factory.staker(9)), ()):
        assert Keys().warm((now,), first)[0][1] == digests(now)
    assert Keys().warm((stakers, stakers), first)[1][1] == digests(stakers)  # a list the last build had not


@dataclasses.dataclass(frozen=True)
class Holder:
    name: str
    items: tuple


def make_points_of(*inputs) -> tuple:
    return inputs


def test_long_runs_of_records_key_by_their_values_in_every_shape():
    """A long tuple of records no file keyed yet is digested whole, and a record holding a long
    tuple of digested records (the queue holding its requests) takes their digests: each key still
    changes with any value, and only with one."""
    n = 200
    points = tuple(Point(i, float(i), "t") for i in range(n))
    moved = (*points[:150], Point(150, 150.5, "t"), *points[151:])
    assert Keys().of(Deferred((points,), make_points_of)) == Keys().of(Deferred((tuple(points),), make_points_of))
    assert Keys().of(Deferred((points,), make_points_of)) != Keys().of(Deferred((moved,), make_points_of))
    # A run of one class but one item: the record's own digest, not the run's.
    mixed = (*points[:-1], Holder("x", ()))
    assert Keys().of(Deferred((mixed,), make_points_of)) != Keys().of(Deferred((points,), make_points_of))
    # Whole or record by record, the same values never key alike with other values.
    fresh = Keys()
    one_by_one = [fresh.of(Deferred((p,), make_points_of)) for p in points]  # each record in the memo now
    assert fresh.of(Deferred((points,), make_points_of)) != Keys().of(Deferred((moved,), make_points_of))
    assert len(set(one_by_one)) == n
    # The holder: its long tuple of records known to the build is their digests.
    warm = Keys()
    warm.warm((points,))
    other = Keys()
    other.warm((moved,))
    assert warm.of(Deferred((Holder("q", points),), make_points_of)) != other.of(Deferred((Holder("q", moved),), make_points_of))
    # Read again, equal: the same key (the build warms the very records the holder holds).
    read_again = tuple(dataclasses.replace(p) for p in points)
    again = Keys()
    again.warm((read_again,))
    assert warm.of(Deferred((Holder("q", points),), make_points_of)) == again.of(Deferred((Holder("q", read_again),), make_points_of))


def make_page_of(*inputs) -> tuple:
    return inputs


def test_inputs_described_for_one_file_key_another_as_a_fresh_build_would():
    """A file made from another's inputs (a requester's page from its JSON's) takes their
    description from the first; long bytes are keyed by their digest. Either way a key is the one a
    fresh build gives, changes with any value and only with one."""
    points = tuple(Point(i, float(i), "t") for i in range(3))
    inputs = ("who", points, (("a", 1), ("b", 2.5)))
    shared, line = b"{" + b"x" * 300 + b"}", b"[" + b"1," * 200 + b"2]"
    keys = Keys()
    assert keys.of(Deferred(inputs, make_points_of)) == Keys().of(Deferred(inputs, make_points_of))
    page = Deferred((shared, inputs, line), make_page_of)
    assert keys.of(page) == Keys().of(Deferred((bytes(shared), tuple(inputs), bytes(line)), make_page_of))
    assert keys.of(Deferred((shared, inputs, line), make_page_of)) == keys.of(page)  # a second page, the memo's
    for changed in [(shared[:-2] + b"y}", inputs, line), (shared, inputs, line[:-2] + b"3]"),
                    (shared, ("who", points[:2], inputs[2]), line), (shared, (*inputs[:2], (("a", 1), ("b", 2.0))), line),
                    (shared[:200], inputs, line)]:
        assert keys.of(Deferred(changed, make_page_of)) != keys.of(page)
        assert Keys().of(Deferred(changed, make_page_of)) == keys.of(Deferred(changed, make_page_of))


@dataclasses.dataclass(frozen=True)
class Answer:
    i: int
    name: str
    flag: bool


def test_a_read_after_another_takes_the_records_it_made_and_a_one_off_build_keeps_none():
    known = Known()
    rows = [(1, "a", True), (2, "b", False)]
    known.begin()
    first = instances(Answer, rows, known, convert=lambda r: (r[0], r[1].upper(), r[2]))
    known.end()
    known.begin()
    again = instances(Answer, [(1, "a", True), (2, "b", True)], known, convert=lambda r: (r[0], r[1].upper(), r[2]))
    known.end()
    assert first == (Answer(1, "A", True), Answer(2, "B", False))
    assert again[0] is first[0] and again[1] == Answer(2, "B", True)  # the changed answer is a new record
    assert instances(Answer, rows)[0] is not first[0]  # no Known: every record made anew
    assert Cache(keep_rows=False).known is None and isinstance(Cache().known, Known)


@dataclasses.dataclass(frozen=True)
class One:
    a: int


@dataclasses.dataclass(frozen=True)
class Many:
    ones: tuple


def test_a_record_holding_a_long_tuple_never_takes_digests_of_what_was_there_last():
    """Records that are the very objects of the last build go into the memo before the others are
    digested; a record digested then that holds a long tuple of records takes their digests from the
    memo, so no entry may be another record's (two different records would share a key)."""
    ys = tuple(One(i) for i in range(64))
    xs = tuple(One(1000 + i) for i in range(64))
    first = Keys().warm(([Many(ys), *ys],))
    second = Keys().warm(([Many(xs), *xs],), first)
    third = Keys().warm(([*ys, Many(ys)],), second)
    assert second[0][1][0] != third[0][1][-1]
    assert second[0][1] == digests([Many(xs), *xs]) and third[0][1][:64] == digests(ys)
