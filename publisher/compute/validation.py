"""When a minipool's validation period ends, by the protocol's rules: the one place the forecasts,
/validators and the validator provider's missing records read it from."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocol import MinipoolStatus
from .nodeid import node_id

if TYPE_CHECKING:
    from ..snapshot import Minipool, Validator


def planned_end(m: Minipool, cycle: int | None) -> int | None:
    """A Staking minipool's current period end from its record alone: the end time the record
    carries (mainnet's is 0 until Rialto records the end), else its start plus one minipool cycle,
    or the rest of its requested duration if shorter; None when that is unknown."""
    if m.end_time > m.start_time > 0:
        return m.end_time
    if cycle is None or m.start_time <= 0:
        return None
    return m.start_time + min(cycle, max(m.initial_start_time + m.duration - m.start_time, 0))


def validation_end(m: Minipool, cycle: int | None, vals: dict[str, Validator]) -> int | None:
    """The validator provider's end time for the minipool's node, else ``planned_end``."""
    v = vals.get(node_id(m.node_id))
    if v is not None and v.end_timestamp:
        return v.end_timestamp
    return planned_end(m, cycle)


def unrecorded_ends(minipools: tuple[Minipool, ...], cycle: int | None, now: int,
                    vals: dict[str, Validator]) -> frozenset[str]:
    """The NodeIDs of the Staking minipools whose validation period ended by ``now`` while
    MinipoolManager has yet to record it: the P-Chain no longer counts them as validators (a
    provider no longer lists them), and their AVAX returns when Rialto records the end."""
    out = set()
    for m in minipools:
        if m.status == MinipoolStatus.STAKING:
            end = validation_end(m, cycle, vals)
            if end is not None and end <= now:
                out.add(node_id(m.node_id))
    return frozenset(out)
