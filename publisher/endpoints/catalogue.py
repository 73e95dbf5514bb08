"""Every endpoint module: importing one registers its endpoints."""
from . import calendar, estimate, feed, market, meta, openapi, operators, pages, rewards, vault, withdrawals  # noqa: F401
