// The BearAgent live stream protocol (SPEC §14, docs/stream-protocol.md): the TypeScript twin of
// src/bearagent/domain/stream.py. One JSON object per event (an SSE `data:` payload or a `--stream-json` line),
// discriminated by `type`. Decoding untrusted text into these types is decode.ts; this file only says what they are.
//
// Protocol 2 adds, all optional so protocol-1 lines still decode: `seq` on every event (the sequence of the run's
// log event it comes from; several stream events of one log event share it), `run_id` on the events that did not
// carry one (a child run's events name the child), and `activity_id` + `offset` on `token`. An unset optional field
// is absent, never `undefined` or `null` (the compiler enforces it with exactOptionalPropertyTypes).
//
// Protocol 3 adds the types `approval.requested` (a tool call waits for someone's answer) and `approval.resolved`
// (the answer); a protocol-2 decoder refuses them as unknown types. Protocol 4 adds `elicitation.requested` (an MCP
// server asks the user a question in the middle of a tool call) and `elicitation.resolved` (its answer).
//
// Compatibility: a `type` is never renamed or removed; fields are only added, as optional; a decoder ignores fields
// it does not know. A new `type` makes `describe` below stop compiling until its branch is written.

export const PROTOCOL_VERSION = 4;

/** The largest value of an integer field (`seq`, `index`, `offset`, `steps`): Number.MAX_SAFE_INTEGER. */
export const MAX_STREAM_INT = 9007199254740991;

/** Present on every event: where it comes from in the run's log (protocol 2). */
export interface Position {
  /** Integer >= 1: the sequence of the log event this stream event comes from. */
  seq?: number;
}

/** The public part of a run's error; `category` is open (a newer server may add categories). */
export interface StreamError {
  category: string;
  code: string;
  message: string;
  retryable: boolean;
}

export interface RunStarted extends Position {
  type: "run.started";
  run_id: string;
}

export interface Step extends Position {
  type: "step";
  /** Integer >= 0. */
  index: number;
  kind: "tool_call" | "final";
  run_id?: string;
}

export interface Token extends Position {
  type: "token";
  text: string;
  run_id?: string;
  /** The model call (activity) the text belongs to. */
  activity_id?: string;
  /** Integer >= 0: the characters (code points) of that call's text before this piece. */
  offset?: number;
}

export interface ToolCall extends Position {
  type: "tool_call";
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  run_id?: string;
}

export interface ToolResult extends Position {
  type: "tool_result";
  id: string;
  name: string;
  result: string;
  is_error: boolean;
  run_id?: string;
}

export interface Final extends Position {
  type: "final";
  content: string;
  run_id?: string;
}

export interface RunSucceeded extends Position {
  type: "run.succeeded";
  run_id: string;
  /** Integer >= 0. */
  steps: number;
}

export interface RunFailed extends Position {
  type: "run.failed";
  run_id: string;
  error: StreamError;
}

export interface AgentSwitched extends Position {
  type: "agent.switched";
  run_id: string;
  from_agent: string;
  to_agent: string;
}

export interface SubagentStarted extends Position {
  type: "subagent.started";
  /** The child run's id. */
  run_id: string;
  parent_run_id: string;
  agent: string;
}

export interface SubagentFinished extends Position {
  type: "subagent.finished";
  run_id: string;
  parent_run_id: string;
  agent: string;
  status: "succeeded" | "failed" | "cancelled";
}

/** An answer to an approval. */
export type ApprovalDecision = "allow_once" | "allow_always" | "deny";

/**
 * A tool call waits for someone's answer: the run is `waiting` until the `approval.resolved` of `approval_id` (or
 * its terminal event). Answer with `BearAgentClient.answerApproval(run_id, approval_id, decision)`.
 */
export interface ApprovalRequested extends Position {
  type: "approval.requested";
  run_id: string;
  /** Letters, digits, `_` and `-` (1-64): safe in a URL path as it is. */
  approval_id: string;
  /** The `id` of the call's `tool_call` event. */
  tool_call_id: string;
  /** The name the model used (as on the `tool_call` event). */
  tool_name: string;
  arguments: Record<string, unknown>;
  /** Why the call needs an answer (may be empty). */
  reason: string;
  /** The permission rule `allow_always` adds. */
  suggested_rule?: string;
  /** The answers it takes (1-3). */
  choices: readonly ApprovalDecision[];
}

