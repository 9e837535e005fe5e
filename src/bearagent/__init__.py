"""BearAgent: a local-first, plugin-extensible agent runtime."""

__version__ = "0.1.0"
