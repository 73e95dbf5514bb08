"""A requester page's line: the places ``places_through`` names, taken from the line's encoded places."""
from __future__ import annotations

from publisher.compute import rewards as R
from publisher.endpoints import requester_page as RP


def test_the_line_drawn_is_the_places_through_the_last_that_the_line_has():
    for length in (0, 1, 2, 119, 120, 121, 240, 241, 1000, 5003):
        curve = tuple(R.canonical_value((k, 10 * k)) for k in range(1, length + 1))
        for last in {1, 2, 3, 119, 120, 121, 122, 239, 240, 241, 242, 360, 361, 999, 1000, 1001, 5003, 5004, length, length + 7} - {0}:
            mine = ({"position": last, "id": 7}, {"position": max(1, last // 2), "id": 3})
            drawn = [curve[k - 1] for k in RP.places_through(last) if k <= len(curve)]
            assert RP.line_data(curve, mine) == b'{"curve":[' + b",".join(drawn) + b'],"mine":' + R.canonical_value(mine) + b"}"
    assert RP.line_data((b"[1,1]",), ()) == b'{"curve":[],"mine":[]}'
