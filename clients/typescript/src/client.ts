// A small typed client for `bearagent serve` (SPEC §16, docs/server.md): fetch-based, no dependencies, for Node >= 20
// and browsers. Every method is one route; errors come back as `BearAgentApiError` with the server's
// `{error: {category, code, message, retryable}}` and the HTTP status. Run events arrive either as JSON pages of the
// stored log (`listRunEvents`) or as the live stream protocol over SSE (`streamRunEvents`, one connection;
// `followRun`, which reconnects with `Last-Event-ID` until the run's terminal event), decoded by decode.ts.

import {
  SseParser,
  decodeFeedFrame,
  decodeFrame,
  type FeedFrame,
  type SseFrame,
  type StreamFrame,
} from "./decode.ts";
import { isTerminal, type ApprovalDecision } from "./stream.ts";

// ---- what the routes return -----------------------------------------------------------------------------------

export type JsonObject = { [key: string]: unknown };

export interface Health {
  status: string;
  workspaces: number;
}

export interface Workspace {
  id: string;
  name: string;
  kind: string;
  status: string;
  external_ref: string | null;
  execution_policy: JsonObject;
  metadata: JsonObject;
  created_at: string;
  updated_at: string;
  /** Only with the `admin` scope. */
  root_path?: string;
}

export interface Session {
  id: string;
  workspace_id: string;
  subject_ref: string | null;
  agent: string | null;
  active_agent: string | null;
  title: string | null;
  status: string;
  created_at: string;
  updated_at: string;
  last_run_at: string;
}

export type RunStatus = "queued" | "running" | "waiting" | "interrupted" | "succeeded" | "failed" | "cancelled";

export interface ErrorInfo {
  category: string;
  code: string;
  message: string;
  retryable: boolean;
  retry_after_s?: number | null;
  details?: JsonObject;
}

export interface BudgetUse {
  limit: number;
  used: number;
}

/** `GET /v1/runs/{id}`: the run projection, its workspace and usage against every budget. */
export interface Run {
  run_id: string;
  session_id: string | null;
  parent_run_id: string | null;
  workspace_id: string;
  status: RunStatus;
  trigger_type: string;
  agent_name: string | null;
  effective_agent_name: string | null;
  goal: string | null;
  final_text: string | null;
  error: ErrorInfo | null;
  stop_reason: string | null;
  last_sequence: number;
  switch_count: number;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
  usage: {
    model_iterations: number;
    tool_calls: number;
    input_tokens: number;
    output_tokens: number;
    cost_microusd: number;
    wall_time_ms: number;
  };
  budget_limits: Record<BudgetName, number>;
  budgets: Record<BudgetName, BudgetUse>;
  pending_approval: JsonObject | null;
  [more: string]: unknown;
}

export type BudgetName =
  | "max_model_iterations"
  | "max_tool_calls"
  | "max_tokens"
  | "max_cost_microusd"
  | "max_wall_time_ms";

export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ["succeeded", "failed", "cancelled"];

export interface RunAccepted {
  run_id: string;
  status: string;
  /** The paths the prompt's `@path` mentions attached (`createRun`), in order. */
  attached: string[];
  /** What to tell the user about the mentions (a file cut to its bound, a path sent as text). */
  notes: string[];
}

export interface CancelResult {
  run_id: string;
  /** Whether this server was executing the run and asked it to stop. */
  cancelling: boolean;
  status: string;
}

/** One stored event of a run's log (`bearagent events RUN --json` has the same envelope). */
export interface StoredEvent {
  event_id: string;
  run_id: string;
  sequence: number;
  event_type: string;
  schema_version: number;
  occurred_at: string;
  causation_id: string | null;
  correlation_id: string | null;
  payload: JsonObject;
}

export interface EventsPage {
  events: StoredEvent[];
  /** Pass as `after` for the next page (the last sequence of this one). */
  next: number;
}

export interface ActionInfo {
  name: string;
  description: string;
  agent: string | null;
  inputs: JsonObject;
}

