"""The whole API, as `publisher serve` answers it, fuzzed against its own OpenAPI document.

Schemathesis generates requests from /docs (valid and invalid path and query values) and checks
every answer: no server errors, a documented status code and content type, and a body that
matches the documented schema.
"""
from __future__ import annotations

import threading

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from publisher.build.pipeline import build
from publisher.serve import make_server


@pytest.fixture(scope="module")
def api_schema(demo_snapshot, demo_profile, tmp_path_factory):
    out = tmp_path_factory.mktemp("fuzz") / "out"
    build(demo_snapshot, demo_profile, out)
    server = make_server(out, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield schemathesis.openapi.from_url(f"http://127.0.0.1:{server.server_address[1]}/docs")
    server.shutdown()
    server.server_close()


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
# Derandomized so CI is repeatable; raise max_examples locally to dig deeper.
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_openapi_document(case):
    case.call_and_validate()
