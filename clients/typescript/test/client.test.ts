// The client against a live `bearagent serve` (started by tests/clients/test_typescript_client.py with four
// scripted workspaces: alpha reads a file then answers, beta answers after 4 s, gamma streams its answer slowly,
// delta writes a file, which needs an approval).

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { BearAgentApiError, BearAgentClient, type FeedFrame, type Run, type StreamFrame } from "../src/index.ts";
import { LIVE_SKIP, live } from "./helpers.ts";

const client = new BearAgentClient({ baseUrl: live.baseUrl, token: live.token });

async function collect(frames: AsyncIterable<StreamFrame>, limit = Infinity): Promise<StreamFrame[]> {
  const out: StreamFrame[] = [];
  for await (const frame of frames) {
    out.push(frame);
    if (out.length >= limit) break;
  }
  return out;
}

async function until(runId: string, status: string): Promise<Run> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const run = await client.getRun(runId);
    if (run.status === status) return run;
    assert.ok(Date.now() < deadline && ["queued", "running"].includes(run.status), `${runId} is ${run.status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function rejects(promise: Promise<unknown>, status: number, code: string): Promise<BearAgentApiError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof BearAgentApiError, `expected a BearAgentApiError, got ${String(error)}`);
    assert.equal(error.status, status, error.message);
    assert.equal(error.code, code, error.message);
    assert.equal(typeof error.retryable, "boolean");
    return error;
  }
  assert.fail(`expected ${status} ${code}`);
}

describe("a live bearagent serve", { skip: LIVE_SKIP }, () => {
  test("health, workspaces and the read-only listings", async () => {
    const anonymous = new BearAgentClient({ baseUrl: live.baseUrl });
    assert.equal((await anonymous.health()).status, "ok");
    const workspaces = await client.listWorkspaces();
    assert.deepEqual(
      workspaces.map((w) => w.id),
      ["alpha", "beta", "gamma", "delta"],
    );
    const alpha = workspaces[0];
    assert.ok(alpha !== undefined);
    assert.equal(alpha.name, "Alpha");
    assert.equal(alpha.external_ref, "gh:acme/alpha");
    assert.equal(typeof alpha.root_path, "string"); // the local token has admin
    assert.ok((await client.listAgents("alpha")).some((a) => a.name === "main"));
    assert.ok((await client.listTools("alpha")).some((t) => t.name === "Read"));
    assert.ok(Array.isArray(await client.listSkills("alpha")));
    const actions = await client.listActions("alpha");
    assert.deepEqual(
      actions.map((a) => a.name),
      ["greet"],
    );
  });

  test("a session, a background run, its projection and its log as JSON pages", async () => {
    const session = await client.createSession("alpha", { title: "from typescript" });
    assert.equal(session.title, "from typescript");
    assert.equal(session.workspace_id, "alpha");
    assert.equal((await client.getSession(session.id)).id, session.id);
    assert.ok((await client.listSessions("alpha")).some((s) => s.id === session.id));

    const accepted = await client.createRun(session.id, { prompt: "read the notes" });
    const run = await client.waitForRun(accepted.run_id);
    assert.equal(run.status, "succeeded");
    assert.equal(run.final_text, "first answer");
    assert.equal(run.workspace_id, "alpha");
    assert.equal(run.budgets.max_model_iterations.used, 2);
    assert.equal(run.budgets.max_tool_calls.used, 1);

    const page = await client.listRunEvents(run.run_id);
    const types = page.events.map((e) => e.event_type);
    assert.equal(types[0], "RunCreated");
    assert.equal(types.at(-1), "RunSucceeded");
    assert.equal(page.next, page.events.at(-1)?.sequence);
    const later = await client.listRunEvents(run.run_id, { after: 2 });
    assert.deepEqual(
      later.events.map((e) => e.sequence),
      page.events.slice(2).map((e) => e.sequence),
    );

    const steps = await client.listRunSteps(run.run_id);
    assert.equal(steps.run_id, run.run_id);
    assert.deepEqual(
      steps.steps.map((step) => step.step_type),
      ["model_call", "tool_call", "model_call"],
    );
    assert.equal(steps.steps[1]?.name, "Read");

    const second = await client.createRun(session.id, { prompt: "and again with @notes.md" });
    assert.deepEqual(second.attached, ["notes.md"]); // an @path mention attaches the file, as `bearagent run` does
    assert.deepEqual(accepted.attached, []);
    assert.equal((await client.waitForRun(second.run_id)).final_text, "second answer");
    const messages = await client.listMessages(session.id);
    assert.equal(messages[0]?.role, "user");
    assert.ok(messages.every((m) => m.session_id === session.id));
    assert.deepEqual(
      [...new Set(messages.map((m) => m.run_id))],
      [run.run_id, second.run_id],
    );
  });

  test("SSE: every event type of the run, resumable after any event without gaps or duplicates", async () => {
    const session = await client.createSession("alpha");
    const { run_id } = await client.createRun(session.id, { prompt: "read the notes" });
    await client.waitForRun(run_id);
    const whole = await collect(client.streamRunEvents(run_id));
    const kinds = whole.map((f) => f.event.type);
    assert.equal(kinds[0], "run.started");
    assert.equal(kinds.at(-1), "run.succeeded");
    for (const kind of ["step", "tool_call", "tool_result", "final"]) assert.ok(kinds.includes(kind as never), kind);
    const logged = whole.filter((f) => f.id !== null);
    for (const frame of logged) {
      assert.equal(frame.event.run_id, run_id);
      assert.ok(frame.id?.startsWith(`${frame.event.seq}-`));
    }
    const call = whole.find((f) => f.event.type === "tool_call")?.event;
    assert.ok(call?.type === "tool_call" && call.name === "Read");
    assert.deepEqual(call.arguments, { file_path: "notes.md" });
    const result = whole.find((f) => f.event.type === "tool_result")?.event;
    assert.ok(result?.type === "tool_result" && !result.is_error && result.result.includes("the notes of alpha"));

    for (let cut = 1; cut < logged.length; cut++) {
      const lastEventId = logged[cut - 1]?.id ?? undefined;
      const rest = await collect(client.streamRunEvents(run_id, lastEventId === undefined ? {} : { lastEventId }));
      assert.deepEqual(
        [...logged.slice(0, cut), ...rest.filter((f) => f.id !== null)],
        logged,
        `resumed after ${lastEventId}`,
      );
    }
    const afterLog = await collect(client.streamRunEvents(run_id, { after: logged[0]?.event.seq ?? 0 }));
    assert.ok(afterLog.every((f) => (f.event.seq ?? 0) > (logged[0]?.event.seq ?? 0)));
  });

  test("followRun on a live run: tokens as generated, then picks up again after the caller drops it", async () => {
    const session = await client.createSession("gamma");
    const { run_id } = await client.createRun(session.id, { prompt: "stream it" });
    const controller = new AbortController();
    const first: StreamFrame[] = [];
    try {
      for await (const frame of client.followRun(run_id, { signal: controller.signal })) {
        first.push(frame);
        if (frame.event.type === "token") controller.abort(); // drop the connection in the middle of the answer
      }
      assert.fail("the aborted stream ended normally");
    } catch (error) {
      assert.ok(controller.signal.aborted, String(error));
    }
    const token = first.at(-1)?.event;
    assert.ok(token?.type === "token" && token.run_id === run_id && token.offset === 0);
    assert.equal(typeof token.activity_id, "string");
    const lastEventId = [...first].reverse().find((f) => f.id !== null)?.id ?? undefined;
    assert.ok(lastEventId !== undefined);
    const rest = await collect(client.followRun(run_id, { lastEventId }));
    const end = rest.at(-1)?.event;
    assert.ok(end?.type === "run.succeeded" && end.run_id === run_id);
    const tokens = [...first, ...rest].filter((f) => f.event.type === "token");
    assert.ok(tokens.length >= 2, "the answer streamed in several tokens");
    // Every logged event exactly once across the two connections, as a replay of the finished run shows them.
    const replay = (await collect(client.streamRunEvents(run_id))).filter((f) => f.id !== null);
    assert.deepEqual(
      [...first, ...rest].filter((f) => f.id !== null),
      replay,
    );
    const final = replay.find((f) => f.event.type === "final")?.event;
    assert.ok(final?.type === "final" && final.content === "one two three four five six");
  });

  test("cancel, and the strategies for a second message while a run is active", async () => {
    const session = await client.createSession("beta");
    const slow = await client.createRun(session.id, { prompt: "slowly" });
    const busy = await rejects(
      client.createRun(session.id, { prompt: "now", strategy: "reject" }),
      400,
      "invalid_request.session_busy",
    );
    assert.equal(busy.category, "invalid_request");
    const cancel = await client.cancelRun(slow.run_id);
    assert.equal(cancel.run_id, slow.run_id);
    assert.equal((await client.waitForRun(slow.run_id)).status, "cancelled");
    const events = await collect(client.streamRunEvents(slow.run_id));
    const failed = events.at(-1)?.event;
    assert.ok(failed?.type === "run.failed" && failed.error.code === "cancelled.by_caller");

    const other = await client.createSession("beta");
    const first = await client.createRun(other.id, { prompt: "slowly" });
    const instead = await client.createRun(other.id, { prompt: "instead", strategy: "interrupt" });
    assert.equal((await client.waitForRun(first.run_id)).status, "cancelled");
    assert.equal((await client.waitForRun(instead.run_id)).status, "succeeded");
  });

  test("approvals: a run waits, the approval is listed and answered, the run finishes", async () => {
    const session = await client.createSession("delta");
    const { run_id } = await client.createRun(session.id, { prompt: "write it" });
    const waiting = await until(run_id, "waiting");
    const [approval] = (await client.listApprovals("delta")).filter((a) => a.run_id === run_id);
    assert.ok(approval !== undefined);
    assert.equal(waiting.pending_approval?.["approval_id"], approval.approval_id);
    assert.equal(approval.tool, "Write");
    assert.equal(approval.arguments["file_path"], "out.txt");
    assert.equal(approval.status, "pending");
    assert.ok(approval.choices.includes("allow_once"));
    const reader = new BearAgentClient({ baseUrl: live.baseUrl, token: live.readerToken });
    await rejects(reader.answerApproval(run_id, approval.approval_id, "allow_once"), 403, "permission.scope");
    const answered = await client.answerApproval(run_id, approval.approval_id, "allow_once", { message: "ok" });
    assert.equal(answered.decision, "allow_once");
    assert.equal(typeof answered.continuing, "boolean");
    assert.equal((await client.waitForRun(run_id)).status, "succeeded");
    await rejects(client.answerApproval(run_id, approval.approval_id, "deny"), 409, "conflict.no_pending_approval");
    const history = await client.listRunApprovals(run_id);
    assert.deepEqual(
      history.map((a) => [a.approval_id, a.status, a.decision, a.message]),
      [[approval.approval_id, "answered", "allow_once", "ok"]],
    );
  });

  test("approvals in the stream: answered from the approval.requested event, approval.resolved closes it", async () => {
    const controller = new AbortController();
    const feed: FeedFrame[] = [];
    const watching = (async () => {
      for await (const frame of client.streamWorkspaceEvents("delta", { signal: controller.signal })) {
        feed.push(frame);
        if (frame.kind === "event" && frame.event.type === "approval.resolved") break;
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 300)); // the feed gives what happens from now on
    const session = await client.createSession("delta");
    const { run_id } = await client.createRun(session.id, { prompt: "write it" });
    const seen: StreamFrame[] = [];
    for await (const frame of client.followRun(run_id)) {
      seen.push(frame);
      const event = frame.event;
      if (event.type === "approval.requested") {
        // everything needed to answer is in the event: no listing, no polling
        assert.equal(event.run_id, run_id);
        assert.equal(event.tool_name, "Write");
        assert.equal(event.arguments["file_path"], "out.txt");
        assert.ok(event.choices.includes("allow_once") && event.reason.length > 0);
        assert.equal(frame.id, `${event.seq}-1`);
        await client.answerApproval(run_id, event.approval_id, "allow_once");
      }
    }
    const types = seen.map((f) => f.event.type).filter((t) => t !== "token");
    assert.deepEqual(types, [
      "run.started",
      "step",
      "tool_call",
      "approval.requested",
      "approval.resolved",
      "tool_result",
      "step",
      "final",
      "run.succeeded",
    ]);
    const call = seen.find((f) => f.event.type === "tool_call")?.event;
    const asked = seen.find((f) => f.event.type === "approval.requested")?.event;
    const resolved = seen.find((f) => f.event.type === "approval.resolved")?.event;
    assert.ok(call?.type === "tool_call" && asked?.type === "approval.requested" && resolved?.type === "approval.resolved");
    assert.equal(asked.tool_call_id, call.id);
    assert.equal(resolved.approval_id, asked.approval_id);
    assert.equal(resolved.tool_call_id, call.id);
    assert.equal(resolved.decision, "allow_once");
    assert.equal(resolved.answered_by, "local");
    await watching;
    controller.abort();
    const fromFeed = feed.flatMap((f) => (f.kind === "event" && f.event.run_id === run_id ? [f.event.type] : []));
    assert.ok(fromFeed.includes("approval.requested") && fromFeed.includes("approval.resolved"), fromFeed.join(","));
  });

  test("the workspace feed: every run's events live, resumable, and a reset for an id it does not hold", async () => {
    const controller = new AbortController();
    const frames: FeedFrame[] = [];
    const feed = client.streamWorkspaceEvents("gamma", { signal: controller.signal });
    const reading = (async () => {
      for await (const frame of feed) {
        frames.push(frame);
        if (frame.kind === "event" && frame.event.type === "run.succeeded") break;
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 500)); // the feed gives what happens from now on
    const session = await client.createSession("gamma");
    const { run_id } = await client.createRun(session.id, { prompt: "stream it" });
    await reading;
    controller.abort();
    const events = frames.flatMap((f) => (f.kind === "event" ? [f] : []));
    assert.ok(events.every((f) => f.event.run_id === run_id));
    assert.equal(events[0]?.event.type, "run.started");
    assert.ok(events.some((f) => f.event.type === "token" && f.id === null));
    const logged = events.filter((f) => f.id !== null);
    assert.ok(logged.every((f) => f.id?.startsWith(`${run_id}:${f.event.seq}-`)));

    const resumed: FeedFrame[] = [];
    const again = new AbortController();
    for await (const frame of client.streamWorkspaceEvents("gamma", { lastEventId: logged[0]?.id ?? undefined, signal: again.signal })) {
      resumed.push(frame);
      if (frame.kind === "event" && frame.event.type === "run.succeeded") break;
    }
    again.abort();
    assert.deepEqual(resumed, logged.slice(1));

    const lost = new AbortController();
    for await (const frame of client.streamWorkspaceEvents("gamma", { lastEventId: "not-an-id", signal: lost.signal })) {
      assert.equal(frame.kind, "reset");
      assert.ok(frame.kind === "reset" && frame.lastEventId === "not-an-id" && frame.message.length > 0);
      break;
    }
    lost.abort();
  });

  test("an action run is detached from sessions", async () => {
    const accepted = await client.runAction("alpha", "greet", {});
    const run = await client.waitForRun(accepted.run_id);
    assert.equal(run.trigger_type, "api_action");
    assert.equal(run.session_id, null);
  });

  test("errors arrive typed: 401, 403, 404, 422", async () => {
    await rejects(new BearAgentClient({ baseUrl: live.baseUrl, token: "wrong" }).listWorkspaces(), 401, "authentication.token");
    await rejects(new BearAgentClient({ baseUrl: live.baseUrl }).listWorkspaces(), 401, "authentication.token");
    const reader = new BearAgentClient({ baseUrl: live.baseUrl, token: live.readerToken });
    assert.deepEqual(
      (await reader.listWorkspaces()).map((w) => [w.id, w.root_path]),
      [["alpha", undefined]],
    );
    const denied = await rejects(reader.createSession("alpha"), 403, "permission.scope");
    assert.equal(denied.category, "permission");
    await rejects(reader.getSession("00000000-0000-4000-8000-000000000000"), 404, "not_found.session");
    await rejects(client.getRun("not-a-run"), 404, "not_found.run");
    await rejects(client.createSession("nowhere"), 404, "not_found.workspace");
    const session = await client.createSession("alpha");
    const invalid = await rejects(client.createRun(session.id, { prompt: "" }), 422, "validation.request");
    assert.equal(invalid.category, "validation");
    await rejects(collect(client.streamRunEvents("not-a-run")), 404, "not_found.run");
  });
});
