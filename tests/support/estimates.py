"""A staker's estimate as the function answers /rewards/estimate?address=: from the build's own
/rewards/{address} and /rewards/params, with the function's code."""
from __future__ import annotations

from collections.abc import Callable

from publisher.compute import rewards as R


def published_estimate(read: Callable[[str], dict], address: str) -> dict:
    """The ``result`` of /rewards/estimate?address= from the files ``read`` returns by URL path."""
    params = R.parse_params(read("/rewards/params"))
    return R.staker_estimate(params, R.parse_staker(read(f"/rewards/{address.lower()}")))["result"]
