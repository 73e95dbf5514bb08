"""Human pages, rendered at build time with jinja2 (templates shipped in the package):

- ``/``: a dashboard of this build, its figures and charts drawn from the same responses the build
  publishes, each linking to its endpoint;
- ``/docs.html``: the reference, rendered from the OpenAPI document of /docs with a real example
  response of this build per endpoint;
- ``/calculator.html``: a form for /rewards/byStake that works without script and answers in place
  with it.

The dashboard and the reference carry this build's numbers and take the data cache policy (the
dashboard is made again only when a figure it shows changes, and names the block it was read at); the calculator holds no data and is docs (a change to it costs a CDN
invalidation, so it must only change when the API does). Plain HTML, CSS and inline SVG: they work
offline, and nothing but the calculator's optional answer-in-place needs script.
"""
from __future__ import annotations

import functools
import json
import re

import jinja2
import markupsafe

from .. import utc
from ..compute import queue as Q
from ..compute import rewards as R
from ..protocol import STATUS_LABELS
from . import schema as S
from . import svg
from .announcements import WINDOW_END, announcement_records
from .context import Context
from .openapi import document
from .registry import Deferred, endpoint, excerpt, load_all, resolve
from .rewards import EXAMPLE_STAKE

HTML = "text/html; charset=utf-8"
PAGE_SCHEMA = {"type": "string"}
EXAMPLE_ITEMS = 2  # list items kept in a reference example; the rest are summarized
APR_CHART_AVAX = ("1000", "4000", "10000")  # AVAX sizes drawn on the APR chart
APY_WINDOW_DAYS = 30  # as /metrics/apy
QUEUE_CHART_DAYS = 30  # how far ahead the withdrawal-queue chart looks
ENTITY_NOUNS = {"address": "staker", "nodeID": "minipool"}  # what a path parameter's example is taken from
# A data block further than this from the build's wall clock is on a clock of its own (a devnet's
# fixed genesis): the dashboard then says so instead of counting a misleading age.
OWN_CLOCK_SECONDS = 86_400


class _PageEnvironment(jinja2.Environment):
    """Jinja's environment, with ``a.b`` on a dict looked up as its key first: the pages read the
    published bodies, which are dicts, and Jinja's own order (an attribute first) raises and
    catches an AttributeError for each of the hundreds of values a requester page shows. A dict's
    methods are still reached by a name that is not one of its keys."""

    def getattr(self, obj, attribute):
        if type(obj) is dict:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


@functools.cache
def _env() -> jinja2.Environment:
    # Page templates ship inside the package, so an installed publisher renders them anywhere. They
    # do not change while a process runs: no check of the template's file at every page rendered.
    env = _PageEnvironment(loader=jinja2.PackageLoader("publisher", "templates"), autoescape=True,
                           undefined=jinja2.StrictUndefined, keep_trailing_newline=True, auto_reload=False)
    env.filters["code"] = code_spans
    env.filters["path"] = path_code
    env.filters["num"] = svg.number
    env.filters["utc"] = utc.when
    env.filters["utc_day"] = utc.day
    env.filters["utc_clock"] = utc.clock
    return env


def code_spans(text: str) -> markupsafe.Markup:
    """Escape the text, then show its `backticked` spans as code (the docs' only markup)."""
    return markupsafe.Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(markupsafe.escape(text))))


def path_code(path: str) -> markupsafe.Markup:
    """An endpoint's path as code that a narrow screen breaks only after a slash (the page's CSS
    keeps the segments whole)."""
    return markupsafe.Markup('<code class="path">{}</code>').format(
        markupsafe.Markup("/<wbr>").join(markupsafe.escape(part) for part in str(path).split("/")))


