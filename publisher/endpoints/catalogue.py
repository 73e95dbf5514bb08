"""Every endpoint module, imported in publishing order (/status last: it digests the others)."""
from . import market, vault, operators  # noqa: F401
from . import meta  # noqa: F401  (keep last)
