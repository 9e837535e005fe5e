"""Start a `bearagent` process the way a terminal starts a foreground command, whatever the test harness did to its
own signals: an ignored or blocked SIGINT is inherited across exec, and Python then never installs the handler that
turns Ctrl-C into KeyboardInterrupt (a shell's background job is started that way on purpose). Tests that press
Ctrl-C (send SIGINT) give their child `preexec_fn=as_foreground`."""

from __future__ import annotations

import signal

_FOREGROUND = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def as_foreground() -> None:
    for sig in _FOREGROUND:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _FOREGROUND)
