"""A build takes the digests of the records its last build digested, where they are the same: each
digest it takes is the one a fresh digest gives, whatever the records became in between."""
from __future__ import annotations

import dataclasses

from support import factory

from publisher.build.incremental import Keys


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


def test_a_longer_or_shorter_list_is_compared_where_both_have_a_record():
    stakers = tuple(factory.staker(n) for n in range(1, 5))
    first = Keys().warm((stakers,))
    for now in (stakers[:2], (*stakers, factory.staker(9)), ()):
        assert Keys().warm((now,), first)[0][1] == digests(now)
    assert Keys().warm((stakers, stakers), first)[1][1] == digests(stakers)  # a list the last build had not
