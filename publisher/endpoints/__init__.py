"""Endpoint declarations (registry) and their render functions."""
