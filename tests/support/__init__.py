"""Shared test helpers, one module per area."""
