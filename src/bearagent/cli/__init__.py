from bearagent.cli.main import main

__all__ = ["main"]
