"""Plugins: the typed hookspecs (`hookspecs`), the registration dataclasses (`contributions`) and the plugin host
(`manager`: entry points, the `BEARAGENT_LOAD_PLUGINS` filter, isolation)."""
