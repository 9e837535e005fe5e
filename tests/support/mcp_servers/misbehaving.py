"""Servers that misbehave on purpose: `python misbehaving.py MODE`.

- `exit-at-start`: writes a reason to stderr and exits 7 before reading anything.
- `never-answers`: reads stdin forever and never writes a byte.
- `garbage-then-serve`: prints junk lines and invalid UTF-8 on stdout, then serves the demo tools normally.
- `garbage-only`: prints junk lines on stdout forever, never a JSON-RPC answer.
- `linger`: starts a grandchild in its process group, ignores SIGTERM, serves the demo tools, and keeps running
  after stdin closes (only the SDK's SIGKILL of the process group ends it).
"""

from __future__ import annotations

import importlib
import signal
import subprocess
import sys
import time
from pathlib import Path


def main(mode: str) -> None:
    if mode == "exit-at-start":
        sys.stderr.write("fatal: DEMO_TOKEN is not configured\n")
        sys.stderr.flush()
        sys.exit(7)
    if mode == "never-answers":
        for _line in sys.stdin:
            pass
        return
    if mode == "garbage-only":
        for i in range(100_000):
            sys.stdout.write(f"hello from a chatty banner {i}\n")
            sys.stdout.flush()
            time.sleep(0.05)
        return
    if mode == "garbage-then-serve":
        out = sys.stdout.buffer
        out.write(b"Starting demo server v1.0 ...\n")
        out.write(b'{"hello": "world"}\n')
        out.write(b"bad utf-8 here: \xff\xfe\xfa\n")
        out.flush()
        sys.path.insert(0, str(Path(__file__).parent))
        demo = importlib.import_module("demo")
        demo.build_server().run("stdio")
        return
    if mode == "linger":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        tag = sys.argv[2] if len(sys.argv) > 2 else "linger"
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)",
                tag,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        sys.path.insert(0, str(Path(__file__).parent))
        importlib.import_module("demo").build_server().run("stdio")
        time.sleep(300)
        return
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1])
