"""Reading the chain: JSON-RPC transport, ABI encoding, Multicall3 and the protocol reader."""
