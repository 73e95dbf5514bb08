"""Human pages: the index (/) and the reference (/docs.html), both rendered with jinja2 from the
OpenAPI document of /docs, so the pages, the document and the files cannot disagree. Plain HTML
and CSS: they work offline and need no script."""
from __future__ import annotations

import functools
import re

import jinja2
import markupsafe

from .context import Context
from .openapi import document
from .registry import endpoint

HTML = "text/html; charset=utf-8"
PAGE_SCHEMA = {"type": "string"}


@functools.cache
def _env() -> jinja2.Environment:
    # Page templates ship inside the package, so an installed publisher renders them anywhere.
    env = jinja2.Environment(loader=jinja2.PackageLoader("publisher", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["code"] = code_spans
    return env


def code_spans(text: str) -> markupsafe.Markup:
    """Escape the text, then show its `backticked` spans as code (the docs' only markup)."""
    return markupsafe.Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(markupsafe.escape(text))))


def describe(schema: dict) -> str:
    if "anyOf" in schema:
        return " | ".join(describe(s) for s in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {describe(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"map of {describe(schema['additionalProperties'])}"
    return kind


def fields(schema: dict, prefix: str = "", depth: int = 0) -> list[dict]:
    """Rows for every property, nested objects and arrays of objects flattened with dotted names."""
    rows = []
    required = set(schema.get("required", []))
    for name, sub in schema.get("properties", {}).items():
        full = f"{prefix}{name}"
        target = next((s for s in sub.get("anyOf", []) if s.get("type") != "null"), sub)
        rows.append({"name": full, "type": describe(sub), "required": name in required,
                     "description": sub.get("description") or target.get("description", "")})
        if depth < 3 and target.get("type") == "object" and "properties" in target:
            rows += fields(target, f"{full}.", depth + 1)
        elif depth < 3 and target.get("type") == "array" and "properties" in target.get("items", {}):
            rows += fields(target["items"], f"{full}[].", depth + 1)
    return rows


def _model(ctx: Context) -> dict:
    doc = ctx.cached(document)
    groups: dict[str, list[dict]] = {}
    for path, item in doc["paths"].items():
        op = item["get"]
        params = op.get("parameters", [])
        examples = {p["name"]: p.get("example") for p in params}
        link = path if not params else None
        if all(examples.values()) and params:
            query = "&".join(f"{p['name']}={p['example']}" for p in params if p["in"] == "query")
            link = path.format(**{p["name"]: p["example"] for p in params if p["in"] == "path"}) + (f"?{query}" if query else "")
        ok = op["responses"]["200"]
        groups.setdefault(op["tags"][0] if op["tags"] else "Other", []).append({
            "path": path, "summary": op["summary"], "description": op["description"],
            "anchor": op["operationId"], "link": link.lstrip("/") if link else None,
            "example": link.lstrip("/") if link else None,
            "cache": ok["headers"]["Cache-Control"]["description"],
            "params": [{"name": p["name"], "where": p["in"], "type": describe(p["schema"]),
                        "description": p["description"], "example": p.get("example")} for p in params],
            "fields": fields(ok["content"]["application/json"]["schema"]),
        })
    # No block stamp: the pages change only when the API does, so publishing them rarely costs a
    # CDN invalidation (the current block is in /status).
    return {
        "title": doc["info"]["title"], "description": doc["info"]["description"], "version": doc["info"]["version"],
        "groups": sorted(groups.items()), "network": ctx.snap.network, "chain_id": ctx.snap.chain_id,
    }


@endpoint("/", tag="About", summary="Index page", cache="docs", content_type=HTML, schema=PAGE_SCHEMA,
          description="A page linking every endpoint, grouped as in the reference.")
def index(ctx: Context):
    yield "/", _env().get_template("index.html.j2").render(**ctx.cached(_model))


@endpoint("/docs.html", tag="About", summary="Reference documentation", cache="docs", content_type=HTML,
          schema=PAGE_SCHEMA, description="Every endpoint, its parameters and response fields, rendered from /docs.")
def reference(ctx: Context):
    yield "/docs.html", _env().get_template("docs.html.j2").render(**ctx.cached(_model))
