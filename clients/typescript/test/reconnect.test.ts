// followRun and the error shape against a small local HTTP server that misbehaves on purpose: it drops the
// connection in the middle of a stream, never gets anywhere, sends a frame that does not decode, or answers errors
// with and without BearAgent's error body. (The live server never drops a connection by itself.)

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";

import {
  BearAgentApiError,
  BearAgentClient,
  StreamDecodeError,
  apiErrorFrom,
  type AgentEvent,
  type StreamFrame,
} from "../src/index.ts";

const RUN = "3f2b6c1e-8d4a-4f5b-9c7e-1a2b3c4d5e6f";

function sse(id: string | null, event: AgentEvent): string {
  return `${id === null ? "" : `id: ${id}\n`}event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

const BEFORE_DROP =
  sse("2-1", { type: "run.started", run_id: RUN, seq: 2 }) +
  sse(null, { type: "token", text: "hel", run_id: RUN, seq: 2, offset: 0 }) +
  sse("5-1", { type: "step", index: 0, kind: "final", run_id: RUN, seq: 5 });
const AFTER_DROP =
  sse("5-2", { type: "final", content: "hello", run_id: RUN, seq: 5 }) +
  sse("5-3", { type: "run.succeeded", run_id: RUN, steps: 1, seq: 5 });

type Handler = (request: IncomingMessage, response: ServerResponse) => void;
let handler: Handler = () => undefined;
const seen: { url: string; lastEventId: string | undefined; authorization: string | undefined }[] = [];
const server = createServer((request, response) => {
  const lastEventId = request.headers["last-event-id"];
  seen.push({
    url: request.url ?? "",
    lastEventId: typeof lastEventId === "string" ? lastEventId : undefined,
    authorization: request.headers.authorization,
  });
  handler(request, response);
});
let client: BearAgentClient;

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  client = new BearAgentClient({ baseUrl: `http://127.0.0.1:${port}/`, token: "t0k" });
});

after(() => {
  server.closeAllConnections();
  server.close();
});

function streamHead(response: ServerResponse): void {
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
}

async function collect(frames: AsyncIterable<StreamFrame>): Promise<StreamFrame[]> {
  const out: StreamFrame[] = [];
  for await (const frame of frames) out.push(frame);
  return out;
}

describe("followRun against a server that drops connections", () => {
  test("reconnects with Last-Event-ID and delivers each event once", async () => {
    seen.length = 0;
    handler = (request, response) => {
      streamHead(response);
      if (request.headers["last-event-id"] === undefined) {
        response.write(BEFORE_DROP, () => setTimeout(() => response.socket?.destroy(), 20));
      } else {
        response.end(AFTER_DROP);
      }
    };
    const frames = await collect(client.followRun(RUN, { reconnectDelayMs: 10 }));
    assert.deepEqual(
      frames.map((f) => [f.id, f.event.type]),
      [
        ["2-1", "run.started"],
        [null, "token"],
        ["5-1", "step"],
        ["5-2", "final"],
        ["5-3", "run.succeeded"],
      ],
    );
    assert.deepEqual(
      seen.map((s) => s.lastEventId),
      [undefined, "5-1"],
    );
    assert.equal(seen[0]?.authorization, "Bearer t0k");
    assert.equal(seen[0]?.url, `/v1/runs/${RUN}/events`);
  });

  test("a stream that ends without the terminal event is followed up too", async () => {
    seen.length = 0;
    handler = (request, response) => {
      streamHead(response);
      response.end(request.headers["last-event-id"] === undefined ? BEFORE_DROP : AFTER_DROP);
    };
    const frames = await collect(client.followRun(RUN, { reconnectDelayMs: 10 }));
    assert.equal(frames.at(-1)?.event.type, "run.succeeded");
    assert.equal(seen.length, 2);
  });

  test("gives up after maxReconnects attempts that bring nothing", async () => {
    seen.length = 0;
    handler = (_request, response) => {
      streamHead(response);
      response.write(": keep-alive\n\n", () => response.socket?.destroy());
    };
    await assert.rejects(
      collect(client.followRun(RUN, { reconnectDelayMs: 5, maxReconnects: 2 })),
      (error: unknown) => error instanceof BearAgentApiError && error.code === "stream.dropped" && error.retryable,
    );
    assert.equal(seen.length, 3);
  });

  test("a frame that does not decode stops it at once (no retry: the producer is wrong)", async () => {
    seen.length = 0;
    handler = (_request, response) => {
      streamHead(response);
      response.end(`id: 2-1\nevent: step\ndata: {"type": "step", "index": 1.0, "kind": "final", "seq": 2}\n\n`);
    };
    await assert.rejects(
      collect(client.followRun(RUN, { reconnectDelayMs: 5 })),
      (error: unknown) => error instanceof StreamDecodeError && error.field === "index",
    );
    assert.equal(seen.length, 1);
  });

  test("a 404 is thrown typed, not retried", async () => {
    seen.length = 0;
    handler = (_request, response) => {
      response.writeHead(404, { "content-type": "application/json" });
      const error = { category: "not_found", code: "not_found.run", message: "there is no run", retryable: false };
      response.end(JSON.stringify({ error }));
    };
    await assert.rejects(
      collect(client.followRun(RUN, { reconnectDelayMs: 5 })),
      (error: unknown) =>
        error instanceof BearAgentApiError &&
        error.status === 404 &&
        error.category === "not_found" &&
        error.code === "not_found.run" &&
        error.message === "there is no run" &&
        !error.retryable,
    );
    assert.equal(seen.length, 1);
  });

  test("a 200 that is not SSE is refused", async () => {
    handler = (_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end("{}");
    };
    await assert.rejects(
      collect(client.streamRunEvents(RUN)),
      (error: unknown) => error instanceof BearAgentApiError && error.code === "http.not_sse",
    );
  });
});

describe("the error shape", () => {
  test("a BearAgent error body, field by field", () => {
    const body = JSON.stringify({
      error: { category: "rate_limit", code: "rate_limit.active_runs", message: "busy", retryable: true },
    });
    const error = apiErrorFrom(429, body);
    assert.deepEqual(
      [error.status, error.category, error.code, error.message, error.retryable],
      [429, "rate_limit", "rate_limit.active_runs", "busy", true],
    );
  });

  test("anything else still becomes a typed error", () => {
    const gateway = apiErrorFrom(502, "<html>bad gateway</html>");
    assert.deepEqual([gateway.category, gateway.code, gateway.retryable], ["internal", "http.502", true]);
    assert.ok(gateway.message.includes("bad gateway"));
    const wrong = apiErrorFrom(400, JSON.stringify({ error: { category: "x", code: 7, message: "m", retryable: false } }));
    assert.deepEqual([wrong.category, wrong.code], ["invalid_request", "http.400"]);
  });
});
