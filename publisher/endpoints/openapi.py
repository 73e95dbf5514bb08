"""/docs: the OpenAPI 3.1 description of every endpoint, generated from the registry, with path
parameter examples taken from the published data so every example resolves."""
from __future__ import annotations

from typing import Any

from .. import __version__
from ..compute.nodeid import node_id
from . import schema as S
from .announcements import WINDOW_END
from .calendar import CALENDAR_PATH, ICS
from .context import Context
from .feed import ATOM
from .registry import CACHE_POLICIES, Endpoint, endpoint, load_all
from .withdrawals import REQUESTER_PATH

# What the document describes: the JSON files and functions, and the files to subscribe to (a
# requester's calendar, the queue's feed). The pages are for people, linked from one another.
DOCUMENTED = ("application/json", ICS, ATOM)

ERROR = S.obj({"error": S.obj({
    "code": S.described(S.STRING, "machine-readable error code, e.g. not_found or bad_request"),
    "message": S.described(S.STRING, "what went wrong, in words; names the parameter at fault"),
}, description="the error")})
ERRORS = {
    "400": "a parameter is missing, repeated or malformed; the message names it",
    "404": "no such resource",
    "405": "only GET, HEAD and OPTIONS are allowed",
    "503": "the data this answer needs is unavailable",
}
DESCRIPTION = (
    "Read-only data about the GoGoPool (Hypha) liquid staking protocol on Avalanche, rebuilt from the "
    "chain at one block per run and served from a CDN. Token amounts are JSON numbers in whole tokens, "
    "percentages are numbers in percent (fields say so: `…Pct`, `…Apr`, `…_apy`), timestamps are unix "
    "seconds, addresses are EIP-55, node IDs are `NodeID-…`; exact integers (wei) appear as decimal "
    "strings where exactness matters. Aggregates carry `meta.block`, the block at which their content was "
    "last read: a file whose content did not change since an earlier run keeps that run's bytes and stamp "
    "(its values still hold at the latest run's block). `/status` names the latest run's block and is the "
    "authority on freshness."
)


def _examples(ctx: Context) -> dict[str, str | None]:
    s = ctx.snap
    out: dict[str, str | None] = {}
    if s.stakers:
        out["address"] = s.stakers[0].staker_addr
    if s.minipools:
        out["nodeID"] = node_id(s.minipools[0].node_id)
    # A requester's file exists for an address with a request on record (its calendar too, for one
    # with an open request, or wherever a window's end is announced): the first such, or none (no
    # staker's address in its place, whose link would not resolve).
    q = s.withdraw_queue
    who = q.requests[0].requester if q and q.requests else None
    receipt = s.queue_receipts[0].requester if q and s.queue_receipts else None
    window = any(a.key == WINDOW_END for a in ctx.announcements)
    out[f"{REQUESTER_PATH}:address"] = who or receipt
    out[f"{CALENDAR_PATH}:address"] = who or (receipt if window else None)
    return out


def _operation(ep: Endpoint, examples: dict[str, str | None], max_age: int) -> dict:
    params = []
    for p in ep.params:
        item = {"name": p.name, "in": p.where, "required": p.required, "description": p.description, "schema": p.schema}
        own = f"{ep.path}:{p.name}"  # this endpoint's own example, None where there is none
        example = p.example or (examples[own] if own in examples else examples.get(p.name))
        if example:
            item["example"] = example
        params.append(item)
    responses = {"200": {
        "description": ep.summary,
        "headers": {"Cache-Control": {"schema": {"type": "string"}, "description": _cache_control(ep, max_age)}},
        "content": {ep.content_type: {"schema": ep.schema}},
    }}
    # A malformed requester address is a 400 (serve.py), not a missing file.
    codes = ["404", "405"] + (["400", "503"] if ep.is_function else ["400"] if ep.path in (REQUESTER_PATH, CALENDAR_PATH) else [])
    for code in sorted(codes):
        responses[code] = {"description": ERRORS[code],
                           "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    op: dict[str, Any] = {"operationId": ep.path.strip("/").replace("/", "_").replace("{", "").replace("}", "") or "index",
          "summary": ep.summary, "description": ep.description, "tags": [ep.tag] if ep.tag else [],
          "responses": responses}
    if params:
        op["parameters"] = params
    return op


def _cache_control(ep: Endpoint, max_age: int) -> str:
    """The Cache-Control a 200 carries: the file's policy, or for the function the time left until
    it reads its parameters again."""
    if not ep.is_function:
        return CACHE_POLICIES[ep.cache].format(max_age=max_age)
    from ..function.handler import CACHE_CONTROL, DEFAULT_TTL

    return CACHE_CONTROL.format(max_age=f"<seconds until the function reads its parameters again, at most "
                                        f"{DEFAULT_TTL:.0f}>")


def document(ctx: Context) -> dict:
    examples = _examples(ctx)
    endpoints = [ep for ep in load_all().values() if ep.content_type in DOCUMENTED and ep.documented]
    tags = sorted({ep.tag for ep in endpoints if ep.tag})
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {"title": "GoGoPool (Hypha) staking data API", "version": __version__, "description": DESCRIPTION},
        "servers": [{"url": "/"}],
        "tags": [{"name": t} for t in tags],
        "paths": {ep.path: {"get": _operation(ep, examples, ctx.cadence_seconds)} for ep in endpoints},
        "components": {"schemas": {"Error": ERROR}},
    }


DOCUMENT = {"type": "object", "required": ["openapi", "info", "paths"], "properties": {
    "openapi": {"const": "3.1.0", "description": "OpenAPI version of this document"},
    "info": {"type": "object", "description": "title, version and description of the API"},
    "paths": {"type": "object", "description": "every endpoint, its parameters and its response schema"},
}}


@endpoint(
    "/docs", tag="About", summary="OpenAPI description of this API", cache="docs",
    description="This document: OpenAPI 3.1, generated by the same build as the files it describes.",
    schema=DOCUMENT,
)
def docs(ctx: Context):
    yield "/docs", ctx.cached(document)


# The conventional name tools look for; byte for byte the same document as /docs.
@endpoint(
    "/openapi.json", tag="About", summary="OpenAPI description of this API (conventional name)", cache="docs",
    description="The same document as /docs, under the name OpenAPI tools look for.",
    schema=DOCUMENT,
)
def openapi_json(ctx: Context):
    yield "/openapi.json", ctx.cached(document)