def describe(schema: dict) -> str:
    if "anyOf" in schema:
        return " | ".join(describe(s) for s in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    kind = schema.get("type", "any")
    if isinstance(kind, list):  # a type keyword naming several types
        return " | ".join(kind)
    if kind == "array":
        return f"array of {describe(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"map of {describe(schema['additionalProperties'])}"
    return kind


def fields(schema: dict, prefix: str = "", depth: int = 0, shared: bool = True) -> list[dict]:
    """Rows for every property, nested objects and arrays of objects flattened with dotted names.
    ``meta`` and the block stamp are one row each pointing at the shared section: they are the same
    objects everywhere."""
    rows = []
    required = set(schema.get("required", []))
    for name, sub in schema.get("properties", {}).items():
        full = f"{prefix}{name}"
        target = next((s for s in sub.get("anyOf", []) if s.get("type") != "null"), sub)
        row = {"name": full, "type": describe(sub), "required": name in required,
               "description": sub.get("description") or target.get("description", ""), "shared": None}
        rows.append(row)
        if shared and (target == S.META or target == S.BLOCK):
            row["shared"] = "meta" if target == S.META else "block"
            continue
        if depth < 3 and target.get("type") == "object" and "properties" in target:
            rows += fields(target, f"{full}.", depth + 1, shared)
        elif depth < 3 and target.get("type") == "array" and "properties" in target.get("items", {}):
            rows += fields(target["items"], f"{full}[].", depth + 1, shared)
    return rows


# ---- the build's own responses -------------------------------------------------------------------


def response(ctx: Context, path: str):
    """The body the build publishes at ``path``, the very one the build writes (``ctx.rendered``:
    pages sort before the files they show, which are rendered here first), its long lists cut to
    what an example shows (``registry.Head``)."""
    memo = ctx.cached(_responses)
    if path not in memo:
        ep = load_all()[path]
        assert ep.render is not None  # a file endpoint
        memo[path] = next((excerpt(body, EXAMPLE_ITEMS) for p, body in ctx.rendered(path, ep.render) if p == path), None)
    return memo[path]


def _responses(ctx: Context) -> dict:
    return {}  # one memo per build, filled by response()


def _example(ctx: Context, path: str, params: list[dict]):
    """A real response of this build for the reference: the endpoint's example, lists trimmed."""
    ep = load_all()[path]
    if ep.is_function:
        if ep.example is None:
            return None
        query, body = ep.example(ctx)  # the function's own answer from this build's params
        if body is None:
            return None
        url = f"{path}?{query}"
    else:
        if path in ("/docs", "/openapi.json") or ep.final:
            # The document itself, and /status (rendered after the pages, as it digests them): linked.
            return {"url": path, "json": None}
        if absent(ctx, path):
            return {"url": None, "json": None, "missing": f"block {ctx.snap.block.number} publishes no such file"}
        missing = [p["name"] for p in params if p["in"] == "path" and not p.get("example")]
        if missing:
            # Nothing of that kind exists at this block (no staker or minipool yet): no example.
            things = " or ".join(ENTITY_NOUNS.get(m, f"{{{m}}}") for m in missing)
            return {"url": None, "json": None, "missing": f"block {ctx.snap.block.number} has no {things} to show"}
        url = path.format(**{p["name"]: p["example"] for p in params if p["in"] == "path"})
        if ep.content_type not in ("application/json", HTML):  # a calendar or a feed, for a client to subscribe to: linked
            return {"url": ep.canonical(url), "json": None}
        if "{" in path:
            assert ep.render is not None
            body = next((resolve(b) for p, b in ep.render(ctx) if p == ep.canonical(url)), None)
        else:
            body = response(ctx, path)
        if body is None:
            return None
    # Keys sorted as in the published files, so the page does not depend on how a dict was built.
    return {"url": url, "json": json.dumps(_trim(body), indent=2, sort_keys=True, ensure_ascii=False)}


def _trim(value):
    if isinstance(value, dict):
        return {k: _trim(v) for k, v in value.items()}
    if isinstance(value, list) and (total := getattr(value, "total", len(value))) > EXAMPLE_ITEMS:
        return [_trim(v) for v in value[:EXAMPLE_ITEMS]] + [f"… {total - EXAMPLE_ITEMS} more"]
    if isinstance(value, list):
        return [_trim(v) for v in value]
    return value


# ---- models -------------------------------------------------------------------------------------


def _site(ctx: Context) -> dict:
    doc = ctx.cached(document)
    return {"title": doc["info"]["title"], "description": doc["info"]["description"],
            "version": doc["info"]["version"], "network": ctx.snap.network, "chain_id": ctx.snap.chain_id}


def _reference(ctx: Context) -> dict:
    doc = ctx.cached(document)
    groups: dict[str, list[dict]] = {}
    for path, item in doc["paths"].items():
        op = item["get"]
        params = op.get("parameters", [])
        ok = op["responses"]["200"]
        (media, body), = ok["content"].items()  # the one media type it answers
        groups.setdefault(op["tags"][0] if op["tags"] else "Other", []).append({
            "path": path, "summary": op["summary"], "description": op["description"],
            "anchor": op["operationId"],
            "cache": ok["headers"]["Cache-Control"]["description"],
            "params": [{"name": p["name"], "where": p["in"], "type": describe(p["schema"]),
                        "description": p["description"], "example": p.get("example")} for p in params],
            "fields": fields(body["schema"]), "media": media, "body": body["schema"].get("description", ""),
            "example": _example(ctx, path, params),
        })
    shared = {"description": S.META["description"], "fields": fields(S.META, "meta.", shared=False)}
    return {**_site(ctx), "groups": sorted(groups.items()), "shared": shared, "example_items": EXAMPLE_ITEMS}


def _history_series(points: list[dict]) -> dict[str, svg.Series]:
    def series(name, key):
        return svg.Series(name, tuple((p["timestamp"], p[key]) for p in points if p.get(key) is not None))

    share = [(p["ggavaxTime"], p["ggavaxExchangeRate"]) for p in points if p.get("ggavaxExchangeRate") is not None]
    return {"ggp_avax": series("GGP in AVAX", "ggpInAvax"), "ggp_usd": series("GGP in USD", "ggpInUSD"),
            "avax_usd": series("AVAX in USD", "avaxInUSD"),
            "share": svg.Series("AVAX per ggAVAX", tuple(share)),
            "apy": svg.Series("ggAVAX APY after fees", tuple(trailing_apy(share)))}


def trailing_apy(share: list[tuple[int, float]], window_days: int = APY_WINDOW_DAYS) -> list[tuple[int, float]]:
    """APY at each recorded share price against the latest one at least ``window_days`` older,
    compounded to a year as /metrics/apy does: ((X_now / X_then)^(365 d / dt) - 1) x 100."""
    out = []
    for t, x in share:
        then = [(t0, x0) for t0, x0 in share if t0 <= t - window_days * 86_400]
        if then and then[-1][1] > 0:
            t0, x0 = then[-1]
            out.append((t, ((x / x0) ** (365 * 86_400 / (t - t0)) - 1) * 100))
    return out


def queue_series(ctx: Context, days: int = QUEUE_CHART_DAYS) -> list[svg.Series]:
    """The queue's pending demand against the AVAX it can use over the next ``days``: liquidity now,
    then at each UTC midnight and at the end, after the minipool returns expected by then (less the
    rewards restaked pools keep) and the reward stream released by then, as the schedule counts
    them. A point a day: at scale a month holds thousands of returns and restakes, which drawn one
    by one made most of the dashboard's bytes."""
    s = ctx.snap
    if s.withdraw_queue is None:
        return []
    now, end = s.block.timestamp, s.block.timestamp + days * 86_400
    sched = ctx.cached(Q.cached_schedule)
    steps: dict[int, int] = {}
    for r in sched.returns:
        steps[max(r.time, now + 1)] = steps.get(max(r.time, now + 1), 0) + r.avax
    for k in sched.restakes:
        steps[k.time] = steps.get(k.time, 0) - k.reward
    vault = Q.books(s)  # the stream's release, as the schedule counts it
    released = vault.total_assets(now)
    events = iter(sorted(t for t in steps if t <= end))
    moved, t = 0, next(events, None)
    points = []
    for x in (now, *range(now - now % 86_400 + 86_400, end, 86_400), end):
        while t is not None and t <= x:
            moved += steps[t]
            t = next(events, None)
        points.append((x, sched.liquidity + moved + vault.total_assets(x) - released))
    demand = sum(r.expected_assets for r in Q.line(s))
    return [svg.Series("AVAX the queue can use", tuple((x, v / R.WAD) for x, v in points)),
            svg.Series("pending demand", ((now, demand / R.WAD), (end, demand / R.WAD)))]


def _banners(prices: dict, params: dict, ggavax: dict, queue: dict | None) -> list[tuple[str, str]]:
    """(text, endpoint) of what a reader must know before trusting a figure: stale or stopped inputs."""
    out = []
    if prices.get("stale"):
        out.append((f"The GGP price is stale: {prices['staleReason']}.", "prices"))
    if params.get("distributionExpected") is False:
        out.append((f"No GGP rewards distribution is expected: {params.get('noDistributionReason')}.", "rewards/params"))
    if ggavax.get("depositsPaused"):
        out.append(("Deposits into ggAVAX are paused.", "ggAvax"))
    if queue and queue.get("status") == "ok" and queue["parameters"]["paused"]:
        cancels = ("cancels of requests in line" if queue["pauses"]["ggavaxDeposits"] else "cancels")
        out.append((f"New withdrawal requests are paused; funding, claims and {cancels} go on.", "withdrawals"))
    if queue and queue.get("status") == "ok" and queue["schedule"]["stale"]:
        out.append((f"The withdrawal queue's depositor looks stale: {queue['schedule']['staleReason']}. "
                    "Nothing is funded until it calls.", "withdrawals"))
    if queue and queue.get("status") == "ok" and queue["funded"]["stuckCount"]:
        n = queue["funded"]["stuckCount"]
        out.append((f"{n} funded withdrawal request{' is' if n == 1 else 's are'} stuck: {queue['funded']['stuckReason']}.",
                    "withdrawals"))
    # The window's note wherever its end is announced, first: what a holder must do by then, or,
    # once it has closed, what the contracts still allow. Everyone still holding has to act on it.
    end = next((a for a in (queue or {}).get("announcements") or () if a.get("key") == WINDOW_END), None)
    if queue and end is not None:
        out.insert(0, (queue["window"]["note"], "withdrawals"))
    return out


def absent(ctx: Context, path: str) -> bool:
    """Whether a file endpoint without parameters publishes nothing at this block (the queue's
    parameters and feed where the network has no queue)."""
    ep = load_all()[path]
    if ep.is_function or ep.final or "{" in path or ep.render is None or path in ("/docs", "/openapi.json"):
        return False
    return not any(p == path for p, _ in ctx.rendered(path, ep.render))


def _endpoint_links(ctx: Context) -> list[dict]:
    """Every documented endpoint with a link that resolves (path parameters filled with their examples)."""
    rows = []
    for path, item in ctx.cached(document)["paths"].items():
        op = item["get"]
        params = op.get("parameters", [])
        query = "&".join(f"{p['name']}={p['example']}" for p in params if p["in"] == "query" and "example" in p)
        if all(p.get("example") for p in params if p["in"] == "path") and not absent(ctx, path):
            url = path.format(**{p["name"]: p["example"] for p in params if p["in"] == "path"})
            link = url.lstrip("/") + (f"?{query}" if query else "")
        else:  # no entity of that kind at this block: the reference says so
            link = f"docs.html#{op['operationId']}"
        rows.append({"tag": op["tags"][0] if op["tags"] else "", "path": path, "summary": op["summary"],
                     "link": link, "anchor": op["operationId"]})
    return sorted(rows, key=lambda r: (r["tag"], r["path"]))


def _plain(value):
    """A response's values as plain JSON types (dicts, lists, scalars), as a page's declared input."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _unstamped(body: dict | None) -> dict | None:
    return None if body is None else _plain({k: v for k, v in body.items() if k not in ("meta", "block")})


def _queue_figures(body: dict | None) -> dict | None:
    """What the dashboard shows of /withdrawals: its figures, not the schedule's lists (the line,
    the restakes and returns: megabytes at scale, drawn by /withdrawals' own page)."""
    if body is None or body.get("schedule") is None:  # no queue: no schedule
        return _unstamped(body)
    schedule = {k: v for k, v in body["schedule"].items() if not isinstance(v, list | tuple)}
    return _unstamped({**body, "schedule": schedule})


def dashboard_inputs(ctx: Context) -> dict:
    """Everything the dashboard shows but the block it was read at: its key. Each response without
    its stamp, and of the long ones only what is drawn, so a block that moves none of its figures
    leaves the page (and its stamp) as it was."""
    m, grid, pools = response(ctx, "/metrics"), response(ctx, "/rewards/grid"), response(ctx, "/minipools")
    history = (response(ctx, "/prices/history") or {"points": []})["points"]
    queue = response(ctx, "/withdrawals")
    block = m["meta"]["block"]
    skew = ctx.generated_at - block["timestamp"]
    clock = {"own": abs(skew) > OWN_CLOCK_SECONDS, "days": round(abs(skew) / 86_400), "behind": skew > 0}
    apr = [[avax, [[p["collateralizationPct"], p["result"]["aprPct"]] for p in grid["points"] if p["avaxStaked"] == avax]]
           for avax in APR_CHART_AVAX]
    series = [[s.name, _plain(s.points)] for s in queue_series(ctx)] if queue and queue["status"] == "ok" else []
    return {
        "site": _site(ctx), "m": _unstamped(m), "apy": _unstamped(response(ctx, "/metrics/apy")),
        "prices": _unstamped(response(ctx, "/prices")), "ggavax": _unstamped(response(ctx, "/ggAvax")),
        "params": _unstamped(response(ctx, "/rewards/params")), "queue": _queue_figures(queue), "queue_series": series,
        "clock": clock, "apr": apr, "counts": _plain(pools["countsByStatus"]), "pool_count": pools["count"],
        "history": _plain(history), "endpoints": _endpoint_links(ctx),
        "announcements": announcement_records(ctx.announcements, ctx.snap.block.timestamp),
    }


def dashboard_page(shown: bytes, *, stamp: dict) -> str:
    """The dashboard from what it shows (``dashboard_inputs`` as canonical JSON) and the block it
    was read at."""
    return _env().get_template("index.html.j2").render(**_dashboard(json.loads(shown), stamp))


# A chart's markup by the repr of what it draws (repr tells 0.0 from -0.0 and 1 from 1.0, as the
# drawing does): the dashboard is made again at every block that moves one of its figures, and most
# of its charts (the daily price history) move once a day. A few builds' charts are kept.
_CHARTS: dict[str, markupsafe.Markup] = {}


def _drawn(chart, *args, **kwargs) -> markupsafe.Markup:
    key = repr((chart.__name__, args, sorted(kwargs.items())))
    drawn = _CHARTS.get(key)
    if drawn is None:
        if len(_CHARTS) >= 32:
            _CHARTS.clear()
        drawn = _CHARTS[key] = chart(*args, **kwargs)
    return drawn


def _dashboard(shown: dict, block: dict) -> dict:
    hs = _history_series(shown["history"])
    apr = [svg.Series(f"{int(avax):,} AVAX", tuple((x, y) for x, y in pts)) for avax, pts in shown["apr"]]
    counts = shown["counts"]
    history_src, grid_src = "prices/history", "rewards/grid"
    # GGP and AVAX in USD get a chart each: on one scale (about 0.7 and 25) the GGP line would be flat.
    charts = [
        (_drawn(svg.line_chart, "chart-ggp-avax", "GGP price in AVAX, daily", [hs["ggp_avax"]], x_label="date (UTC)",
                        y_label="AVAX per GGP", dates=True), history_src),
        (_drawn(svg.line_chart, "chart-ggp-usd", "GGP in USD, daily", [hs["ggp_usd"]], x_label="date (UTC)",
                        y_label="USD per GGP", dates=True), history_src),
        (_drawn(svg.line_chart, "chart-avax-usd", "AVAX in USD, daily", [hs["avax_usd"]], x_label="date (UTC)",
                        y_label="USD per AVAX", dates=True), history_src),
        (_drawn(svg.line_chart, "chart-share", "ggAVAX share price", [hs["share"]], x_label="date (UTC)",
                        y_label="AVAX per ggAVAX", dates=True), history_src),
        (_drawn(svg.line_chart, "chart-apy", f"ggAVAX APY after fees, trailing {APY_WINDOW_DAYS} days", [hs["apy"]],
                        x_label="date (UTC)", y_label="APY, %", dates=True), history_src),
        (_drawn(svg.line_chart, "chart-apr", "Node-operator APR by collateralization", apr,
                        x_label="collateralization, % (GGP value / AVAX matched)", y_label="APR, %", y_zero=True),
         grid_src),
        (_drawn(svg.bar_chart, "chart-minipools", "Minipools by status", [(n, counts[n]) for n in STATUS_LABELS],
                       value_label="minipools", label_header="status"), "minipools"),
    ]
    queue, prices, params, ggavax = shown["queue"], shown["prices"], shown["params"], shown["ggavax"]
    if queue and queue["status"] == "ok":
        series = [svg.Series(name, tuple((t, v) for t, v in points)) for name, points in shown["queue_series"]]
        charts.insert(5, (_drawn(svg.line_chart, "chart-queue", f"Withdrawal queue: pending demand and AVAX available, next {QUEUE_CHART_DAYS} days",
                                         series, x_label="date (UTC)", y_label="AVAX", dates=True, y_zero=True),
                          "withdrawals"))
    return {
        **shown["site"], "m": shown["m"], "apy": shown["apy"], "prices": prices, "ggavax": ggavax, "params": params,
        "clock": shown["clock"], "queue": queue, "banners": _banners(prices, params, ggavax, queue),
        "counts": counts, "pool_count": shown["pool_count"], "block": block, "charts": charts,
        "apy_window_days": APY_WINDOW_DAYS, "endpoints": shown["endpoints"], "announcements": shown["announcements"],
        "history_days": len(shown["history"]), "share_points": len(hs["share"].points), "apy_points": len(hs["apy"].points),
    }


# ---- endpoints ----------------------------------------------------------------------------------


@endpoint("/", tag="About", summary="Dashboard", content_type=HTML, schema=PAGE_SCHEMA,
          description="This build's headline figures and charts, each linking to the endpoint it comes from.")
def index(ctx: Context):
    # Rendered only when what it shows changed (its key); the block it names is its stamp. The
    # figures are declared as their canonical JSON: one C-encoded string to digest, not a walk over
    # every point of every chart.
    shown = R.canonical_value(dashboard_inputs(ctx))
    yield "/", Deferred((shown,), dashboard_page, stamp=response(ctx, "/metrics")["meta"]["block"])


@endpoint("/docs.html", tag="About", summary="Reference documentation", content_type=HTML, schema=PAGE_SCHEMA,
          description="Every endpoint, its parameters, fields and an example response of this build, "
                      "rendered from /docs.")
def reference(ctx: Context):
    yield "/docs.html", _env().get_template("docs.html.j2").render(**_reference(ctx))


@endpoint("/calculator.html", tag="About", summary="Rewards calculator", cache="docs", content_type=HTML,
          schema=PAGE_SCHEMA, description="A form for /rewards/byStake.")
def calculator(ctx: Context):
    yield "/calculator.html", _env().get_template("calculator.html.j2").render(**_site(ctx), example=EXAMPLE_STAKE)


# Registered with the pages, which it renders with (its own module: one requester's page, and the lookup).
from . import requester_page  # noqa: E402,F401
