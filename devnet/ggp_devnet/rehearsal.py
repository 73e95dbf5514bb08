"""Rehearsal networks: the devnet contracts installed at a shipped profile's exact addresses, on
that network's chain id, so `publisher build --network mainnet` runs unchanged against anvil.

Contracts cannot be deployed at chosen addresses, so each one is deployed normally with its
constructor arguments already pointing at the target addresses (immutables such as the Storage
reference and the pair's tokens are baked into the runtime code), then its runtime code and every
storage slot its constructor wrote are moved to the target with ``anvil_setCode`` and
``anvil_setStorageAt``, and the temporary copy is emptied. Registration and seeding then run at the
target addresses like on the plain devnet.
"""
from __future__ import annotations

import gzip
import json

from eth_abi import encode
from eth_utils import to_checksum_address

from publisher.chain.rpc import RpcClient
from publisher.config import Profile
from publisher.errors import PublisherError

from . import seed as S
from .scenarios import Scenario

# Profile address field -> devnet contract name.
PROFILE_FIELDS = {"storage": "Storage", "avax_usd_feed": "PriceFeed", "dex_pair": "DexPair",
                  "withdraw_queue": "WithdrawQueue", "pst_avax": "TokenpstAVAX"}


def targets(profile: Profile) -> dict[str, str]:
    """Devnet contract name -> the profile's address for it (only those the profile names)."""
    out = {name: getattr(profile, f) for f, name in PROFILE_FIELDS.items() if getattr(profile, f)}
    out |= profile.addresses
    if profile.multicall.lower() != S.MULTICALL3.lower():
        raise PublisherError(f"profile {profile.name} puts Multicall3 at {profile.multicall}, not its canonical address")
    return {k: to_checksum_address(v) for k, v in out.items()}


def install(client: RpcClient, profile: Profile, start: int) -> dict[str, str]:
    """Deploy every devnet contract at the profile's addresses on a fresh chain; the address map."""
    want = targets(profile)
    unknown = sorted(set(want) - {n for n, _ in S.DEPLOY_ORDER})
    if unknown:
        raise PublisherError(f"profile {profile.name} names contracts the devnet does not have: {', '.join(unknown)}")
    artifacts = S.load_artifacts()
    order = [n for n, _ in S.DEPLOY_ORDER]

    def arg(a: str):
        if S._ctor_type(a) != "address":
            return S._ctor_arg(a, {})
        return want.get(a) or S.contract_address(S.DEPLOYER, order.index(a))

    sender = S.Sender(client, clock=start)
    temp: dict[str, str] = {}
    with S.manual_mining(client):
        for name, args in S.DEPLOY_ORDER:
            types = [S._ctor_type(a) for a in args]
            code = bytes.fromhex(artifacts[name]["bytecode"][2:]) + (encode(types, [arg(a) for a in args]) if args else b"")
            sender.send(None, code, f"deploy {name}")
        for (name, _), receipt in zip(S.DEPLOY_ORDER, sender.check(), strict=True):
            temp[name] = to_checksum_address(receipt["contractAddress"])
        accounts = _dump(client)
        for name, target in want.items():
            _move(client, name, temp[name], target, accounts.get(temp[name].lower()))
        addresses = {name: want.get(name, temp[name]) for name in order}
        for name in S.REGISTERED:
            sender.send(addresses["Storage"], S.register_contract.encode(name, addresses[name]), f"register {name}")
        S.grant_roles(sender, addresses)  # at the final addresses: roles name the queue
        sender.check()
    client.request("anvil_setCode", [S.MULTICALL3, artifacts["Multicall3"]["deployedBytecode"]])
    addresses["Multicall3"] = S.MULTICALL3
    S.allow_any_sender(client)
    return addresses


def _move(client: RpcClient, name: str, temp: str, target: str, state: dict | None) -> None:
    """Move contract ``name`` from where it was deployed (``temp``, its dumped ``state``) to
    ``target``: its runtime code and storage there, none left at ``temp``."""
    if not state or state.get("code") in (None, "0x"):
        raise PublisherError(f"rehearsal: {name} has no code after deployment")
    # An immutable or stored copy of address(this) would still point at the temporary copy.
    own = temp.lower()[2:]
    if own in state["code"].lower() or any(own in v.lower() for v in state.get("storage", {}).values()):
        raise PublisherError(f"rehearsal: {name} keeps its own deployment address in code or storage; it cannot be moved")
    client.request("anvil_setCode", [target, state["code"]])
    for slot, value in state.get("storage", {}).items():
        client.request("anvil_setStorageAt", [target, slot, _word(value)])
    client.request("anvil_setCode", [temp, "0x"])  # one copy only: nothing may use the old one


def fresh_feed(client: RpcClient, addresses: dict[str, str], sc: Scenario) -> None:
    """One more AVAX/USD round just after the scenario's last block: Chainlink's AVAX/USD updates
    several times a day, so a real network's feed is well inside mainnet's one-day age bound,
    which the scenario's daily rounds would not be."""
    with S.manual_mining(client):
        s = S.Sender(client, clock=sc.now)
        s.at(sc.now + 60)
        s.send(addresses["PriceFeed"], S.update_answer.encode(sc.prices[-1][2], s.next_block_time()), "fresh AVAX/USD round")
        s.check()


def _dump(client: RpcClient) -> dict[str, dict]:
    raw = client.request("anvil_dumpState", [])
    data = bytes.fromhex(raw[2:])
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return {k.lower(): v for k, v in json.loads(data)["accounts"].items()}


def _word(value: str) -> str:
    return "0x" + value[2:].rjust(64, "0")