export interface AgentInfo {
  name: string;
  description: string;
  mode: string;
  level: string;
}

export interface SkillInfo {
  name: string;
  description: string;
}

export interface ToolInfo {
  name: string;
  description: string;
  side_effect: string;
}

export type Strategy = "enqueue" | "reject" | "interrupt";

/** An approval a run asked for (`GET /v1/runs/{id}/approvals`, `GET /v1/workspaces/{ws}/approvals`). */
export interface Approval {
  run_id: string;
  session_id: string | null;
  approval_id: string;
  tool_call_id: string | null;
  tool: string | null;
  arguments: JsonObject;
  reason: string;
  suggested_rule: string | null;
  choices: ApprovalDecision[];
  requested_at: string;
  status: "pending" | "answered";
  decision: ApprovalDecision | null;
  answered_by: string | null;
  answered_at: string | null;
  message: string | null;
}

export interface ApprovalAnswered {
  run_id: string;
  approval_id: string;
  decision: ApprovalDecision;
  answered_by: string;
  /** True when this server continues the run now (false: another process holds it). */
  continuing: boolean;
  status: string;
}

/** A session message as a record (`GET /v1/sessions/{id}/messages`); `content` parts are `text`, `tool-call`, `tool-result`. */
export interface MessageRecord {
  id: string;
  session_id: string;
  run_id: string;
  role: string;
  content: JsonObject[];
  metadata: JsonObject;
  created_at: string;
}

/** One step of a run for diagnosis and display (`GET /v1/runs/{id}/steps`). */
export interface RunStep {
  id: string;
  run_id: string;
  seq: number;
  step_type: "model_call" | "tool_call" | "agent_switch" | "agent_delegate" | string;
  name: string;
  agent_name: string | null;
  status: string;
  input: JsonObject;
  output: JsonObject | null;
  started_at: string | null;
  ended_at: string | null;
  started_seq: number;
  ended_seq: number | null;
}

export interface RunSteps {
  run_id: string;
  status: RunStatus;
  steps: RunStep[];
}

export interface RunCreate {
  prompt: string;
  agent?: string | undefined;
  model?: string | undefined;
  /** Budget limits by name (`max_tool_calls`, …), integers. */
  budgets?: Partial<Record<BudgetName, number>> | undefined;
  /** What happens when the session has an active run: wait (`enqueue`, default), 400 (`reject`), cancel it. */
  strategy?: Strategy | undefined;
  /** A tool call that needs approval makes the run wait for an answer over HTTP (default true). */
  wait_approvals?: boolean | undefined;
  /** Attach the files the prompt's `@path` words name, as `bearagent run` does (default true); false: as typed. */
  mentions?: boolean | undefined;
}

// ---- errors ---------------------------------------------------------------------------------------------------

/** A non-2xx answer: the server's error object plus the HTTP status. */
export class BearAgentApiError extends Error {
  readonly status: number;
  readonly category: string;
  readonly code: string;
  readonly retryable: boolean;

  constructor(status: number, category: string, code: string, message: string, retryable: boolean) {
    super(message);
    this.name = "BearAgentApiError";
    this.status = status;
    this.category = category;
    this.code = code;
    this.retryable = retryable;
  }
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The error of a response body, read field by field; a body not of that shape still becomes a typed error. */
export function apiErrorFrom(status: number, body: string): BearAgentApiError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const error = isObject(parsed) ? parsed["error"] : undefined;
  if (isObject(error)) {
    const { category, code, message, retryable } = error;
    if (
      typeof category === "string" &&
      typeof code === "string" &&
      typeof message === "string" &&
      typeof retryable === "boolean"
    ) {
      return new BearAgentApiError(status, category, code, message, retryable);
    }
  }
  const text = body.length > 200 ? `${body.slice(0, 200)}…` : body;
  return new BearAgentApiError(
    status,
    status >= 500 ? "internal" : "invalid_request",
    `http.${status}`,
    `HTTP ${status} without a BearAgent error body: ${text}`,
    status === 502 || status === 503 || status === 504,
  );
}

