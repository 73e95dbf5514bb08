"""What render functions receive: the snapshot, run settings, and a memo so derived values
(APY, rewards parameters …) are computed once per build however many endpoints use them."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..snapshot import Snapshot

if TYPE_CHECKING:
    from ..config import Announcement
    from .registry import Rows


class Context:
    def __init__(self, snapshot: Snapshot, *, flags: dict[str, bool] | None = None,
                 generated_at: int | None = None, cadence_seconds: int = 300, version: str = "",
                 announcements: tuple[Announcement, ...] = (),
                 validator_default_rate_pct: float = 7.5, oracle_max_age: int = 7 * 86_400,
                 depositor_max_age: int = 2 * 86_400):
        self.snap = snapshot
        self.flags = flags or {}
        # Wall time of the run; only /status carries it, so entity files stay byte-stable.
        self.generated_at = generated_at if generated_at is not None else snapshot.block.timestamp
        self.cadence_seconds = cadence_seconds
        self.version = version
        self.announcements = announcements  # the operator's announced dates (Profile.announced())
        self.validator_default_rate_pct = validator_default_rate_pct
        self.oracle_max_age = oracle_max_age  # an older Oracle GGP price is published labelled stale
        self.depositor_max_age = depositor_max_age  # a line waiting longer on the depositor labels it stale
        # The last build's files (URL path -> bytes, read when asked; empty without one), set by the
        # build: what an endpoint carries from run to run and no snapshot holds comes from there (the
        # queue feed's parameter changes, which the contract announces with no event).
        self.previous: Mapping[str, bytes] = {}
        # The build's memo of long lists' rows (``registry.Rows``, the caller's build cache), set by
        # the build: a body made again to be shown (the page's line) reuses the rows made for it.
        self.rows: Rows | None = None
        # (k, n): a per-entity endpoint makes the files of every n-th entity from the k-th (``own``),
        # set by the build in a worker making its share of them.
        self.share = (0, 1)
        self._memo: dict[Callable, Any] = {}
        self._rendered: dict[str, list[tuple[str, Any]]] = {}

    def cached(self, fn: Callable[[Context], Any]) -> Any:
        if fn not in self._memo:
            self._memo[fn] = fn(self)
        return self._memo[fn]

    def own(self, entities: Sequence) -> Sequence:
        """The entities whose files this process makes, of those a per-entity endpoint iterates: every
        one, or a worker's share. Every such endpoint iterates its entities through this, in one order
        for an entity's files (a staker's /stakers and /rewards), so that one worker makes all of an
        entity's files, and no worker declares the files of another's."""
        k, n = self.share
        return entities if n == 1 else entities[k::n]

    def rendered(self, path: str, render: Callable[[Context], Iterable[tuple[str, Any]]]) -> list[tuple[str, Any]]:
        """An endpoint's (path, body) of this build, rendered once: an aggregate, whose very bodies
        the build writes and the pages show, or per-entity files others are made from (a requester's
        page and calendar from its JSON file's inputs), so none is derived, made or keyed twice."""
        out = self._rendered.get(path)
        if out is None:
            out = self._rendered[path] = list(render(self))
        return out
