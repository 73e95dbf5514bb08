"""Configuration is validated and has one source per fact: profile files are checked key by key,
every PUBLISHER_* variable the code reads is in the table docs/operating.md carries (tests/test_docs.py
checks the table is current), and the publish cadence agrees everywhere it appears."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from publisher.cli import main as cli
from publisher.config import ENV_VARS, NETWORKS, PROFILE_DIR, load_profile, profile_from
from publisher.errors import PublisherError

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", NETWORKS)
def test_shipped_profiles_load(name):
    assert load_profile(name).name == name


def announcing(key: str, **entry) -> dict:
    return {"announcements": {key: {"date": "2026-12-31", "meaning": "m", "source": "s", **entry}}}


@pytest.mark.parametrize(("data", "message"), [
    ({"cadence_seconds": "300"}, "cadence_seconds must be an integer, not a string"),
    ({"cadence_seconds": 300.5}, "cadence_seconds must be an integer, not a number"),
    ({"cadence_seconds": 10}, "cadence_seconds must be at least 60"),
    ({"cadenceSeconds": 300}, "unknown key 'cadenceSeconds'"),
    ({"name": "mainnet"}, "unknown key 'name'"),
    ({"rpc_urls": "https://x"}, "rpc_urls must be a list of a string, not a string"),
    ({"flags": {"liquidStaking": "yes"}}, "flags.liquidStaking must be true or false, not a string"),
    ({"chain_id": True}, "chain_id must be an integer, not a boolean"),
    ({"dex_pair": 5}, "dex_pair must be a string or null, not an integer"),
    ({"validator_api_key": "k"}, "secrets come only from PUBLISHER_VALIDATOR_API_KEY"),
    (announcing("withdrawalWindowEnd", date="2026-02-30"),
     "announcements.withdrawalWindowEnd.date must be a calendar date YYYY-MM-DD (UTC), not '2026-02-30'"),
    (announcing("endOfOperations", date="2026-8-15"), "announcements.endOfOperations.date must be a calendar date"),
    (announcing("endOfOperations", date="2026-08-15T00:00:00Z"), "announcements.endOfOperations.date must be a calendar date"),
    (announcing("endOfOperations", date=20260815), "announcements.endOfOperations.date must be a string, not an integer"),
    (announcing("endOfOperations", source=" "), "announcements.endOfOperations: missing 'source'"),
    (announcing("endOfOperations", time="0"), "announcements.endOfOperations: unknown key 'time'"),
    (announcing("withdrawalsEnd"), "announcements.withdrawalsEnd: unknown announcement; choose one of endOfOperations, withdrawalWindowEnd"),
])
def test_profile_file_errors_name_the_key_and_the_file(data, message):
    base = json.loads((PROFILE_DIR / "devnet.json").read_text())
    with pytest.raises(PublisherError) as err:
        profile_from({**base, **data}, "devnet", "/etc/p.json")
    assert message in str(err.value) and "/etc/p.json" in str(err.value)


def test_profile_requires_its_keys_and_an_object():
    with pytest.raises(PublisherError, match="missing key 'chain_id'"):
        profile_from({"storage": "0x0"}, "x", "p.json")
    with pytest.raises(PublisherError, match="must hold a JSON object"):
        profile_from([], "x", "p.json")


@pytest.mark.parametrize("name", NETWORKS)
def test_shipped_profiles_announce_both_dates_with_their_source(name):
    """Every network announces the same two dates (the devnet's clock runs through both: the demo is
    before them, the wound-down scenario between them), each at the moment its field describes."""
    got = load_profile(name).announced()
    assert [(a.key, a.date, a.time) for a in got] == [
        ("endOfOperations", "2026-08-15", 1_786_752_000),  # 2026-08-15 00:00 UTC: the start of the day
        ("withdrawalWindowEnd", "2026-12-31", 1_798_675_200)]  # 2026-12-31 00:00 UTC: the earliest the site may go
    for a in got:
        assert a.meaning.endswith(".") and "DefiLlama yield-server adaptor for Hypha" in a.source and "2026-07-31" in a.source


def test_numbers_widen_to_float_fields():
    base = json.loads((PROFILE_DIR / "devnet.json").read_text())
    p = profile_from({**base, "price_divergence_pct": 3}, "devnet", "p.json")
    assert p.price_divergence_pct == 3.0 and isinstance(p.price_divergence_pct, float)


def test_environment_overrides_are_typed(monkeypatch):
    monkeypatch.setenv("PUBLISHER_FEED_MAX_AGE", "soon")
    with pytest.raises(PublisherError, match="PUBLISHER_FEED_MAX_AGE must be an integer"):
        load_profile("devnet")
    monkeypatch.setenv("PUBLISHER_FEED_MAX_AGE", "120")
    monkeypatch.setenv("PUBLISHER_RPC_URL", "http://a, http://b")
    p = load_profile("devnet")
    assert p.feed_max_age == 120 and p.rpc_urls == ("http://a", "http://b")


def test_every_publisher_variable_in_the_code_is_in_the_table():
    """The table is the one list: a PUBLISHER_* name read anywhere in the package must be in it."""
    used = set()
    for path in (ROOT / "publisher").rglob("*.py"):
        used |= set(re.findall(r"\bPUBLISHER_[A-Z_]+\b", path.read_text()))
    declared = {v.name for v in ENV_VARS}
    assert used == declared, f"undeclared: {used - declared}, unused: {declared - used}"


def test_cli_choices_come_from_the_code():
    from ggp_devnet.scenarios import SHAPES, SIZES, names

    assert set(names()) == set(SHAPES) | set(SIZES) >= {"demo", "scale", "scale-1k", "scale-30k", "scale-100k"}
    for command in ("devnet", "snapshot", "build"):
        help_text = " ".join(CliRunner().invoke(cli, [command, "--help"]).output.split())
        assert f"[{'|'.join(names())}]" in help_text, command
    assert f"[{'|'.join(NETWORKS)}]" in help_text
    bad = CliRunner().invoke(cli, ["build", "--scenario", "nope"])
    assert bad.exit_code == 2 and "nope" in bad.output


def _stack(name: str = "aws-stack.yaml") -> dict:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: {suffix: loader.construct_scalar(node)}
                                 if isinstance(node, yaml.ScalarNode) else None)
    return yaml.load((ROOT / "templates" / name).read_text(), Loader=Loader)


def test_publish_cadence_has_one_source():
    """The mainnet profile's cadence sets the workflow's cron, the edge TTL and the function's
    params TTL."""
    cadence = load_profile("mainnet").cadence_seconds
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "publish.yml").read_text())
    crons = [c["cron"] for c in workflow[True]["schedule"]]  # YAML 1.1 reads the `on` key as True
    assert crons == [f"*/{cadence // 60} * * * *"]
    stack = _stack()
    assert stack["Parameters"]["DataMaxAgeSeconds"]["Default"] == cadence
    env = stack["Resources"]["RewardsFunction"]["Properties"]["Environment"]["Variables"]
    assert env["REWARDS_PARAMS_TTL"] == {"Ref": "DataMaxAgeSeconds"}
    assert _stack("aws-watch.yaml")["Parameters"]["DataMaxAgeSeconds"]["Default"] == cadence


def test_check_reads_the_network_from_status(tmp_path):
    (tmp_path / "status.json").write_text(json.dumps({"network": "nowhere"}))
    run = CliRunner().invoke(cli, ["check", str(tmp_path)])
    assert run.exit_code == 1 and "names no known network ('nowhere')" in run.output
    assert "--network" not in CliRunner().invoke(cli, ["check", "--help"]).output


def test_check_takes_its_directory_as_serve_and_publish_do(tmp_path):
    """``check DIR`` and ``check --dir DIR`` are one command; two different directories are refused."""
    (tmp_path / "status.json").write_text(json.dumps({"network": "nowhere"}))
    for args in ([str(tmp_path)], ["--dir", str(tmp_path)], [str(tmp_path), "--dir", str(tmp_path)]):
        run = CliRunner().invoke(cli, ["check", *args])
        assert run.exit_code == 1 and "names no known network ('nowhere')" in run.output, args
    other = tmp_path / "other"
    other.mkdir()
    run = CliRunner().invoke(cli, ["check", str(tmp_path), "--dir", str(other)])
    assert run.exit_code == 2 and "two directories to check" in run.output
