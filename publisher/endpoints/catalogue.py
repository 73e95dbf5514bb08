"""Every endpoint module: importing one registers its endpoints."""
from . import estimate, market, meta, openapi, operators, pages, rewards, vault, withdrawals  # noqa: F401
