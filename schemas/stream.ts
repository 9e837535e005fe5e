// BearAgent live stream protocol (SPEC §14, seed 004): the TypeScript twin of src/bearagent/domain/stream.py.
//
// One JSON object per event (a `--stream-json` line or an SSE `data:` payload), discriminated by `type`.
// tests/contract/test_stream_protocol.py type-checks the shared samples in schemas/samples/ against these types
// (`tsc --noEmit --strict`) and runs `decode` on them, so the two definitions cannot drift silently.
//
// Erasable syntax only (no enum, namespace or parameter properties): strip the types and it is plain JavaScript.
// Compatibility: a `type` is never renamed or removed; fields are only added as optional; `decode` ignores fields it
// does not know, so this file keeps working against a newer BearAgent.
//
// Protocol 2 adds, all optional (protocol-1 lines still decode): `run_id` on every event (child runs' events name
// the child), `seq` (the sequence of the run's log event a stream event comes from; a consumer that reconnects asks
// for what follows the last `seq` it has all events of), and `activity_id` + `offset` on `token`. Protocol 3 adds
// the types `approval.requested` and `approval.resolved`. Protocol 4 adds `elicitation.requested` and
// `elicitation.resolved` (an MCP server's question mid-call; its answer).

export const PROTOCOL_VERSION = 4;

// Present on every event: where it comes from in the run's log.
export interface Position {
  seq?: number;
}

export interface StreamError {
  category: string;
  code: string;
  message: string;
  retryable: boolean;
}

export type ApprovalDecision = "allow_once" | "allow_always" | "deny";

export type AgentEvent = Position &
  (
    | { type: "run.started"; run_id: string }
    | { type: "step"; index: number; kind: "tool_call" | "final"; run_id?: string }
    | { type: "token"; text: string; run_id?: string; activity_id?: string; offset?: number }
    | { type: "tool_call"; id: string; name: string; arguments: Record<string, unknown>; run_id?: string }
    | { type: "tool_result"; id: string; name: string; result: string; is_error: boolean; run_id?: string }
    | { type: "final"; content: string; run_id?: string }
    | { type: "run.succeeded"; run_id: string; steps: number }
    | { type: "run.failed"; run_id: string; error: StreamError }
    | { type: "agent.switched"; run_id: string; from_agent: string; to_agent: string }
    | { type: "subagent.started"; run_id: string; parent_run_id: string; agent: string }
    | {
        type: "subagent.finished";
        run_id: string;
        parent_run_id: string;
        agent: string;
        status: "succeeded" | "failed" | "cancelled";
      }
    | {
        type: "approval.requested";
        run_id: string;
        approval_id: string;
        tool_call_id: string;
        tool_name: string;
        arguments: Record<string, unknown>;
        reason: string;
        suggested_rule?: string;
        choices: readonly ApprovalDecision[];
      }
    | {
        type: "approval.resolved";
        run_id: string;
        approval_id: string;
        decision: ApprovalDecision;
        answered_by: string;
        tool_call_id?: string;
        message?: string;
      }
    | {
        type: "elicitation.requested";
        run_id: string;
        elicitation_id: string;
        tool_call_id?: string;
        server: string;
        message: string;
        mode: "form" | "url";
        requested_schema?: Record<string, unknown>;
        url?: string;
      }
    | {
        type: "elicitation.resolved";
        run_id: string;
        elicitation_id: string;
        action: "accept" | "decline" | "cancel";
        answered_by: string;
      }
  );

export type AgentEventType = AgentEvent["type"];

export const AGENT_EVENT_TYPES: readonly AgentEventType[] = [
  "run.started",
  "step",
  "token",
  "tool_call",
  "tool_result",
  "final",
  "run.succeeded",
  "run.failed",
  "agent.switched",
  "subagent.started",
  "subagent.finished",
  "approval.requested",
  "approval.resolved",
  "elicitation.requested",
  "elicitation.resolved",
];

type Raw = Record<string, unknown>;

function fail(type: string, field: string, expected: string): never {
  throw new Error(`invalid ${JSON.stringify(type)} stream event: field ${field}: expected ${expected}`);
}

// `at` names the field in errors when it is nested (e.g. "error.code").
function str(raw: Raw, type: string, field: string, at: string = field): string {
  const value = raw[field];
  return typeof value === "string" ? value : fail(type, at, "a string");
}

