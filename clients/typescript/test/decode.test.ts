// The decoder against the shared samples (schemas/samples/), the edge-case table both languages read
// (tests/fixtures/stream_edge_cases.json) and Python's own verdicts on all of them; then the SSE frame parser.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  AGENT_EVENT_TYPES,
  SseParser,
  StreamDecodeError,
  decodeEvent,
  decodeFeedFrame,
  decodeFrame,
  describe as describeEvent,
  type AgentEvent,
  type SseFrame,
} from "../src/index.ts";
import { asJson, edgeCases, invalidSamples, pythonVerdicts, sampleLines } from "./helpers.ts";

type Outcome = { verdict: "accept"; decoded: unknown } | { verdict: "reject"; field: string | null; message: string };

function attempt(line: string): Outcome {
  try {
    return { verdict: "accept", decoded: asJson(decodeEvent(line)) };
  } catch (error) {
    assert.ok(error instanceof StreamDecodeError, `not a StreamDecodeError: ${String(error)}`);
    assert.equal(error.code, "validation.stream_event");
    return { verdict: "reject", field: error.field, message: error.message };
  }
}

const VALID = sampleLines("valid.jsonl");
const FORWARD = sampleLines("forward_compat.jsonl");

describe("the shared samples", () => {
  test("valid.jsonl covers every type and each line decodes to itself", () => {
    const types = new Set<string>();
    for (const line of VALID) {
      const event = decodeEvent(line);
      types.add(event.type);
      assert.deepEqual(asJson(event), JSON.parse(line), line);
      assert.ok(describeEvent(event).startsWith(event.type));
    }
    assert.deepEqual([...types].sort(), [...AGENT_EVENT_TYPES].sort());
  });

  test("forward_compat.jsonl: unknown fields are dropped, known ones kept", () => {
    for (const line of FORWARD) {
      const raw = JSON.parse(line) as Record<string, unknown>;
      const event = decodeEvent(line) as unknown as Record<string, unknown>;
      assert.ok(Object.keys(raw).length > Object.keys(event).length, line);
      for (const [key, value] of Object.entries(event)) {
        if (key !== "error") assert.deepEqual(value, raw[key]);
      }
    }
  });

  test("invalid.json: every entry is refused and the error names a field", () => {
    for (const sample of invalidSamples()) {
      const outcome = attempt(JSON.stringify(sample.event));
      assert.equal(outcome.verdict, "reject", sample.why);
      if (outcome.verdict === "reject") assert.ok(outcome.field, `${sample.why}: ${outcome.message}`);
    }
  });

  test("unknown type: the message lists the known types", () => {
    assert.throws(
      () => decodeEvent('{"type": "thinking", "text": "hmm"}'),
      (error: unknown) =>
        error instanceof StreamDecodeError &&
        error.field === "type" &&
        error.message ===
          'unknown stream event type "thinking"; known types: run.started, step, token, tool_call, tool_result, ' +
            "final, run.succeeded, run.failed, agent.switched, subagent.started, subagent.finished, approval.requested, " +
            "approval.resolved, elicitation.requested, elicitation.resolved",
    );
  });
});

describe("the edge-case table (tests/fixtures/stream_edge_cases.json)", () => {
  for (const edge of edgeCases()) {
    test(`${edge.name}: ${edge.verdict}`, () => {
      const outcome = attempt(edge.line);
      assert.equal(outcome.verdict, edge.verdict, `${edge.why}: ${JSON.stringify(outcome).slice(0, 300)}`);
      if (outcome.verdict === "reject") {
        assert.equal(outcome.field, edge.field ?? null, `${edge.why}: ${outcome.message}`);
        if (outcome.field !== null && outcome.field !== "type") assert.ok(outcome.message.includes(`field ${outcome.field}: `));
      } else if (edge.decoded !== undefined) {
        assert.deepEqual(outcome.decoded, edge.decoded, edge.why);
      }
    });
  }
});

