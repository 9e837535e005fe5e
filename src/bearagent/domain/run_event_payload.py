"""The base of every run event payload, apart from the catalogue (`run_events`) so that the models of old versions
(`run_events_legacy`, loaded on first use) derive from it without importing the catalogue that loads them."""

from __future__ import annotations

from bearagent.domain._base import DomainModel


class RunEventPayload(DomainModel):
    """Base of every run event payload."""
