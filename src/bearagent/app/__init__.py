"""The composition root: opens a loaded workspace's adapters (store, writer, providers, MCP, lease keeper) and
reports on its store (see docs/architecture.md)."""
