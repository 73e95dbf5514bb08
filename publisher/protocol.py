"""The protocol's own vocabulary, named once: minipool statuses as MinipoolManager numbers them.
The reader, the endpoints, the forecasts and the devnet all use these names, never bare numbers."""
from __future__ import annotations

from enum import IntEnum


class MinipoolStatus(IntEnum):
    PRELAUNCH = 0
    LAUNCHED = 1
    STAKING = 2
    WITHDRAWABLE = 3
    FINISHED = 4
    CANCELED = 5
    ERROR = 6

    @property
    def label(self) -> str:
        """The published name: "Prelaunch", "Launched", …"""
        return self.name.title()


# Launched and Staking: the protocol's validators on the P-Chain.
ACTIVE_STATUSES = frozenset({MinipoolStatus.LAUNCHED, MinipoolStatus.STAKING})
# Published names in status order (schemas, counts, the `minipools_<status>` metrics).
STATUS_LABELS = tuple(s.label for s in MinipoolStatus)
