"""`publisher serve` answers like the CDN: files by endpoint URL, headers, JSON errors, the function."""
from __future__ import annotations

import json
import re
import threading

import pytest
import requests
from openapi_spec_validator import validate as validate_openapi

from publisher.build.pipeline import build
from publisher.endpoints.calendar import ICS
from publisher.endpoints.feed import ATOM
from publisher.endpoints.registry import load_all
from publisher.serve import make_server


@pytest.fixture(scope="module")
def site(demo_snapshot, demo_profile, tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "out"
    build(demo_snapshot, demo_profile, out)
    server = make_server(out, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", out
    server.shutdown()
    server.server_close()


def test_files_are_served_under_their_urls_with_cdn_headers(site):
    base, out = site
    r = requests.get(f"{base}/prices")
    assert r.status_code == 200 and r.content == (out / "prices.json").read_bytes()
    assert r.headers["Content-Type"] == "application/json"
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert r.headers["Cache-Control"].startswith("public, max-age=")
    assert requests.get(f"{base}/prices/tj").json()["pair"]


def test_checksummed_and_lowercase_addresses_name_the_same_file(site):
    base, out = site
    staker = json.loads((out / "stakers.json").read_text())["stakers"][0]["stakerAddr"]
    a = requests.get(f"{base}/stakers/{staker}")
    b = requests.get(f"{base}/stakers/{staker.lower()}")
    assert a.status_code == b.status_code == 200 and a.content == b.content
    assert a.json()["staker"]["stakerAddr"] == staker
    assert requests.get(f"{base}/rewards/{staker}").json()["address"] == staker


def test_errors_are_json_with_the_right_status(site):
    base, _ = site
    for path, status in (("/nope", 404), ("/stakers/0x" + "ab" * 20, 404), ("/minipools/NodeID-zzz", 404),
                         ("/../../etc/passwd", 404)):
        r = requests.get(base + path)
        assert r.status_code == status, path
        assert r.json()["error"]["code"] == "not_found"
    r = requests.post(f"{base}/prices")
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"
    r = requests.options(f"{base}/prices")
    assert r.status_code == 204 and r.headers["Access-Control-Allow-Origin"] == "*"


def test_rewards_function_is_served_with_params_from_the_build(site):
    base, _ = site
    r = requests.get(f"{base}/rewards/byStake", params={"ggpStaked": "1500", "avaxStaked": "1000"})
    assert r.status_code == 200, r.text
    assert r.json()["result"]["aprPct"] > 0
    bad = requests.get(f"{base}/rewards/byStake", params={"ggpStaked": "-1", "avaxStaked": "1000"})
    assert bad.status_code == 400 and "ggpStaked" in bad.json()["error"]["message"]
    # A trailing slash: the same answer, as the CDN gives it (its behaviour's pattern takes the slash,
    # the function drops it); two slashes name nothing, there as here.
    # The Cache-Control /docs documents is the one the function sends (its max-age a number there).
    documented = requests.get(f"{base}/docs").json()["paths"]["/rewards/byStake"]["get"]["responses"]["200"]
    shape = re.escape(documented["headers"]["Cache-Control"]["description"])
    assert re.fullmatch(re.sub(r"<[^>]*>", r"[0-9]+", shape), r.headers["Cache-Control"]), (shape, r.headers["Cache-Control"])
    slash = requests.get(f"{base}/rewards/byStake/", params={"ggpStaked": "1500", "avaxStaked": "1000"})
    assert slash.status_code == 200 and slash.content == r.content
    assert requests.get(f"{base}/rewards/byStake//", params={"ggpStaked": "1500", "avaxStaked": "1000"}).status_code == 404
    assert requests.get(f"{base}/prices//").status_code == 404 and requests.get(f"{base}/prices/").status_code == 200


def test_openapi_document_is_valid_and_every_example_resolves(site):
    base, _ = site
    doc = requests.get(f"{base}/docs").json()
    validate_openapi(doc)
    same = requests.get(f"{base}/openapi.json")  # the conventional name serves the same bytes
    assert same.headers["Content-Type"] == "application/json" and same.content == requests.get(f"{base}/docs").content
    # The JSON files and functions, and the files to subscribe to (a requester's calendar, the queue's feed).
    assert set(doc["paths"]) == {ep.path for ep in load_all().values()
                                 if ep.content_type in ("application/json", ICS, ATOM) and ep.documented}
    for path, item in doc["paths"].items():
        params = item["get"].get("parameters", [])
        url = path.format(**{p["name"]: p["example"] for p in params if p["in"] == "path"})
        query = {p["name"]: p["example"] for p in params if p["in"] == "query" and "example" in p}
        r = requests.get(base + url, params=query)
        assert r.status_code == 200, (url, r.text[:200])
        assert [r.headers["Content-Type"]] == list(item["get"]["responses"]["200"]["content"]), url


def test_pages_link_every_endpoint_and_every_link_resolves(site):
    import re
    from urllib.parse import urljoin

    from publisher.endpoints.pages import path_code

    base, _ = site
    index = requests.get(base + "/")
    assert index.status_code == 200 and index.headers["Content-Type"].startswith("text/html")
    reference = requests.get(base + "/docs.html")
    assert reference.status_code == 200 and "<code>" in reference.text
    calculator = requests.get(base + "/calculator.html")
    assert calculator.status_code == 200 and 'action="rewards/byStake"' in calculator.text
    doc = requests.get(base + "/openapi.json").json()
    for path, item in doc["paths"].items():  # the reference's table of contents names every endpoint
        code = str(path_code(path))  # <code class="path">, breakable after each slash
        assert code.replace("<wbr>", "").endswith(f">{path}</code>")
        assert f'<a href="#{item["get"]["operationId"]}">{code}</a>' in reference.text, path
        assert f">{code}</a>" in index.text, path  # and the dashboard lists it, linked
    links = {link for link in re.findall(r'href="([^"#]+)"', index.text + reference.text + calculator.text)
             if not link.startswith("data:")}
    assert len(links) > 15
    for link in links:
        r = requests.get(urljoin(base + "/", link.replace("&amp;", "&")))
        assert r.status_code == 200, link


def test_unreasonable_paths_are_plain_404s(site):
    base, _ = site
    for path in ("/minipools/" + "%F0%9D%93%A3" * 80, "/stakers/" + "a" * 5000, "/prices%00", "/prices/..%2F..%2Fetc"):
        r = requests.get(base + path)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", path


def test_a_function_route_answers_every_method_as_the_function_does(site):
    """Serve hands a function route to the function whatever the method, so status, body and
    headers are the function's (POST refused with its 405, OPTIONS its preflight; behind the CDN a
    method beyond GET, HEAD and OPTIONS is refused before it); and every error body, serve's own
    included, is the one canonical JSON."""
    from publisher.function.handler import handler

    base, out = site
    config = {"REWARDS_PARAMS_URL": (out / "rewards" / "params.json").as_uri(),
              "QUEUE_PARAMS_URL": (out / "withdrawals" / "params.json").as_uri()}
    for path in ("/rewards/byStake", "/withdrawals/estimate", "/rewards/estimate"):
        for method in ("POST", "OPTIONS", "DELETE"):
            got = requests.request(method, base + path)
            event = {"version": "2.0", "rawPath": path, "rawQueryString": "", "headers": {},
                     "requestContext": {"http": {"method": method, "path": path}}}
            want = handler(event, None, config=config)
            assert got.status_code == want["statusCode"] and got.text == want["body"], (path, method)
            for name, value in want["headers"].items():
                assert got.headers[name] == value, (path, method, name)
            assert ("Content-Type" in got.headers) == bool(want["body"]), (path, method)
    missing = requests.get(base + "/nowhere")
    assert missing.content == json.dumps({"error": {"code": "not_found", "message": "no such resource: /nowhere"}},
                                          separators=(",", ":"), sort_keys=True).encode() + b"\n"


def test_a_request_the_http_parser_refuses_gets_the_json_error_body(site):
    """A request line with raw bytes outside ASCII, or too long to read: a JSON error with CORS,
    not the standard library's HTML page."""
    import socket

    host, port = site[0].removeprefix("http://").split(":")
    for line in (b"GET /rewards/byStake?ggpStaked=1\xa02&avaxStaked=1 HTTP/1.1", b"GET /" + b"a" * 70_000 + b" HTTP/1.1"):
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(line + b"\r\nHost: x\r\n\r\n")
            raw = b""
            while chunk := sock.recv(65536):
                raw += chunk
        head, _, body = raw.partition(b"\r\n\r\n")
        status = int(head.split()[1])
        assert status in (400, 414) and b"Content-Type: application/json" in head, head
        assert b"Access-Control-Allow-Origin: *" in head
        error = json.loads(body)["error"]
        assert error["code"] in ("bad_request", "request_uri_too_long") and error["message"], error
