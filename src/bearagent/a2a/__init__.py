"""The A2A client side: a remote A2A agent configured under `a2a_agents:` offered to the model as a tool that
delegates to it (docs/a2a.md#delegating-to-a-remote-a2a-agent). The server side is `server/a2a.py`."""