describe("the same verdicts as Python", () => {
  const verdicts = pythonVerdicts();
  test(
    "every sample and edge case: accepted or refused alike, the same event or the same field",
    { skip: verdicts === null ? "no BEARAGENT_PY_VERDICTS (set by the pytest test)" : false },
    () => {
      assert.ok(verdicts !== null && verdicts.length > 0);
      const disagreements: string[] = [];
      for (const python of verdicts) {
        const ours = attempt(python.line);
        const same =
          ours.verdict === python.verdict &&
          (ours.verdict === "accept" ? isDeepEqual(ours.decoded, python.decoded) : ours.field === (python.field ?? null));
        if (!same) disagreements.push(`${python.line.slice(0, 160)}\n  python: ${JSON.stringify(python).slice(0, 200)}\n  ts: ${JSON.stringify(ours).slice(0, 200)}`);
      }
      assert.deepEqual(disagreements, [], `${disagreements.length} disagreement(s):\n${disagreements.join("\n")}`);
    },
  );
});

function isDeepEqual(a: unknown, b: unknown): boolean {
  try {
    assert.deepEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

// ---- SSE ------------------------------------------------------------------------------------------------------

const RUN = "3f2b6c1e-8d4a-4f5b-9c7e-1a2b3c4d5e6f";

function parseAll(chunks: string[]): { frames: SseFrame[]; parser: SseParser } {
  const parser = new SseParser();
  const frames = chunks.flatMap((chunk) => parser.push(chunk));
  parser.finish();
  return { frames, parser };
}

describe("SseParser", () => {
  const stream =
    `: keep-alive\n\nid: 2-1\nevent: run.started\ndata: {"type":"run.started","run_id":"${RUN}","seq":2}\n\n` +
    `event: token\ndata: {"type":"token","text":"hi","seq":2}\n\n` +
    `id: 5-1\nevent: final\ndata: {"type":"final","content":"x","seq":5}\n\n`;

  test("frames, ids and comments", () => {
    const { frames, parser } = parseAll([stream]);
    assert.deepEqual(
      frames.map((f) => [f.id, f.event]),
      [
        ["2-1", "run.started"],
        [undefined, "token"],
        ["5-1", "final"],
      ],
    );
    assert.equal(parser.lastEventId, "5-1");
  });

  test("the same frames whatever the chunking and line ends (LF, CR, CRLF)", () => {
    const whole = parseAll([stream]).frames;
    for (const ending of ["\n", "\r", "\r\n"]) {
      const text = stream.replaceAll("\n", ending);
      for (const size of [1, 2, 3, 7, 64]) {
        const chunks: string[] = [];
        for (let i = 0; i < text.length; i += size) chunks.push(text.slice(i, i + size));
        assert.deepEqual(parseAll(chunks).frames, whole, `ending ${JSON.stringify(ending)}, chunks of ${size}`);
      }
    }
  });

  test("data lines join with newlines; no space after the colon is fine; a BOM is skipped", () => {
    const { frames } = parseAll(["\uFEFFevent:x\ndata:a\ndata: b\ndata\n\n"]);
    assert.deepEqual(frames, [{ event: "x", data: "a\nb\n" }]);
  });

  test("a frame without data is not dispatched; an unterminated one is dropped at the end", () => {
    const { frames } = parseAll(["event: token\n\nid: 3-1\n\ndata: {}\n"]);
    assert.deepEqual(frames, []);
  });

  test("the event name defaults to message; retry and unknown fields", () => {
    const { frames, parser } = parseAll(["retry: 1500\nfoo: bar\ndata: 1\n\n"]);
    assert.deepEqual(frames, [{ event: "message", data: "1" }]);
    assert.equal(parser.retry, 1500);
  });
});

describe("decodeFrame", () => {
  const frame = (event: string, data: AgentEvent | string, id?: string): SseFrame => {
    const out: SseFrame = { event, data: typeof data === "string" ? data : JSON.stringify(data) };
    if (id !== undefined) out.id = id;
    return out;
  };

  test("an event with its resume id, a token without", () => {
    const started = decodeFrame(frame("run.started", { type: "run.started", run_id: RUN, seq: 2 }, "2-1"));
    assert.deepEqual(started, { id: "2-1", event: { type: "run.started", run_id: RUN, seq: 2 } });
    assert.equal(decodeFrame(frame("token", { type: "token", text: "x", seq: 2 })).id, null);
  });

  test("the event name must be the data's type", () => {
    assert.throws(
      () => decodeFrame(frame("final", { type: "token", text: "x" })),
      (e: unknown) => e instanceof StreamDecodeError && e.field === "event",
    );
    assert.throws(
      () => decodeFrame(frame("message", { type: "token", text: "x" })),
      (e: unknown) => e instanceof StreamDecodeError && e.field === "event",
    );
  });

  test("the id must be <seq>-<n> of the event's own seq", () => {
    const final = { type: "final", content: "x", seq: 5 } as const;
    assert.equal(decodeFrame(frame("final", final, "5")).id, "5");
    for (const id of ["4-1", "5-0", "05-1", "x", "5-1-1", ""]) {
      assert.throws(
        () => decodeFrame(frame("final", final, id)),
        (e: unknown) => e instanceof StreamDecodeError && e.field === "id",
        id,
      );
    }
    assert.throws(
      () => decodeFrame(frame("final", { type: "final", content: "x" }, "5-1")),
      (e: unknown) => e instanceof StreamDecodeError && e.field === "id",
    );
  });

  test("the data goes through decodeEvent", () => {
    assert.throws(
      () => decodeFrame(frame("step", '{"type": "step", "index": 1.0, "kind": "final"}')),
      (e: unknown) => e instanceof StreamDecodeError && e.field === "index",
    );
  });
});

describe("decodeFeedFrame", () => {
  const CHILD = "7a1c9e2d-5b3f-4e8a-8d6c-0f1e2d3c4b5a";
  const started = { type: "subagent.started", run_id: CHILD, parent_run_id: RUN, agent: "explore", seq: 9 } as const;

  test("ids name the run whose log the event comes from: the parent's for subagent.*", () => {
    const final = { type: "final", content: "x", run_id: RUN, seq: 5 } as const;
    const ok = decodeFeedFrame({ id: `${RUN}:5-2`, event: "final", data: JSON.stringify(final) });
    assert.deepEqual(ok, { kind: "event", id: `${RUN}:5-2`, event: final });
    const child = decodeFeedFrame({ id: `${RUN}:9-1`, event: "subagent.started", data: JSON.stringify(started) });
    assert.equal(child.kind === "event" && child.event.type, "subagent.started");
    for (const id of [`${CHILD}:9-1`, `${RUN}:8-1`, `${RUN}:9`, "9-1", `${RUN.toUpperCase()}:9-1`]) {
      assert.throws(
        () => decodeFeedFrame({ id, event: "subagent.started", data: JSON.stringify(started) }),
        (e: unknown) => e instanceof StreamDecodeError && e.field === "id",
        id,
      );
    }
  });

  test("feed.reset is read field by field", () => {
    const data = { type: "feed.reset", last_event_id: "x", oldest_event_id: null, message: "reload" };
    assert.deepEqual(decodeFeedFrame({ event: "feed.reset", data: JSON.stringify(data) }), {
      kind: "reset",
      lastEventId: "x",
      oldestEventId: null,
      message: "reload",
    });
    for (const bad of [{ ...data, message: 5 }, { ...data, type: "other" }, [], "x"]) {
      assert.throws(
        () => decodeFeedFrame({ event: "feed.reset", data: JSON.stringify(bad) }),
        (e: unknown) => e instanceof StreamDecodeError && e.field === "data",
      );
    }
  });
});
