"""`bearagent serve`: the HTTP API (FastAPI + uvicorn) over the workspace runtime."""
