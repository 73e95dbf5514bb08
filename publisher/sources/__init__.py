"""Off-chain and event-derived data added to the chain snapshot: USD and DEX prices (prices.py),
validator records (validators.py), daily price history (history.py; the exact fields of its
published file, which a run resumes from, in history_file.py), over one HTTP helper (http.py) and
the clients of the profile's APIs (clients.py).

The package imports none of them itself: the endpoints read history_file.py without loading an
HTTP client.
"""
