"""What the sandbox and process tests look at on the host: the live processes whose command line carries a test's
marker (what must not survive a call), and a TCP listener on 127.0.0.1 that counts the connections it accepted (the
attacker's endpoint a sandboxed command must not reach)."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from pathlib import Path


def processes_with(marker: str) -> list[int]:
    """Live (non-zombie) processes on the host, this one aside, whose argv contains `marker`."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().decode("utf-8", "replace")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if marker in argv and state != "Z":
            found.append(int(entry))
    return found


def wait_for_processes(marker: str, starter: subprocess.Popen[bytes], ended: str, missing: str) -> None:
    """Until two live processes carry `marker` (a command and the daemon it left, say); `ended` is the failure when
    `starter`, which starts them, ends first, `missing` when they never appear. 60 s: generous for a loaded machine
    starting `bearagent`, not a speed figure."""
    deadline = time.monotonic() + 60
    while len(processes_with(marker)) < 2 and time.monotonic() < deadline:
        assert starter.poll() is None, ended
        time.sleep(0.05)
    assert len(processes_with(marker)) >= 2, missing


class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections it accepted."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.accepted = 0
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop = True
        self._thread.join(2)
        self.sock.close()