// ---- the client -----------------------------------------------------------------------------------------------

export interface ClientOptions {
  /** e.g. `http://127.0.0.1:8765` (the line `serving … on URL` of `bearagent serve`). */
  baseUrl: string;
  /** The bearer token: the server's local token (`token: …` at start, or BEARAGENT_SERVE_TOKEN) or a gateway JWT. */
  token?: string | undefined;
  /** Another fetch (tests, proxies); the global one by default. */
  fetch?: typeof fetch | undefined;
}

export interface StreamOptions {
  /** Resume after this SSE id (`<seq>-<n>` of the last frame you have); sent as `Last-Event-ID`. */
  lastEventId?: string | undefined;
  /** Start after log sequence N instead (`?after=N`); ignored when `lastEventId` is set. */
  after?: number | undefined;
  signal?: AbortSignal | undefined;
}

export interface FollowOptions extends StreamOptions {
  /** Reconnections in a row without a new event before giving up (default 5). */
  maxReconnects?: number | undefined;
  /** Pause before each reconnection, in ms (default 250; at least 1 s after a 429). */
  reconnectDelayMs?: number | undefined;
}

type Query = Record<string, string | number | undefined>;

export class BearAgentClient {
  readonly baseUrl: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  // -- workspaces and listings --

  /** `GET /health` (no token needed). */
  async health(): Promise<Health> {
    return (await this.#json("GET", "/health")) as unknown as Health;
  }

  /** `GET /v1/workspaces`: the workspaces this caller may see. */
  async listWorkspaces(): Promise<Workspace[]> {
    return this.#list<Workspace>(await this.#json("GET", "/v1/workspaces"), "workspaces");
  }

  /** `GET /v1/workspaces/{ws}/agents`. */
  async listAgents(workspace: string): Promise<AgentInfo[]> {
    return this.#list<AgentInfo>(await this.#json("GET", `/v1/workspaces/${seg(workspace)}/agents`), "agents");
  }

  /** `GET /v1/workspaces/{ws}/skills`. */
  async listSkills(workspace: string): Promise<SkillInfo[]> {
    return this.#list<SkillInfo>(await this.#json("GET", `/v1/workspaces/${seg(workspace)}/skills`), "skills");
  }

  /** `GET /v1/workspaces/{ws}/tools`. */
  async listTools(workspace: string): Promise<ToolInfo[]> {
    return this.#list<ToolInfo>(await this.#json("GET", `/v1/workspaces/${seg(workspace)}/tools`), "tools");
  }

  /** `GET /v1/workspaces/{ws}/actions`: actions with their input schemas. */
  async listActions(workspace: string): Promise<ActionInfo[]> {
    return this.#list<ActionInfo>(await this.#json("GET", `/v1/workspaces/${seg(workspace)}/actions`), "actions");
  }

  /** `POST /v1/workspaces/{ws}/actions/{name}/runs`: a detached run (`trigger_type=api_action`); `202`. */
  async runAction(workspace: string, name: string, inputs: JsonObject = {}): Promise<RunAccepted> {
    const path = `/v1/workspaces/${seg(workspace)}/actions/${seg(name)}/runs`;
    return accepted(await this.#json("POST", path, { body: { inputs } }));
  }

  // -- sessions --

  /** `POST /v1/workspaces/{ws}/sessions`: `201` with the new session. */
  async createSession(workspace: string, options: { agent?: string | undefined; title?: string | undefined } = {}): Promise<Session> {
    const body: JsonObject = {};
    if (options.agent !== undefined) body["agent"] = options.agent;
    if (options.title !== undefined) body["title"] = options.title;
    const path = `/v1/workspaces/${seg(workspace)}/sessions`;
    return withId<Session>(await this.#json("POST", path, { body }), "id", "session");
  }

  /** `GET /v1/workspaces/{ws}/sessions`: the caller's sessions there (everyone's with `admin`). */
  async listSessions(workspace: string): Promise<Session[]> {
    return this.#list<Session>(await this.#json("GET", `/v1/workspaces/${seg(workspace)}/sessions`), "sessions");
  }

  /** `GET /v1/sessions/{id}`. */
  async getSession(sessionId: string): Promise<Session> {
    return withId<Session>(await this.#json("GET", `/v1/sessions/${seg(sessionId)}`), "id", "session");
  }

  /** `GET /v1/sessions/{id}/messages`: the conversation as message records, oldest first. */
  async listMessages(sessionId: string): Promise<MessageRecord[]> {
    return this.#list<MessageRecord>(await this.#json("GET", `/v1/sessions/${seg(sessionId)}/messages`), "messages");
  }

  // -- runs --

  /** `POST /v1/sessions/{id}/runs`: `202 {run_id, status, attached, notes}` as soon as the run is recorded; it runs in
   * the background. */
  async createRun(sessionId: string, run: RunCreate): Promise<RunAccepted> {
    const body: JsonObject = { prompt: run.prompt };
    if (run.agent !== undefined) body["agent"] = run.agent;
    if (run.model !== undefined) body["model"] = run.model;
    if (run.budgets !== undefined) body["budgets"] = run.budgets;
    if (run.strategy !== undefined) body["strategy"] = run.strategy;
    if (run.wait_approvals !== undefined) body["wait_approvals"] = run.wait_approvals;
    if (run.mentions !== undefined) body["mentions"] = run.mentions;
    return accepted(await this.#json("POST", `/v1/sessions/${seg(sessionId)}/runs`, { body }));
  }

  /** `GET /v1/runs/{id}`: the projection plus `workspace_id` and `budgets: {name: {limit, used}}`. */
  async getRun(runId: string): Promise<Run> {
    return withId<Run>(await this.#json("GET", `/v1/runs/${seg(runId)}`), "run_id", "run");
  }

  /** `GET /v1/runs/{id}/steps`: model calls, tool calls, delegations and agent switches, from the log. */
  async listRunSteps(runId: string): Promise<RunSteps> {
    const body = await this.#json("GET", `/v1/runs/${seg(runId)}/steps`);
    const steps = this.#list<RunStep>(body, "steps");
    return { ...withId<Omit<RunSteps, "steps">>(body, "run_id", "steps"), steps };
  }

  // -- approvals --

  /** `GET /v1/workspaces/{ws}/approvals`: what the caller's waiting runs there wait for, oldest first. */
  async listApprovals(workspace: string): Promise<Approval[]> {
    return this.#list<Approval>(await this.#json("GET", `/v1/workspaces/${seg(workspace)}/approvals`), "approvals");
  }

  /** `GET /v1/runs/{id}/approvals`: every approval the run asked for, with its answer. */
  async listRunApprovals(runId: string): Promise<Approval[]> {
    return this.#list<Approval>(await this.#json("GET", `/v1/runs/${seg(runId)}/approvals`), "approvals");
  }

  /**
   * `POST /v1/runs/{id}/approvals/{approval_id}` (needs `approvals:write`): answer once; the run continues in the
   * background. A second or late answer is a 409 `conflict.*`.
   */
  async answerApproval(
    runId: string,
    approvalId: string,
    decision: ApprovalDecision,
    options: { message?: string | undefined } = {},
  ): Promise<ApprovalAnswered> {
    const body: JsonObject = { decision };
    if (options.message !== undefined) body["message"] = options.message;
    const path = `/v1/runs/${seg(runId)}/approvals/${seg(approvalId)}`;
    return withId<ApprovalAnswered>(await this.#json("POST", path, { body }), "run_id", "approval answer");
  }

  /** `POST /v1/runs/{id}/cancel` (`202`); the run ends `cancelled`. */
  async cancelRun(runId: string): Promise<CancelResult> {
    return withId<CancelResult>(await this.#json("POST", `/v1/runs/${seg(runId)}/cancel`), "run_id", "cancel");
  }

  /** Poll `getRun` until the run has ended (or `timeoutMs` passed: a `BearAgentApiError` `timeout.wait`). */
  async waitForRun(runId: string, options: { timeoutMs?: number | undefined; intervalMs?: number | undefined } = {}): Promise<Run> {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    for (;;) {
      const run = await this.getRun(runId);
      if (TERMINAL_RUN_STATUSES.includes(run.status)) return run;
      if (Date.now() > deadline) {
        throw new BearAgentApiError(0, "timeout", "timeout.wait", `run ${runId} is still ${run.status}`, true);
      }
      await sleep(options.intervalMs ?? 100);
    }
  }

  /** `GET /v1/runs/{id}/events?after=N`: one page (up to 1,000) of the stored log after sequence N. */
  async listRunEvents(runId: string, options: { after?: number | undefined } = {}): Promise<EventsPage> {
    const body = await this.#json("GET", `/v1/runs/${seg(runId)}/events`, { query: { after: options.after } });
    const events = this.#list<StoredEvent>(body, "events");
    const next = body["next"];
    if (typeof next !== "number") throw shapeError("events page", "next");
    return { events, next };
  }

  /**
   * `GET /v1/runs/{id}/events` as SSE: the run's stream-protocol events, caught up from the log, then live (tokens
   * included), ending after the terminal event. One connection: if it drops, the iteration throws or ends early;
   * resume with the last frame's `id` as `lastEventId` (or use `followRun`). Every frame is checked by `decodeFrame`.
   */
  async *streamRunEvents(runId: string, options: StreamOptions = {}): AsyncGenerator<StreamFrame, void, undefined> {
    const query: Query = options.lastEventId === undefined ? { after: options.after } : {};
    yield* this.#sse(`/v1/runs/${seg(runId)}/events`, query, options, decodeFrame);
  }

  /**
   * `GET /v1/workspaces/{ws}/events`: every run of the workspace the caller may see, live, as one SSE stream (from
   * now on; tokens included). Frame ids are `<run_id>:<seq>-<n>`: reconnect with the last one as `lastEventId` to get
   * every later frame once. When the server no longer holds that id the stream starts with a `reset` frame: reload
   * what you show from the run routes. Frames are checked by `decodeFeedFrame`.
   */
  async *streamWorkspaceEvents(
    workspace: string,
    options: { lastEventId?: string | undefined; signal?: AbortSignal | undefined } = {},
  ): AsyncGenerator<FeedFrame, void, undefined> {
    yield* this.#sse(`/v1/workspaces/${seg(workspace)}/events`, {}, options, decodeFeedFrame);
  }

  async *#sse<T>(
    path: string,
    query: Query,
    options: { lastEventId?: string | undefined; signal?: AbortSignal | undefined },
    decode: (frame: SseFrame) => T,
  ): AsyncGenerator<T, void, undefined> {
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (options.lastEventId !== undefined) headers["last-event-id"] = options.lastEventId;
    const controller = new AbortController();
    const outer = options.signal;
    const abort = (): void => controller.abort(outer?.reason);
    if (outer?.aborted) abort();
    outer?.addEventListener("abort", abort, { once: true });
    try {
      const response = await this.#send("GET", path, { query, headers, signal: controller.signal });
      const type = response.headers.get("content-type") ?? "";
      if (!type.startsWith("text/event-stream") || response.body === null) {
        throw new BearAgentApiError(response.status, "invalid_request", "http.not_sse", `not an SSE response (${type})`, false);
      }
      const parser = new SseParser();
      const decoder = new TextDecoder();
      const reader = response.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (const frame of parser.push(decoder.decode(value, { stream: true }))) yield decode(frame);
        }
        for (const frame of parser.push(decoder.decode())) yield decode(frame);
        parser.finish();
      } finally {
        await reader.cancel().catch(() => undefined);
      }
    } finally {
      outer?.removeEventListener("abort", abort);
      controller.abort();
    }
  }

  /**
   * The run's events until its terminal event (`run.succeeded`/`run.failed` of this run), reconnecting with
   * `Last-Event-ID` when the connection drops: every event from the log arrives exactly once; tokens generated while
   * disconnected are not replayed (a token's `offset` shows where the text resumes). Gives up after `maxReconnects`
   * failed attempts in a row; an HTTP error that is not retryable, a decode error or an abort is thrown at once.
   */
  async *followRun(runId: string, options: FollowOptions = {}): AsyncGenerator<StreamFrame, void, undefined> {
    let lastEventId = options.lastEventId;
    let failures = 0;
    const maxReconnects = options.maxReconnects ?? 5;
    for (;;) {
      let lastError: unknown = null;
      const attempt: StreamOptions = {};
      if (lastEventId !== undefined) attempt.lastEventId = lastEventId;
      else if (options.after !== undefined) attempt.after = options.after;
      if (options.signal !== undefined) attempt.signal = options.signal;
      let delay = options.reconnectDelayMs ?? 250;
      try {
        for await (const frame of this.streamRunEvents(runId, attempt)) {
          failures = 0;
          if (frame.id !== null) lastEventId = frame.id;
          yield frame;
          if (isTerminal(frame.event, runId)) return;
        }
      } catch (error) {
        if (options.signal?.aborted || !isRetryable(error)) throw error;
        lastError = error;
      }
      if (++failures > maxReconnects) {
        const why = lastError instanceof Error ? `: ${lastError.message}` : " before the run's terminal event";
        throw new BearAgentApiError(0, "unavailable", "stream.dropped", `the event stream of ${runId} dropped${why}`, true);
      }
      if (lastError instanceof BearAgentApiError && lastError.status === 429) delay = Math.max(delay, 1_000);
      await sleep(delay, options.signal);
    }
  }

  // -- plumbing --

  async #send(
    method: string,
    path: string,
    options: { body?: unknown; query?: Query; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const url = new URL(this.baseUrl + path);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const headers: Record<string, string> = { accept: "application/json", ...options.headers };
    if (this.#token !== undefined) headers["authorization"] = `Bearer ${this.#token}`;
    const init: RequestInit = { method, headers };
    if (options.body !== undefined) {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(options.body);
    }
    if (options.signal !== undefined) init.signal = options.signal;
    const response = await this.#fetch(url, init);
    if (!response.ok) throw apiErrorFrom(response.status, await response.text());
    return response;
  }

  async #json(method: string, path: string, options: { body?: unknown; query?: Query } = {}): Promise<JsonObject> {
    const response = await this.#send(method, path, options);
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new BearAgentApiError(response.status, "internal", "http.not_json", `${method} ${path}: not JSON`, false);
    }
    if (!isObject(parsed)) throw shapeError(`${method} ${path}`, "(a JSON object)");
    return parsed;
  }

  // The REST bodies are checked for the shape the types rely on (an object, its list, ids); their other fields are
  // typed as the server documents them. The live stream, the part a UI renders as it comes, is checked field by field.
  #list<T>(body: JsonObject, key: string): T[] {
    const items = body[key];
    if (!Array.isArray(items) || !items.every(isObject)) throw shapeError(key, key);
    return items as unknown as T[];
  }
}

function accepted(body: JsonObject): RunAccepted {
  const { run_id, status, attached, notes } = body;
  if (typeof run_id !== "string") throw shapeError("run accepted", "run_id");
  const strings = (value: unknown): string[] =>
    Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
  return { run_id, status: typeof status === "string" ? status : "running", attached: strings(attached), notes: strings(notes) };
}

function withId<T>(body: JsonObject, key: string, what: string): T {
  if (typeof body[key] !== "string") throw shapeError(what, key);
  return body as unknown as T;
}

function shapeError(what: string, field: string): BearAgentApiError {
  return new BearAgentApiError(0, "internal", "http.unexpected_body", `${what}: the response has no valid ${field}`, false);
}

function seg(value: string): string {
  return encodeURIComponent(value);
}

function isRetryable(error: unknown): boolean {
  if (error instanceof BearAgentApiError) return error.retryable || error.status >= 500;
  if (error instanceof Error && error.name === "StreamDecodeError") return false;
  return error instanceof TypeError || (error instanceof Error && error.name !== "AbortError");
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
