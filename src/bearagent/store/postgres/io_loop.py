"""The store's own event loop, on a thread of its own: every psycopg connection of a `PostgresRunStorage` lives
and is used there.

Why not the caller's loop: a store handle outlives event loops. The CLI reads with `asyncio.run` more than once over
one store, the contract suite drives one handle from several `asyncio.run`s, and the synchronous face (the CLI's
read commands, `SessionService`) is called from plain code and from inside running loops alike. psycopg's async
connections and its pool belong to the loop they were opened on; here that is always this one. Callers on any loop
await the result (`call`), which never blocks their loop; synchronous callers wait for it (`run`).

A long-lived process whose loop outlives its stores (`bearagent worker`, `bearagent serve`) calls `use_this_loop()`
from that loop first: its stores then keep their connections on it, so a store call from that loop is a plain
`await`, without the two hops between threads each call costs otherwise (issue 37: over half of a PostgreSQL
worker's CPU per run was its store thread). Callers on other threads still reach it as above. A synchronous call
made on that loop's own thread (it cannot wait for its own loop) runs on a thread of its own with a connection
opened for it (`ONE_SHOT`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

_T = TypeVar("_T")

_HOME: list[tuple[asyncio.AbstractEventLoop, threading.Thread]] = []
"""The loop `use_this_loop` named (at most one per process), and its thread."""


def use_this_loop() -> None:
    """From now on, every store loop started in this process is the running loop (see the module's docstring). Call
    it from the loop that runs for the rest of the process, before the stores' first use; a store used earlier keeps
    its own thread."""
    _HOME[:] = [(asyncio.get_running_loop(), threading.current_thread())]


ONE_SHOT = "bearagent-pg-one-shot"
"""The name of the thread a synchronous store call made on the process's own store loop runs on."""


class IoLoop:
    """An asyncio loop running on a daemon thread, started on first use, stopped by `close`."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()
        self._closed = False
        self._adopted = False  # the loop is the process's (`use_this_loop`), not one this object runs

    def _running(self) -> asyncio.AbstractEventLoop:
        with self._guard:
            if self._closed:
                raise RuntimeError("the store is closed")
            if self._loop is None and _HOME and not _HOME[0][0].is_closed():
                self._loop, self._thread = _HOME[0]
                self._adopted = True
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=serve, name=self._name, daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    def in_loop(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def serves(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Whether `loop` is the store's loop (else: a one-shot loop of a synchronous call, see `run`)."""
        return loop is self._loop

    def submit(self, work: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        try:
            loop = self._running()
        except RuntimeError:
            work.close()
            raise
        return asyncio.run_coroutine_threadsafe(work, loop)

    async def call(self, work: Coroutine[Any, Any, _T]) -> _T:
        """Run `work` on the store's loop; the caller's loop stays free meanwhile. Cancelling the caller cancels
        the work."""
        if self._adopted and self.in_loop():
            return await work
        return await asyncio.wrap_future(self.submit(work))

    async def call_shielded(self, work: Coroutine[Any, Any, _T]) -> _T:
        """`call`, but cancelling the caller does not stop the work (a lock release must finish)."""
        if self._adopted and self.in_loop():
            return await asyncio.shield(asyncio.ensure_future(work))
        return await asyncio.shield(asyncio.wrap_future(self.submit(work)))

    def run(self, work: Coroutine[Any, Any, _T]) -> _T:
        """Run `work` on the store's loop and wait for it on this thread (the synchronous face). On the thread of a
        process's own store loop (`use_this_loop`), which cannot wait for itself, `work` runs on a thread and loop of
        its own instead (the store gives it a connection of its own there: `serves`)."""
        try:
            loop = self._running()  # first: a first use may make this thread's loop the store's
        except RuntimeError:
            work.close()
            raise
        if self.in_loop():
            if not self._adopted:
                work.close()
                raise RuntimeError("a synchronous store call from the store's own loop would wait for itself")
            with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=ONE_SHOT) as one_shot:
                return one_shot.submit(asyncio.run, work).result()
        return asyncio.run_coroutine_threadsafe(work, loop).result()

    def close(self, last: Coroutine[Any, Any, None] | None = None) -> None:
        """Run `last` (closing the connections) on the loop, then stop it and join its thread. A process's own loop
        (`use_this_loop`) is not stopped: `last` runs on it, and this waits for it unless called on that loop's
        thread, where it cannot (`aclose` can)."""
        loop, thread, adopted = self._detach()
        if adopted and loop is not None:  # never stopped here: the loop is the process's
            if last is None:
                return
            if threading.current_thread() is thread:
                _CLOSING.add(task := loop.create_task(last))
                task.add_done_callback(_CLOSING.discard)
            elif not loop.is_closed():
                asyncio.run_coroutine_threadsafe(last, loop).result()
            else:
                last.close()
            return
        if loop is None or thread is None:
            if last is not None:
                last.close()
            return
        asyncio.run_coroutine_threadsafe(_finish(last), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

    async def aclose(self, last: Coroutine[Any, Any, None] | None = None) -> None:
        """`close` from a running loop: on a process's own store loop (`use_this_loop`), `last` is awaited there."""
        if self._adopted and self.in_loop():
            self._detach()
            if last is not None:
                await last
            return
        self.close(last)

    def _detach(self) -> tuple[asyncio.AbstractEventLoop | None, threading.Thread | None, bool]:
        """Mark the store closed (no call gets through any more); returns the loop, its thread and whether it is
        the process's own, for the closing to finish with."""
        with self._guard:
            detached = self._loop, self._thread, self._adopted
            self._closed = True
            self._loop = self._thread = None
        return detached


_CLOSING: set[asyncio.Task[None]] = set()
"""Closings started by `IoLoop.close` on a process's own loop, kept until they end (a loop holds tasks weakly)."""


async def _finish(last: Coroutine[Any, Any, None] | None) -> None:
    """`last`, then cancel whatever else still runs on the loop (a lock being polled by a caller that went away)."""
    try:
        if last is not None:
            await last
    finally:
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
