"""Every endpoint module: importing one registers its endpoints."""
from . import market, meta, openapi, operators, rewards, vault  # noqa: F401