function int(raw: Raw, type: string, field: string): number {
  const value = raw[field];
  return typeof value === "number" && Number.isInteger(value) && value >= 0
    ? value
    : fail(type, field, "a non-negative integer");
}

function bool(raw: Raw, type: string, field: string, at: string = field): boolean {
  const value = raw[field];
  return typeof value === "boolean" ? value : fail(type, at, "a boolean");
}

function obj(raw: Raw, type: string, field: string): Raw {
  const value = raw[field];
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Raw)
    : fail(type, field, "a JSON object");
}

// Optional fields (protocol 2): absent or null means not set; otherwise checked like a required one. The result is
// spread into the event, so an unset field is left out entirely (as Python's encoder leaves it out).
function optStr<K extends string>(raw: Raw, type: string, field: K): { [P in K]?: string } {
  const value = raw[field];
  if (value === undefined || value === null) return {};
  const checked = typeof value === "string" && value.length > 0 ? value : fail(type, field, "a non-empty string");
  return { [field]: checked } as { [P in K]?: string };
}

function optInt<K extends string>(raw: Raw, type: string, field: K, min: number): { [P in K]?: number } {
  const value = raw[field];
  if (value === undefined || value === null) return {};
  const checked =
    typeof value === "number" && Number.isInteger(value) && value >= min ? value : fail(type, field, `an integer >= ${min}`);
  return { [field]: checked } as { [P in K]?: number };
}

function oneOf<T extends string>(raw: Raw, type: string, field: string, allowed: readonly T[]): T {
  const value = raw[field];
  return typeof value === "string" && (allowed as readonly string[]).includes(value)
    ? (value as T)
    : fail(type, field, `one of ${allowed.join(", ")}`);
}

const DECISIONS: readonly ApprovalDecision[] = ["allow_once", "allow_always", "deny"];

function decisions(raw: Raw, type: string, field: string): ApprovalDecision[] {
  const value = raw[field];
  if (!Array.isArray(value) || value.length === 0) return fail(type, field, "a non-empty array");
  const items: unknown[] = value;
  return items.map((item, i) =>
    typeof item === "string" && (DECISIONS as readonly string[]).includes(item)
      ? (item as ApprovalDecision)
      : fail(type, `${field}.${i}`, `one of ${DECISIONS.join(", ")}`),
  );
}

// The trust boundary: untrusted JSON text in, a checked AgentEvent out. Every field is read and checked explicitly
// (no `{...raw} as AgentEvent`), so unknown fields are dropped and a wrong shape fails with the field's name.
export function decode(line: string): AgentEvent {
  const parsed: unknown = JSON.parse(line);
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new Error("a stream event must be a JSON object");
  }
  const raw = parsed as Raw;
  const event = decodeFields(raw);
  const { seq } = optInt(raw, event.type, "seq", 1);
  return seq === undefined ? event : { ...event, seq };
}

