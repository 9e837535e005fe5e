"""The store's own event loop, on a thread of its own: every psycopg connection of a `PostgresRunStorage` lives
and is used there.

Why not the caller's loop: a store handle outlives event loops. The CLI reads with `asyncio.run` more than once over
one store, the contract suite drives one handle from several `asyncio.run`s, and the synchronous face (the CLI's
read commands, `SessionService`) is called from plain code and from inside running loops alike. psycopg's async
connections and its pool belong to the loop they were opened on; here that is always this one. Callers on any loop
await the result (`call`), which never blocks their loop; synchronous callers wait for it (`run`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

_T = TypeVar("_T")


class IoLoop:
    """An asyncio loop running on a daemon thread, started on first use, stopped by `close`."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()
        self._closed = False

    def _running(self) -> asyncio.AbstractEventLoop:
        with self._guard:
            if self._closed:
                raise RuntimeError("the store is closed")
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
        return await asyncio.wrap_future(self.submit(work))

    async def call_shielded(self, work: Coroutine[Any, Any, _T]) -> _T:
        """`call`, but cancelling the caller does not stop the work (a lock release must finish)."""
        return await asyncio.shield(asyncio.wrap_future(self.submit(work)))

    def run(self, work: Coroutine[Any, Any, _T]) -> _T:
        """Run `work` on the store's loop and wait for it on this thread (the synchronous face)."""
        if self.in_loop():
            work.close()
            raise RuntimeError("a synchronous store call from the store's own loop would wait for itself")
        return self.submit(work).result()

    def close(self, last: Coroutine[Any, Any, None] | None = None) -> None:
        """Run `last` (closing the connections) on the loop, then stop it and join its thread."""
        with self._guard:
            loop, thread = self._loop, self._thread
            self._closed = True
            self._loop = self._thread = None
        if loop is None or thread is None:
            if last is not None:
                last.close()
            return
        asyncio.run_coroutine_threadsafe(_finish(last), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


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
