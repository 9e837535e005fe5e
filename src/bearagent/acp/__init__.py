"""`bearagent acp`: BearAgent as an Agent Client Protocol (ACP v1) agent over stdio, for editors (Zed, JetBrains,
Neovim plugins, ...). A face: it opens the service layer with `app/runtime.py` (`open_runtime`) and the run writer's stream, never an
adapter. `mapping` turns stream events and history into ACP updates (pure); `agent` is the protocol's agent side."""