function decodeFields(raw: Raw): AgentEvent {
  const type = raw["type"];
  switch (type) {
    case "run.started":
      return { type, run_id: str(raw, type, "run_id") };
    case "step":
      return {
        type,
        index: int(raw, type, "index"),
        kind: oneOf(raw, type, "kind", ["tool_call", "final"] as const),
        ...optStr(raw, type, "run_id"),
      };
    case "token":
      return {
        type,
        text: str(raw, type, "text"),
        ...optStr(raw, type, "run_id"),
        ...optStr(raw, type, "activity_id"),
        ...optInt(raw, type, "offset", 0),
      };
    case "tool_call":
      return {
        type,
        id: str(raw, type, "id"),
        name: str(raw, type, "name"),
        arguments: obj(raw, type, "arguments"),
        ...optStr(raw, type, "run_id"),
      };
    case "tool_result":
      return {
        type,
        id: str(raw, type, "id"),
        name: str(raw, type, "name"),
        result: str(raw, type, "result"),
        is_error: bool(raw, type, "is_error"),
        ...optStr(raw, type, "run_id"),
      };
    case "final":
      return { type, content: str(raw, type, "content"), ...optStr(raw, type, "run_id") };
    case "run.succeeded":
      return { type, run_id: str(raw, type, "run_id"), steps: int(raw, type, "steps") };
    case "run.failed": {
      const error = obj(raw, type, "error");
      return {
        type,
        run_id: str(raw, type, "run_id"),
        error: {
          category: str(error, type, "category", "error.category"),
          code: str(error, type, "code", "error.code"),
          message: str(error, type, "message", "error.message"),
          retryable: bool(error, type, "retryable", "error.retryable"),
        },
      };
    }
    case "agent.switched":
      return {
        type,
        run_id: str(raw, type, "run_id"),
        from_agent: str(raw, type, "from_agent"),
        to_agent: str(raw, type, "to_agent"),
      };
    case "subagent.started":
      return {
        type,
        run_id: str(raw, type, "run_id"),
        parent_run_id: str(raw, type, "parent_run_id"),
        agent: str(raw, type, "agent"),
      };
    case "subagent.finished":
      return {
        type,
        run_id: str(raw, type, "run_id"),
        parent_run_id: str(raw, type, "parent_run_id"),
        agent: str(raw, type, "agent"),
        status: oneOf(raw, type, "status", ["succeeded", "failed", "cancelled"] as const),
      };
    case "approval.requested":
      return {
        type,
        run_id: str(raw, type, "run_id"),
        approval_id: str(raw, type, "approval_id"),
        tool_call_id: str(raw, type, "tool_call_id"),
        tool_name: str(raw, type, "tool_name"),
        arguments: obj(raw, type, "arguments"),
        reason: str(raw, type, "reason"),
        ...optStr(raw, type, "suggested_rule"),
        choices: decisions(raw, type, "choices"),
      };
    case "approval.resolved":
      return {
        type,
        run_id: str(raw, type, "run_id"),
        approval_id: str(raw, type, "approval_id"),
        decision: oneOf(raw, type, "decision", DECISIONS),
        answered_by: str(raw, type, "answered_by"),
        ...optStr(raw, type, "tool_call_id"),
        ...optStr(raw, type, "message"),
      };
    case "elicitation.requested": {
      const schema = raw["requested_schema"];
      return {
        type,
        run_id: str(raw, type, "run_id"),
        elicitation_id: str(raw, type, "elicitation_id"),
        ...optStr(raw, type, "tool_call_id"),
        server: str(raw, type, "server"),
        message: str(raw, type, "message"),
        mode: oneOf(raw, type, "mode", ["form", "url"] as const),
        ...(schema === undefined || schema === null ? {} : { requested_schema: obj(raw, type, "requested_schema") }),
        ...optStr(raw, type, "url"),
      };
    }
    case "elicitation.resolved":
      return {
        type,
        run_id: str(raw, type, "run_id"),
        elicitation_id: str(raw, type, "elicitation_id"),
        action: oneOf(raw, type, "action", ["accept", "decline", "cancel"] as const),
        answered_by: str(raw, type, "answered_by"),
      };
    default:
      throw new Error(
        `unknown stream event type ${JSON.stringify(type)}; known types: ${AGENT_EVENT_TYPES.join(", ")}`,
      );
  }
}

// Exhaustive without a `default`: add an event type and forget a branch here, and `tsc --strict` reports that the
// function may return undefined.
export function describe(ev: AgentEvent): string {
  switch (ev.type) {
    case "run.started":
      return `run.started run_id=${ev.run_id}`;
    case "step":
      return `step index=${ev.index} kind=${ev.kind}`;
    case "token":
      return `token ${JSON.stringify(ev.text)}`;
    case "tool_call":
      return `tool_call ${ev.name}(${JSON.stringify(ev.arguments)})`;
    case "tool_result":
      return `tool_result ${ev.name}${ev.is_error ? " [error]" : ""} -> ${ev.result}`;
    case "final":
      return `final ${JSON.stringify(ev.content)}`;
    case "run.succeeded":
      return `run.succeeded steps=${ev.steps}`;
    case "run.failed":
      return `run.failed ${ev.error.code}: ${ev.error.message}`;
    case "agent.switched":
      return `agent.switched ${ev.from_agent} -> ${ev.to_agent}`;
    case "subagent.started":
      return `subagent.started ${ev.agent} run_id=${ev.run_id}`;
    case "subagent.finished":
      return `subagent.finished ${ev.agent} ${ev.status}`;
    case "approval.requested":
      return `approval.requested ${ev.approval_id} ${ev.tool_name}(${JSON.stringify(ev.arguments)})`;
    case "approval.resolved":
      return `approval.resolved ${ev.approval_id} ${ev.decision} by ${ev.answered_by}`;
    case "elicitation.requested":
      return `elicitation.requested ${ev.elicitation_id} ${ev.server}: ${ev.message}`;
    case "elicitation.resolved":
      return `elicitation.resolved ${ev.elicitation_id} ${ev.action} by ${ev.answered_by}`;
  }
}
