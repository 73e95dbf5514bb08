"""The depositor's evidence as /withdrawals publishes it (its ``depositor`` object): the record,
its schema, and the inputs a render function passes on. The object, with the file's ``meta.block``,
also carries what a later run resumes the queue's log scan from (sources/queuelog.py
``load_published`` reads it back)."""
from __future__ import annotations

from dataclasses import dataclass

from ..compute.depositor import depositor_stale
from ..snapshot import QueueActivity
from . import schema as S
from .context import Context

BLOCK = {"type": "integer", "minimum": 0}

DEPOSITOR_SCHEMA = S.obj({
    "available": S.described(S.BOOLEAN, "the queue's logs were read (false: they could not be, and every other value "
                             "but maxAgeSeconds is null or false: nothing is known)"),
    "lastCallBlock": S.described(S.nullable(BLOCK), "block of the depositor's latest depositFromStaking call on record, "
                                 "known from the events only that call emits (a call that found nothing to do leaves "
                                 "none); null when none is on record"),
    "lastCallTime": S.described(S.nullable(S.TIMESTAMP), "that block's time, unix seconds"),
    "lastFundingBlock": S.described(S.nullable(BLOCK), "block of the latest request funding (RequestFulfilled); null "
                                    "when none is on record"),
    "lastFundingTime": S.described(S.nullable(S.TIMESTAMP), "that block's time, unix seconds"),
    "lineFront": S.described(S.nullable(BLOCK), "first request id still in the queue's internal line: every id below it "
                             "has left the line (funded, or dropped as closed); closed ids from it on are stale entries "
                             "that count against the per-call limit"),
    "maxAgeSeconds": S.described({"type": "integer", "minimum": 1}, "requests waiting in line longer than this with no "
                                 "call on record (counted from the later of the last call and the moment the line last "
                                 "stopped being empty) label the depositor stale"),
    "stale": S.described(S.BOOLEAN, "the depositor looks stale (see staleReason); false when unknown"),
    "staleReason": S.described(S.nullable(S.STRING), "why, in one line (null when not stale)"),
}, description="the depositor, who funds requests only when it calls depositFromStaking, as the queue's logs tell it")


@dataclass(frozen=True)
class Shown:
    """What the object shows of the queue's activity: its figures, without the block its logs were
    read through, which moves every block (the file's ``meta.block`` says through which block they
    hold, and a later run resumes the scan from there)."""

    line_front: int
    last_call_block: int | None
    last_call_time: int | None
    last_funding_block: int | None
    last_funding_time: int | None

    @classmethod
    def of(cls, a: QueueActivity | None) -> Shown | None:
        return None if a is None else cls(a.line_front, a.last_call_block, a.last_call_time, a.last_funding_block,
                                          a.last_funding_time)


def depositor_record(activity: QueueActivity | Shown | None, stale_reason: str | None, max_age: int) -> dict:
    """The published ``depositor`` object (DEPOSITOR_SCHEMA) of ``activity`` (None: the logs could
    not be read) with the staleness label (compute.depositor.depositor_stale) and its bound."""
    a = activity
    return {
        "available": a is not None,
        "lastCallBlock": a.last_call_block if a else None,
        "lastCallTime": a.last_call_time if a else None,
        "lastFundingBlock": a.last_funding_block if a else None,
        "lastFundingTime": a.last_funding_time if a else None,
        "lineFront": a.line_front if a else None,
        "maxAgeSeconds": max_age,
        "stale": stale_reason is not None,
        "staleReason": stale_reason,
    }


def depositor_inputs(ctx: Context) -> tuple[Shown | None, str | None, int]:
    """``depositor_record``'s arguments for this build: hand them to a Deferred as an input (every
    value is keyable) and call ``depositor_record(*inputs)`` in its body."""
    bound = ctx.depositor_max_age
    return Shown.of(ctx.snap.queue_activity), depositor_stale(ctx.snap, bound), bound
