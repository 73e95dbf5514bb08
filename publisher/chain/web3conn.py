"""A web3 instance whose transport is our RpcClient (retries, fallbacks, counters).

Default middleware is removed: validation and gas-estimate layers each add hidden requests
per call, which would make request counts unpredictable.
"""
from __future__ import annotations

from web3 import Web3
from web3.providers.base import JSONBaseProvider

from .rpc import RpcClient, RpcError


class ClientProvider(JSONBaseProvider):
    def __init__(self, client: RpcClient):
        super().__init__()
        self.client = client

    def make_request(self, method, params):
        try:
            return {"jsonrpc": "2.0", "id": 0, "result": self.client.request(str(method), list(params))}
        except RpcError as exc:
            return {"jsonrpc": "2.0", "id": 0, "error": {"code": exc.code or -32000, "message": exc.rpc_message, "data": exc.data}}

    def is_connected(self, show_traceback: bool = False) -> bool:
        try:
            self.client.request("eth_chainId")
            return True
        except Exception:
            if show_traceback:
                raise
            return False


def make_web3(client: RpcClient) -> Web3:
    w3 = Web3(ClientProvider(client))
    w3.middleware_onion.clear()
    return w3
