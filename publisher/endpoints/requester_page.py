"""/withdrawals/{address}.html: one requester's withdrawal requests as a page, beside its JSON, and
the lookup that takes a pasted address to it.

The page is made from the bodies the build publishes, not from a derivation of its own: the
requester's /withdrawals/{address} body (each request's status, flags, advice, amounts, times and
place) and the parts of /withdrawals it shows (the line, the estimates' assumptions, the depositor,
the announced window). Whatever a later version adds to the requester body (``receipts``, closed
requests) reaches the page the same way; the template shows a list of ``receipts`` when present.

Like the JSON beside it, a page carries no run stamp, and nothing in it moves with time alone: its
relative times ("in 3 days") are written by the page's script, counted from the block /status names
(the latest build's), so a page is made again only when its content changes, and a page carried
from an earlier run still holds at the latest block. Without script the UTC dates say the same.

The lookup (``/withdrawals/lookup?address=``) is answered by `publisher serve` and by the CDN's
viewer-request function (templates/aws-stack.yaml): a redirect to the page, or 400 for a malformed
address. ``lookup`` is the one rule both follow; tests run the function against it.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import lru_cache, partial
from urllib.parse import parse_qs

from markupsafe import Markup, escape

from ..compute import queue as Q
from ..compute import rewards as R
from ..utc import human, iso
from . import svg
from . import withdrawals as W
from .context import Context
from .pages import HTML, PAGE_SCHEMA, _env, _site
from .registry import Deferred, endpoint, function_endpoint, load_all, resolve

JSON_PATH = "/withdrawals/{address}"
PAGE_PATH = "/withdrawals/{address}.html"
TEMPLATE = "requester.html.j2"
LOOKUP_PATH = "/withdrawals/lookup"
ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")
CHART_POINTS = 120  # most places of the line drawn (every one of the requester's is)


# ---- the lookup ---------------------------------------------------------------------------------


def page_path(address: str) -> str:
    return PAGE_PATH.format(address=address.lower())


def lookup(query: str) -> tuple[int, str, str]:
    """The answer to ``/withdrawals/lookup?<query>``: (302, the page's path, "") for a well-formed
    address (surrounding spaces dropped, any case), else (400, error code, message). Whether the
    address has requests is the page's business: without any it is a 404, as its JSON is."""
    values = parse_qs(query, keep_blank_values=True).get("address", [])
    if not values:
        return 400, "bad_request", "address is required: /withdrawals/lookup?address=0x… (40 hex digits)"
    if len(values) > 1:
        return 400, "bad_request", "address is given more than once"
    address = values[0].strip()
    if not ADDRESS.match(address):
        return 400, "bad_request", _malformed(address)
    return 302, page_path(address), ""


def missing(name: str) -> tuple[int, str, str]:
    """The answer for /withdrawals/<name>, a requester's JSON, page or calendar without a file: 400
    when the address is malformed (the CDN's viewer function answers that one too), else 404 that
    says why: no request was ever filed by it (every requester keeps its JSON and page), or, for a
    calendar, also that its requests are all closed where no window's end is announced."""
    address = re.sub(r"\.(html|ics)$", "", name)
    if not ADDRESS.match(address):
        return 400, "bad_request", _malformed(address)
    if name.endswith(".ics"):
        return 404, "not_found", W.NO_CALENDAR.format(address=address.lower())
    return 404, "not_found", W.NEVER_REQUESTED.format(address=address.lower())


def _malformed(address: str) -> str:
    shown = address if len(address) <= 60 else address[:60] + "…"
    return f'address must be 0x followed by 40 hex digits (got "{shown}")'


function_endpoint(
    LOOKUP_PATH, tag="Liquid staking", summary="Find a requester's withdrawal page", documented=False,
    schema={"type": "null", "description": "no body: a redirect"},
    description="A form's way to /withdrawals/{address}.html: 302 to the page of the address given (lower-cased), "
                "400 when it is missing, repeated or not 0x and 40 hex digits. Answered by the CDN's viewer "
                "function and by `publisher serve`, never a file.",
)


# ---- the page -----------------------------------------------------------------------------------


def _view_times(view: dict) -> set[int]:
    """The announced times every page counts from the block (the depositor's calls and the
    receipts' steps are past events, shown as dates alone; the open requests' times are
    ``W.request_times``)."""
    out = {a["time"] for a in view["announcements"]}
    if view["window"]["closesAt"] is not None:
        out.add(view["window"]["closesAt"])
    return out


def _queue_body(ctx: Context) -> dict | None:
    """/withdrawals as the build publishes it, whole (the page draws the line)."""
    ep = load_all()["/withdrawals"]
    assert ep.render is not None
    return next((resolve(b, ctx.rows) for p, b in ctx.rendered("/withdrawals", ep.render) if p == "/withdrawals"), None)


def queue_view(ctx: Context) -> dict | None:
    """What every page shows of /withdrawals: nothing that changes with the block alone (no
    liquidity, no days left: the page's script counts them) or with the back of the line, so
    pages stay as they are while it does not change. None without a queue."""
    body = ctx.cached(_queue_body)
    if body is None or body["status"] != "ok":
        return None
    s, d = body["schedule"], body["depositor"]
    # Nothing of the line past a requester's own places, and no count of the whole line: a request
    # filed at the back changes its own page, /withdrawals and the feed, not every page ahead of it.
    return {
        "assumptions": tuple(s["assumptions"]), "stale": s["stale"], "staleReason": s["staleReason"],
        "depositor": {k: d[k] for k in ("available", "lastCallBlock", "lastCallTime", "lastFundingBlock",
                                        "lastFundingTime", "maxAgeSeconds", "stale", "staleReason")},
        # The window's words without /withdrawals' count of claimable requests or the days left (the
        # page's script counts them): a page says what its own requests ask by then (``make_page``).
        "window": W.window_record(list(body["announcements"]), days=False),
        "announcements": tuple({k: a[k] for k in ("key", "date", "time", "meaning", "passed")} for a in body["announcements"]),
        "pauses": dict(body["pauses"]), "requestsPaused": body["parameters"]["paused"],
        "address": body["address"],  # the queue's, for a holder calling it without this site
    }


def _curve(ctx: Context) -> tuple[bytes, ...]:
    """The published line, each place (place, AVAX needed through it) as its canonical JSON:
    encoded once for the thousands of pages that draw part of it."""
    body = ctx.cached(_queue_body)
    return tuple(R.canonical_value((r["position"], r["cumulativeAvax"]))
                 for r in (body or {}).get("schedule", {}).get("line", []))


def places_through(last: int) -> list[int]:
    """The places of the line a chart through place ``last`` draws: from the front through
    ``last``, at most CHART_POINTS of them, the first and the last always (what is behind a
    requester never moves its chart)."""
    step = max(1, -(-last // CHART_POINTS))
    return sorted({1, *range(step, last + 1, step), last})  # the line's places are 1, 2, 3 … in order


def line_data(curve: tuple[bytes, ...], mine: tuple[dict, ...]) -> bytes:
    """``canonical_value({"mine": mine, "curve": [the places drawn through mine's last]})``,
    joined from the line's encoded places (see ``_curve``)."""
    drawn: list[bytes] = []
    if mine:  # the places of places_through(last) that the line has, taken as slices of it
        last = max(r["position"] for r in mine)
        step = max(1, -(-last // CHART_POINTS))
        drawn = [*curve[:1]] if step > 1 else []
        drawn += curve[step - 1:last:step]
        if last % step and last <= len(curve):
            drawn.append(curve[last - 1])
    return b'{"curve":[' + b",".join(drawn) + b'],"mine":' + R.canonical_value(mine) + b"}"


def _line_rows(ctx: Context) -> dict[str, tuple[dict, ...]]:
    """Each requester's places in the published line (lower-case address -> rows)."""
    body = ctx.cached(_queue_body)
    out: dict[str, list[dict]] = {}
    for r in (body or {}).get("schedule", {}).get("line", []):
        out.setdefault(r["requester"].lower(), []).append(
            {"position": r["position"], "id": r["id"], "cumulativeAvax": r["cumulativeAvax"], "expectedAvax": r["expectedAvax"]})
    return {k: tuple(v) for k, v in out.items()}


@endpoint(
    PAGE_PATH, tag="Liquid staking", summary="One requester's withdrawal requests, as a page", content_type=HTML,
    schema=PAGE_SCHEMA, params=(W.REQUESTER_PARAM,), documented=False,
    description="The requests of /withdrawals/{address} in words: each one's state, what its requester can do and "
                "until when, its amounts, dates and place in line with the estimate, the announced deadlines and "
                "the depositor's last call, and a chart of the line. Published beside the JSON for every requester "
                "with a request on record, open or closed.",
)
def requester_page(ctx: Context):
    view = ctx.cached(queue_view)
    if view is None:
        return
    site = {k: v for k, v in _site(ctx).items() if k != "description"}
    places = ctx.cached(_line_rows)
    # What every page shows alike, declared as its canonical JSON: one string to key per page.
    shared = R.canonical_value({"site": site, "view": view})
    curve = ctx.cached(_curve)
    # Compiled here, where a build first describes this endpoint before its workers fork, so that
    # each worker making a page does not compile it again.
    _env().get_template(TEMPLATE)
    for path, value in ctx.own(W.requester_files(ctx)):
        assert type(value) is Deferred and value.make is W.requester_body
        yield path + ".html", _page(shared, value.inputs, curve, places.get(path.rsplit("/", 1)[1], ()))


def _page(shared: bytes, body_inputs: tuple, curve: tuple[bytes, ...], mine: tuple[dict, ...]) -> Deferred:
    """The page made from its JSON body's own inputs (records the build keys once), not from the
    body: a body is a walk of hundreds of values to key, a record one digest. Its line runs through
    the requester's last place in it, nothing behind."""
    return Deferred((shared, body_inputs, line_data(curve, mine)), make_page)


def make_page(shared: bytes, body_inputs: tuple, line: bytes) -> str:
    """The page of one requester: ``requester_body(*body_inputs)`` in words, with what every page
    shows (``shared``: the site and ``queue_view``) and its place in the line (``line``)."""
    common, placed = json.loads(shared), json.loads(line)
    body, view, mine = W.requester_body(*body_inputs), common["view"], placed["mine"]
    counted = _view_times(view) | W.request_times(body_inputs[1])  # the times the script counts from the block
    chart = None
    if mine:
        series = [svg.Series("AVAX the line needs through each place", tuple(map(tuple, placed["curve"]))),
                  svg.Series("you are here", tuple((r["position"], r["cumulativeAvax"]) for r in mine))]
        chart = svg.line_chart("chart-line", "The withdrawal line through your place: AVAX needed up to each place", series,
                               x_label="place in line (1 = funded first)", y_label="AVAX", y_zero=True, x_whole=True)
    when = partial(_when, counted)
    closes = view["window"]["closesAt"]
    if closes is not None:  # the window's note as this requester's open requests have it
        asks = W.window_asks(body["requests"], closes, view["pauses"]["ggavaxDeposits"], until=True)
        view = {**view, "window": W.window_record(list(view["announcements"]), asks=asks, open_requests=bool(body["requests"]),
                                                  days=False)}
    return _env().get_template(TEMPLATE).render(
        **common["site"], root="../", b=body, q=view, mine=mine, chart=chart, when=when, calls=dict(W.CALLS), blocked_where=Q.blocked_where,
        receipts=[receipt_item(rc, when) for rc in body.get("receipts") or ()],
        lookup_action="lookup", lookup_pages="")


# The page's two most repeated pieces, written here rather than in the template: a requester with
# a long history has dozens of them, and each value the template writes costs an escape call.

def _when(counted: set[int], ts: float) -> Markup:
    """A time: its UTC date (``<time>``), and a span the page's script fills with how long from
    the latest block when ``ts`` is one of the times it counts (``counted``)."""
    if ts in counted:
        return Markup(f'{_time(ts)}<span class="rel" data-ts="{ts}"></span>')
    return Markup(_time(ts))


@lru_cache(maxsize=1 << 14, typed=True)  # a history's steps share their days' blocks, page after page
def _time(ts: float) -> str:
    return f'<time datetime="{iso(ts)}" data-ts="{ts}">{escape(human(ts))}</time>'


# Words for the receipts' field names; any other name is shown as it is.
RECEIPT_LABELS = {"claimableTime": "advertised claimable time", "shares": "", "avax": "", "expectedAvax": "to pay",
                  "sharesReturned": "returned", "sharesBurnt": "burnt"}
RECEIPT_OWN = ("id", "outcome", "requester")  # shown in the receipt's heading, not as a line


def receipt_item(rc: dict, when: Callable[[float], Markup]) -> Markup:
    """A receipt as an item of the history: its request and outcome, then its lines, each an item
    of its own list (``data-step``: a step taken, a mapping: its time, block and amounts;
    ``data-field``: any other value, named), in the receipt's order; unset ones left out."""
    rid = escape(rc["id"])
    items = [f'<li id="receipt-{rid}" data-id="{rid}"><strong>Request #{rid}</strong>']
    if "outcome" in rc:
        items.append(f' <span class="pill info" data-field="outcome">{escape(rc["outcome"])}</span>')
    items.append("\n    <ul>")
    for k, v in rc.items():
        if k in RECEIPT_OWN or v is None:
            continue
        name = _word(k)
        if isinstance(v, dict):
            text: list[str] = [f'\n      <li data-step="{name}">{name}']
            if "time" in v:
                text += [" ", when(v["time"])]
            if "block" in v:
                block = v["block"]
                text.append(f", block {block if type(block) is int else escape(block)}")
            for ak, av in v.items():
                if ak in ("time", "block", "tx") or ak.endswith("Wei") or not isinstance(av, int | float):
                    continue
                if k == "reclaimed" and ak == "avax" and rc.get("funded") is None:
                    continue  # a request reclaimed while in line: its event names AVAX that never moved
                label = RECEIPT_LABELS.get(ak, ak)
                unit = "ggAVAX" if ak.startswith("shares") else "AVAX"
                text.append(f"; {_word(label) + ' ' if label else ''}{svg.number(av, 0.0001)} {unit}")
            text.append("</li>")
            items.append("".join(text))
        else:
            items.append(f'\n      <li data-field="{name}">{_word(RECEIPT_LABELS.get(k, k))}: {_value(k, v, when)}</li>')
    items.append("\n    </ul></li>")
    return Markup("".join(items))


@lru_cache(maxsize=256)  # the receipts' few field names, on every line of every page
def _word(text: str) -> str:
    return escape(text)


def _value(key: str, v, when: Callable[[float], Markup]) -> Markup:
    """A receipt's value in words: a time as a date, AVAX and ggAVAX amounts with their unit."""
    if v is True or v is False:
        return Markup("yes" if v else "no")
    if isinstance(v, int | float):
        if key == "time" or key.endswith(("Time", "At")):
            return when(v)
        if key.endswith("Avax"):
            return Markup(f"{svg.number(v, 0.0001)} AVAX")
        if key == "shares":
            return Markup(f"{svg.number(v, 0.0001)} ggAVAX")
    return escape(v)