export interface ApprovalResolved extends Position {
  type: "approval.resolved";
  run_id: string;
  approval_id: string;
  decision: ApprovalDecision;
  /** Who answered: a subject (`user:42`), or `terminal`. */
  answered_by: string;
  /** The requested call's id (absent only if the producer did not see the request). */
  tool_call_id?: string;
  /** What the answer said to the model, when it said something. */
  message?: string;
}

/**
 * An MCP server asks the user a question in the middle of tool call `tool_call_id` (MCP elicitation); the call
 * waits. Answer with `POST /v1/runs/{run_id}/approvals/{elicitation_id}` and `decision` accept/decline/cancel, plus
 * `content` fitting `requested_schema` to accept a form.
 */
export interface ElicitationRequested extends Position {
  type: "elicitation.requested";
  run_id: string;
  /** `el_` then letters, digits, `_` and `-` (1-64). */
  elicitation_id: string;
  tool_call_id?: string;
  /** The MCP server's name. */
  server: string;
  message: string;
  /** `form`: fill `requested_schema`; `url`: open `url`. */
  mode: "form" | "url";
  requested_schema?: Record<string, unknown>;
  url?: string;
}

export interface ElicitationResolved extends Position {
  type: "elicitation.resolved";
  run_id: string;
  elicitation_id: string;
  action: "accept" | "decline" | "cancel";
  /** Who answered: a subject, `cli:USER`, or `nobody` (the wait ran out). */
  answered_by: string;
}

export type AgentEvent =
  | RunStarted
  | Step
  | Token
  | ToolCall
  | ToolResult
  | Final
  | RunSucceeded
  | RunFailed
  | AgentSwitched
  | SubagentStarted
  | SubagentFinished
  | ApprovalRequested
  | ApprovalResolved
  | ElicitationRequested
  | ElicitationResolved;

export type AgentEventType = AgentEvent["type"];

/** Every `type`, in the order of the Python union. `Record<AgentEventType, true>` keeps the list complete. */
const EVERY_TYPE: Record<AgentEventType, true> = {
  "run.started": true,
  step: true,
  token: true,
  tool_call: true,
  tool_result: true,
  final: true,
  "run.succeeded": true,
  "run.failed": true,
  "agent.switched": true,
  "subagent.started": true,
  "subagent.finished": true,
  "approval.requested": true,
  "approval.resolved": true,
  "elicitation.requested": true,
  "elicitation.resolved": true,
};

export const AGENT_EVENT_TYPES: readonly AgentEventType[] = Object.freeze(
  Object.keys(EVERY_TYPE) as AgentEventType[],
);

export function isAgentEventType(value: string): value is AgentEventType {
  return Object.hasOwn(EVERY_TYPE, value);
}

/** True for the event that ends run `runId`'s stream (`run.succeeded` or `run.failed` of that run). */
export function isTerminal(event: AgentEvent, runId: string): boolean {
  return (event.type === "run.succeeded" || event.type === "run.failed") && event.run_id === runId;
}

/** One line for a log or a terminal. Exhaustive without a `default`: a new `type` fails to compile here. */
export function describe(event: AgentEvent): string {
  switch (event.type) {
    case "run.started":
      return `run.started run_id=${event.run_id}`;
    case "step":
      return `step index=${event.index} kind=${event.kind}`;
    case "token":
      return `token ${JSON.stringify(event.text)}`;
    case "tool_call":
      return `tool_call ${event.name}(${JSON.stringify(event.arguments)})`;
    case "tool_result":
      return `tool_result ${event.name}${event.is_error ? " [error]" : ""} -> ${event.result}`;
    case "final":
      return `final ${JSON.stringify(event.content)}`;
    case "run.succeeded":
      return `run.succeeded steps=${event.steps}`;
    case "run.failed":
      return `run.failed ${event.error.code}: ${event.error.message}`;
    case "agent.switched":
      return `agent.switched ${event.from_agent} -> ${event.to_agent}`;
    case "subagent.started":
      return `subagent.started ${event.agent} run_id=${event.run_id}`;
    case "subagent.finished":
      return `subagent.finished ${event.agent} ${event.status}`;
    case "approval.requested":
      return `approval.requested ${event.approval_id} ${event.tool_name}(${JSON.stringify(event.arguments)})`;
    case "approval.resolved":
      return `approval.resolved ${event.approval_id} ${event.decision} by ${event.answered_by}`;
    case "elicitation.requested":
      return `elicitation.requested ${event.elicitation_id} ${event.server}: ${event.message}`;
    case "elicitation.resolved":
      return `elicitation.resolved ${event.elicitation_id} ${event.action} by ${event.answered_by}`;
  }
}
