"""The event routes: one run's events (a JSON page, or SSE) and the workspace feed (SSE of every run).

A run's SSE stream: its stream-protocol events (SPEC §14), caught up from the log and then live (tokens included)
until the terminal event. Each committed event's `id:` is `<log sequence>-<n>` (one log event can make several
stream events); a client that reconnects with that `Last-Event-ID` gets every later event exactly once. Tokens are
live only and carry no id. The feed's ids and resume rules are `feed.py`'s. Limits and keep-alives: `sse.py`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import FastAPI, Header, Request
from fastapi.responses import Response

from bearagent.domain.ids import RunId
from bearagent.domain.stream import encode_stream_event
from bearagent.runner import WorkspaceRuntime
from bearagent.runtime.streaming import follow_run
from bearagent.server.access import Access, Caller
from bearagent.server.auth import CallerContext
from bearagent.server.feed import FeedFrame, Feeds, FeedSubscription
from bearagent.server.shapes import SKIP_ALL, event_json, resume_point
from bearagent.server.sse import KEEPALIVE, Beat, Paced, SlotStream, StreamSlots, frame


async def run_frames(runtime: WorkspaceRuntime, run_id: RunId, resume: str, idle_s: float) -> AsyncIterator[bytes]:
    seq, skip = resume_point(resume)
    events = follow_run(runtime.store, runtime.writer, run_id, after_seq=max(seq - 1, 0))
    current, index = 0, 0
    async for event in Paced(events, idle_s=idle_s):
        if isinstance(event, Beat):
            yield KEEPALIVE
            continue
        kind = str(getattr(event, "type", "message"))
        data = encode_stream_event(event)
        if kind == "token" or event.seq is None:
            yield frame(kind, data)
            continue
        index = index + 1 if event.seq == current else 1
        current = event.seq
        if current == seq and index <= skip:
            continue  # delivered before the reconnect
        yield frame(kind, data, f"{current}-{index}")


async def feed_frames(
    access: Access, who: CallerContext, runtime: WorkspaceRuntime, sub: FeedSubscription, idle_s: float
) -> AsyncIterator[bytes]:
    """The feed's frames the caller may see: the runs it may see (`Access.may_see`, decided once per run)."""
    allowed: dict[RunId, bool] = {}

    async def visible(run_id: RunId) -> bool:
        if who.has("admin"):
            return True
        if run_id not in allowed:
            run = await runtime.store.fetch_run(run_id)
            allowed[run_id] = run is not None and await access.may_see(who, runtime, run)
        return allowed[run_id]

    async def frames() -> AsyncIterator[FeedFrame]:
        try:
            for item in sub.backlog:
                if item.run_id is None or await visible(item.run_id):
                    yield item
            while True:
                item = await sub.queue.get()
                if item is None:
                    return  # the feed closed this connection (too slow, or shutting down)
                if item.run_id is None or await visible(item.run_id):
                    yield item
        finally:
            sub.close()

    async for item in Paced(frames(), idle_s=idle_s):
        if isinstance(item, Beat):
            yield KEEPALIVE
        else:
            yield frame(item.kind, item.data, item.frame_id)


def register(app: FastAPI, access: Access, feeds: Feeds, slots: StreamSlots, *, idle_s: float) -> None:
    @app.get("/v1/runs/{run_id}/events", response_model=None)
    async def run_events(  # pyright: ignore[reportUnusedFunction]
        run_id: str,
        who: Caller,
        request: Request,
        after: int = 0,
        last_event_id: Annotated[str | None, Header()] = None,
    ) -> Response | dict[str, object]:
        """The run's stored events after sequence `after` as JSON pages (1,000 each), or with `Accept:
        text/event-stream` its stream-protocol events as SSE, resumable with `Last-Event-ID`."""
        access.need(who, "runs:read")
        _, runtime, run = await access.find_run(who, run_id)
        accept = request.headers.get("accept", "")
        if "text/event-stream" not in accept:
            events = await runtime.store.fetch_events(run.run_id, after, limit=1000)
            return {"events": [event_json(e) for e in events], "next": events[-1].sequence if events else after}
        release = slots.take(who.subject_ref)
        resume = last_event_id or (f"{after}-{SKIP_ALL}" if after > 0 else "")
        return SlotStream(run_frames(runtime, run.run_id, resume, idle_s), release)

    @app.get("/v1/workspaces/{ws_id}/events", response_model=None)
    async def workspace_events(  # pyright: ignore[reportUnusedFunction]
        ws_id: str, who: Caller, last_event_id: Annotated[str | None, Header()] = None
    ) -> Response:
        """SSE of every run of the workspace the caller may see, live; ids `<run_id>:<seq>-<n>`, resumable with
        `Last-Event-ID` (a `feed.reset` frame first when the feed no longer holds that id)."""
        access.need(who, "runs:read")
        ws = access.workspace(who, ws_id)
        runtime = access.runtime_for(who, ws)
        release = slots.take(who.subject_ref)
        try:
            feed = await feeds.feed(ws.id)
        except BaseException:
            release()
            raise
        sub = feed.subscribe(last_event_id)

        def done() -> None:
            sub.close()
            release()

        return SlotStream(feed_frames(access, who, runtime, sub, idle_s), done)
