"""Static JSON publisher for the GoGoPool (Hypha) staking data API."""

__version__ = "0.1.0"
