"""The custom errors of the contracts' compiled ABIs, as the publisher's runtime reads them
(publisher/chain/custom_errors.json): a revert is named on any network, the devnet installed or
not. `python -m ggp_devnet.custom_errors` rewrites the file after `npm run compile`; a test fails
while it differs from the artifacts."""
from __future__ import annotations

import json
from pathlib import Path

from publisher.chain import abis

from .seed import ARTIFACTS

TARGET = Path(abis.__file__).with_name("custom_errors.json")


def render() -> str:
    """[name, [argument types]] of every error in the artifacts, sorted, one per line."""
    found = set()
    for contract in json.loads(ARTIFACTS.read_text())["contracts"].values():
        for item in contract.get("abi", ()):
            if item.get("type") == "error":
                found.add((item["name"], tuple(abis.abi_type(i) for i in item.get("inputs", ()))))
    rows = [json.dumps([name, list(types)]) for name, types in sorted(found)]
    return "[\n" + ",\n".join(rows) + "\n]\n"


if __name__ == "__main__":
    TARGET.write_text(render())
    print(f"wrote {TARGET}")
