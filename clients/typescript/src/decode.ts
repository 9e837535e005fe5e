// The trust boundary: untrusted text from the network in, checked `AgentEvent`s out.
//
// `decodeEvent(text)` reads one event (an SSE `data:` payload or a `--stream-json` line) and applies exactly the rules
// of the Python decoder (src/bearagent/domain/stream.py, `parse_stream_event_json`): same accepted lines, same
// rejected ones, and the error names the same field. tests/fixtures/stream_edge_cases.json is the table both test
// suites check. Every field is read and checked one by one and the event is built from those values only (never
// `{...parsed} as AgentEvent`), so unknown fields are dropped and a wrong one fails with its name.
//
// `SseParser` splits a `text/event-stream` body into frames (the WHATWG rules: `id:`, `event:`, `data:`, comments,
// CR/LF/CRLF line ends, chunks split anywhere); `decodeFrame` checks a frame against the event in its data.

import {
  AGENT_EVENT_TYPES,
  MAX_STREAM_INT,
  isAgentEventType,
  type AgentEvent,
  type AgentEventType,
  type ApprovalDecision,
  type StreamError,
} from "./stream.ts";

export const MAX_STREAM_LINE_CHARS = 16 * 1_048_576;
export const MAX_STREAM_TEXT_CHARS = 4 * 1_048_576;
/** How deeply a line may nest (the event object is level 1), in any field, known or not. */
export const MAX_STREAM_JSON_DEPTH = 64;
/** The bounds of a free-form JSON object (`tool_call.arguments`), as domain/_base.py's `validate_json_object`. */
export const JSON_OBJECT_BOUNDS = Object.freeze({
  maxDepth: 32,
  maxNodes: 10_000,
  maxStringChars: 1_048_576,
  maxKeyChars: 1_024,
  maxTotalChars: 4 * 1_048_576,
});

/** Why a line, a frame or a field was refused. `field` is the field's path (`error.code`), or null for the line. */
export class StreamDecodeError extends Error {
  readonly code = "validation.stream_event";
  readonly field: string | null;
  readonly eventType: string | null;

  constructor(message: string, field: string | null = null, eventType: string | null = null) {
    super(message);
    this.name = "StreamDecodeError";
    this.field = field;
    this.eventType = eventType;
  }
}

// ---- small helpers ------------------------------------------------------------------------------------------

type Raw = { readonly [key: string]: unknown };

function isObject(value: unknown): value is Raw {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function own(raw: Raw, key: string): unknown {
  return Object.hasOwn(raw, key) ? raw[key] : undefined;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Length in Unicode code points, as Python's `len(str)`; exact up to `limit + 1` (enough to compare). */
function codePoints(text: string, limit: number): number {
  if (text.length <= limit) {
    let pairs = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
        const d = text.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          pairs++;
          i++;
        }
      }
    }
    return text.length - pairs;
  }
  let count = 0;
  for (const _ of text) {
    if (++count > limit) return count;
  }
  return count;
}

// ---- one event ------------------------------------------------------------------------------------------------

/**
 * Decode one stream event from its JSON text. Throws `StreamDecodeError` (naming the field) on anything the Python
 * decoder refuses: an unknown `type`, a missing, `null` or mistyped field, a string outside its length bounds, an
 * integer written with a fraction or exponent (`1.0`), outside its range or above 2^53-1, a run id that is not a
 * UUID4 in 8-4-4-4-12 form, nesting deeper than 64 levels, a number that is no finite double, a lone surrogate.
 */
export function decodeEvent(text: string): AgentEvent {
  if (text.length > MAX_STREAM_LINE_CHARS && codePoints(text, MAX_STREAM_LINE_CHARS) > MAX_STREAM_LINE_CHARS) {
    throw new StreamDecodeError(`stream event line exceeds the limit of ${MAX_STREAM_LINE_CHARS} characters`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new StreamDecodeError(`stream event line is not valid JSON: ${(error as Error).message}`);
  }
  if (!isObject(parsed)) {
    const got = parsed === null ? "null" : Array.isArray(parsed) ? "an array" : `a ${typeof parsed}`;
    throw new StreamDecodeError(`a stream event must be a JSON object, got ${got}`);
  }
  const type = own(parsed, "type");
  if (typeof type !== "string") {
    throw new StreamDecodeError("a stream event needs a string field 'type'", "type");
  }
  if (!isAgentEventType(type)) {
    throw new StreamDecodeError(
      `unknown stream event type ${JSON.stringify(type.slice(0, 64))}; known types: ${AGENT_EVENT_TYPES.join(", ")}`,
      "type",
      type,
    );
  }
  const problem = wireProblem(parsed);
  if (problem !== null) {
    const [field, message] = problem;
    const text = field === null ? message : `invalid ${JSON.stringify(type)} stream event: field ${field}: ${message}`;
    throw new StreamDecodeError(text, field, type);
  }
  return build(new Fields(parsed, type, text, ""));
}

const TOO_DEEP = `stream event line nests deeper than ${MAX_STREAM_JSON_DEPTH} levels`;

/**
 * What no line may hold in any field, known or ignored (`_wire_problem` in stream.py): nesting deeper than 64 levels
 * (a line-level problem: Python's json module cannot name a field there either), a number that is not a finite
 * double, a lone surrogate. Returns [top-level field or null, problem] or null.
 */
function wireProblem(event: Raw): [string | null, string] | null {
  const stack: [string, unknown, number][] = [];
  for (const key of Object.keys(event)) {
    if (LONE_SURROGATE.test(key)) return ["event", "a field name with a lone surrogate is not Unicode"];
    stack.push([key, event[key], 2]);
  }
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [field, value, depth] = top;
    if (typeof value === "number") {
      if (!Number.isFinite(value)) return [field, "a number out of the range of a double"];
    } else if (typeof value === "string") {
      if (LONE_SURROGATE.test(value)) return [field, "a string with a lone surrogate is not Unicode"];
    } else if (typeof value === "object" && value !== null) {
      if (depth > MAX_STREAM_JSON_DEPTH) return [null, TOO_DEEP];
      if (Array.isArray(value)) {
        for (const item of value) stack.push([field, item, depth + 1]);
      } else {
        const object = value as Raw;
        for (const key of Object.keys(object)) {
          if (LONE_SURROGATE.test(key)) return [field, "a string with a lone surrogate is not Unicode"];
          stack.push([field, object[key], depth + 1]);
        }
      }
    }
  }
  return null;
}

const ID_TOKEN = /^[A-Za-z0-9_-]+$/;
const UUID4 = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$/;
const UUID_FORM = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

interface TextBounds {
  min?: number;
  max: number;
}

/** The fields of one event object (or of its nested `error`), read one at a time with the rules of stream.py. */
class Fields {
  readonly raw: Raw;
  readonly type: AgentEventType;
  readonly #text: string;
  readonly #prefix: string;
  #integerForms: Map<string, boolean> | undefined;

  constructor(raw: Raw, type: AgentEventType, text: string, prefix: string) {
    this.raw = raw;
    this.type = type;
    this.#text = text;
    this.#prefix = prefix;
  }

  fail(field: string, problem: string): never {
    const path = this.#prefix + field;
    throw new StreamDecodeError(
      `invalid ${JSON.stringify(this.type)} stream event: field ${path}: ${problem}`,
      path,
      this.type,
    );
  }

  /** Absent, or `null` for an optional field, is "not set"; `null` for a required one is a wrong type. */
  #value(field: string, required: boolean): unknown {
    const value = own(this.raw, field);
    if (value === undefined && required) this.fail(field, "field required");
    return value;
  }

  str(field: string, bounds: TextBounds): string {
    const value = this.#value(field, true);
    return this.#checkStr(field, value, bounds);
  }

  optStr(field: string, bounds: TextBounds): string | undefined {
    const value = this.#value(field, false);
    return value === undefined || value === null ? undefined : this.#checkStr(field, value, bounds);
  }

  #checkStr(field: string, value: unknown, bounds: TextBounds): string {
    if (typeof value !== "string") return this.fail(field, "expected a string");
    const min = bounds.min ?? 0;
    if (value.length < min) this.fail(field, `expected at least ${min} character${min === 1 ? "" : "s"}`);
    if (value.length > bounds.max && codePoints(value, bounds.max) > bounds.max) {
      this.fail(field, `expected at most ${bounds.max} characters`);
    }
    return value;
  }

  int(field: string, min: number): number {
    return this.#checkInt(field, this.#value(field, true), min);
  }

  optInt(field: string, min: number): number | undefined {
    const value = this.#value(field, false);
    return value === undefined || value === null ? undefined : this.#checkInt(field, value, min);
  }

  #checkInt(field: string, value: unknown, min: number): number {
    // JSON.parse reads `1.0` and `1` alike; Python's strict decoder does not, so look at how the number is written.
    if (typeof value !== "number" || !Number.isInteger(value) || this.#writtenAsInteger(field) !== true) {
      return this.fail(field, "expected an integer (a JSON number without fraction or exponent)");
    }
    if (value < min) this.fail(field, `expected an integer >= ${min}`);
    if (value > MAX_STREAM_INT) this.fail(field, `expected an integer <= ${MAX_STREAM_INT}`);
    return value === 0 ? 0 : value; // -0 is the integer 0
  }

  #writtenAsInteger(field: string): boolean | undefined {
    if (this.#prefix !== "") return false; // no integer field is nested
    this.#integerForms ??= topLevelNumberForms(this.#text);
    return this.#integerForms.get(field);
  }

  bool(field: string): boolean {
    const value = this.#value(field, true);
    return typeof value === "boolean" ? value : this.fail(field, "expected a boolean");
  }

  oneOf<T extends string>(field: string, allowed: readonly T[]): T {
    return this.#checkOneOf(field, this.#value(field, true), allowed);
  }

  #checkOneOf<T extends string>(field: string, value: unknown, allowed: readonly T[]): T {
    if (typeof value === "string") {
      for (const candidate of allowed) if (candidate === value) return candidate;
    }
    return this.fail(field, `expected one of ${allowed.join(", ")}`);
  }

  /**
   * An array of `min`..`max` values of `allowed`. As pydantic checks a bounded tuple: its first `max + 1` items one by
   * one (a wrong one is named by its index, `choices.1`), then the length.
   */
  listOf<T extends string>(field: string, allowed: readonly T[], min: number, max: number): T[] {
    const value = this.#value(field, true);
    if (!Array.isArray(value)) return this.fail(field, "expected an array");
    const items: unknown[] = value;
    const out: T[] = [];
    for (let i = 0; i < Math.min(items.length, max + 1); i++) {
      out.push(this.#checkOneOf(`${field}.${i}`, items[i], allowed));
    }
    if (items.length > max) this.fail(field, `expected at most ${max} items`);
    if (items.length < min) this.fail(field, `expected at least ${min} item${min === 1 ? "" : "s"}`);
    return out;
  }

  /** A string of `bounds` made of letters, digits, `_` and `-` only (an approval id). */
  token(field: string, bounds: TextBounds): string {
    const value = this.str(field, bounds);
    if (!ID_TOKEN.test(value)) this.fail(field, "expected letters, digits, _ and - only");
    return value;
  }

  runId(field: string): string {
    return this.#checkRunId(field, this.#value(field, true));
  }

  optRunId(field: string): string | undefined {
    const value = this.#value(field, false);
    return value === undefined || value === null ? undefined : this.#checkRunId(field, value);
  }

  #checkRunId(field: string, value: unknown): string {
    if (typeof value !== "string") return this.fail(field, "expected a UUID string");
    if (!UUID_FORM.test(value)) this.fail(field, "a run id must be a UUID string in the 8-4-4-4-12 form");
    if (!UUID4.test(value)) this.fail(field, "expected a version-4 UUID");
    return value.toLowerCase();
  }

  object(field: string): Fields {
    const value = this.#value(field, true);
    if (!isObject(value)) return this.fail(field, "expected a JSON object");
    return new Fields(value, this.type, this.#text, `${this.#prefix}${field}.`);
  }

  jsonObject(field: string): Record<string, unknown> {
    const value = this.#value(field, true);
    if (!isObject(value)) return this.fail(field, "expected a JSON object");
    const problem = new BoundedCopy();
    const copied = problem.copy(value, "value", 1);
    if (problem.error !== null) this.fail(field, problem.error);
    return copied as Record<string, unknown>;
  }
}

/** A fresh copy of a free-form JSON object within `JSON_OBJECT_BOUNDS`, counted as domain/_base.py counts. */
class BoundedCopy {
  error: string | null = null;
  #nodes = 0;
  #chars = 0;

  copy(value: unknown, path: string, depth: number): unknown {
    if (this.error !== null) return null;
    const bounds = JSON_OBJECT_BOUNDS;
    if (++this.#nodes > bounds.maxNodes) return this.#fail(`${path}: JSON has more than ${bounds.maxNodes} nodes`);
    if (value === null || typeof value === "boolean") return value;
    if (typeof value === "number") {
      this.#chars += 8; // as Python: counted, but the total is checked at the next string or key
      return value;
    }
    if (typeof value === "string") {
      const n = codePoints(value, bounds.maxStringChars);
      if (n > bounds.maxStringChars) return this.#fail(`${path}: string exceeds ${bounds.maxStringChars} characters`);
      return this.#add(n, path) ? value : null;
    }
    if (depth > bounds.maxDepth) return this.#fail(`${path}: JSON nesting deeper than ${bounds.maxDepth}`);
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      for (let i = 0; i < value.length && this.error === null; i++) {
        out.push(this.copy(value[i], `${path}[${i}]`, depth + 1));
      }
      return out;
    }
    const object = value as Raw;
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(object)) {
      const n = codePoints(key, bounds.maxKeyChars);
      if (n > bounds.maxKeyChars) return this.#fail(`${path}: object key longer than ${bounds.maxKeyChars}`);
      if (!this.#add(n, path)) return null;
      const item = this.copy(object[key], `${path}.${key}`, depth + 1);
      // defineProperty, not assignment: a key "__proto__" stays an ordinary key, as in the parsed JSON.
      Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true });
      if (this.error !== null) return null;
    }
    return out;
  }

  #add(n: number, path: string): boolean {
    this.#chars += n;
    if (this.#chars > JSON_OBJECT_BOUNDS.maxTotalChars) {
      this.#fail(`${path}: JSON total size exceeds ${JSON_OBJECT_BOUNDS.maxTotalChars}`);
      return false;
    }
    return true;
  }

  #fail(message: string): null {
    this.error ??= message;
    return null;
  }
}

const TEXT: TextBounds = { max: MAX_STREAM_TEXT_CHARS };
const ID: TextBounds = { min: 1, max: 256 };
const AGENT: TextBounds = { min: 1, max: 64 };
const ACTIVITY: TextBounds = { min: 1, max: 64 };
const APPROVAL_ID: TextBounds = { min: 1, max: 64 };
const DECISIONS = ["allow_once", "allow_always", "deny"] as const satisfies readonly ApprovalDecision[];

/** Build the event of `f.type` from its checked fields, in the order stream.py declares them. */
function build(f: Fields): AgentEvent {
  const seq = f.optInt("seq", 1);
  const at = seq === undefined ? {} : { seq };
  switch (f.type) {
    case "run.started":
      return { type: f.type, ...at, run_id: f.runId("run_id") };
    case "step": {
      const index = f.int("index", 0);
      const kind = f.oneOf("kind", ["tool_call", "final"] as const);
      const run_id = f.optRunId("run_id");
      return { type: f.type, ...at, index, kind, ...(run_id === undefined ? {} : { run_id }) };
    }
    case "token": {
      const text = f.str("text", TEXT);
      const run_id = f.optRunId("run_id");
      const activity_id = f.optStr("activity_id", ACTIVITY);
      const offset = f.optInt("offset", 0);
      return {
        type: f.type,
        ...at,
        text,
        ...(run_id === undefined ? {} : { run_id }),
        ...(activity_id === undefined ? {} : { activity_id }),
        ...(offset === undefined ? {} : { offset }),
      };
    }
    case "tool_call": {
      const id = f.str("id", ID);
      const name = f.str("name", ID);
      const args = f.jsonObject("arguments");
      const run_id = f.optRunId("run_id");
      return { type: f.type, ...at, id, name, arguments: args, ...(run_id === undefined ? {} : { run_id }) };
    }
    case "tool_result": {
      const id = f.str("id", ID);
      const name = f.str("name", ID);
      const result = f.str("result", TEXT);
      const is_error = f.bool("is_error");
      const run_id = f.optRunId("run_id");
      return { type: f.type, ...at, id, name, result, is_error, ...(run_id === undefined ? {} : { run_id }) };
    }
    case "final": {
      const content = f.str("content", TEXT);
      const run_id = f.optRunId("run_id");
      return { type: f.type, ...at, content, ...(run_id === undefined ? {} : { run_id }) };
    }
    case "run.succeeded": {
      const run_id = f.runId("run_id");
      return { type: f.type, ...at, run_id, steps: f.int("steps", 0) };
    }
    case "run.failed": {
      const run_id = f.runId("run_id");
      return { type: f.type, ...at, run_id, error: streamError(f.object("error")) };
    }
    case "agent.switched": {
      const run_id = f.runId("run_id");
      const from_agent = f.str("from_agent", AGENT);
      return { type: f.type, ...at, run_id, from_agent, to_agent: f.str("to_agent", AGENT) };
    }
    case "subagent.started": {
      const run_id = f.runId("run_id");
      const parent_run_id = f.runId("parent_run_id");
      return { type: f.type, ...at, run_id, parent_run_id, agent: f.str("agent", AGENT) };
    }
    case "subagent.finished": {
      const run_id = f.runId("run_id");
      const parent_run_id = f.runId("parent_run_id");
      const agent = f.str("agent", AGENT);
      const status = f.oneOf("status", ["succeeded", "failed", "cancelled"] as const);
      return { type: f.type, ...at, run_id, parent_run_id, agent, status };
    }
    case "approval.requested": {
      const run_id = f.runId("run_id");
      const approval_id = f.token("approval_id", APPROVAL_ID);
      const tool_call_id = f.str("tool_call_id", ID);
      const tool_name = f.str("tool_name", ID);
      const args = f.jsonObject("arguments");
      const reason = f.str("reason", { max: 4_000 });
      const suggested_rule = f.optStr("suggested_rule", { max: 1_000 });
      const choices = f.listOf("choices", DECISIONS, 1, 3);
      return {
        type: f.type,
        ...at,
        run_id,
        approval_id,
        tool_call_id,
        tool_name,
        arguments: args,
        reason,
        ...(suggested_rule === undefined ? {} : { suggested_rule }),
        choices,
      };
    }
    case "approval.resolved": {
      const run_id = f.runId("run_id");
      const approval_id = f.token("approval_id", APPROVAL_ID);
      const decision = f.oneOf("decision", DECISIONS);
      const answered_by = f.str("answered_by", ID);
      const tool_call_id = f.optStr("tool_call_id", ID);
      const message = f.optStr("message", { max: 2_000 });
      return {
        type: f.type,
        ...at,
        run_id,
        approval_id,
        decision,
        answered_by,
        ...(tool_call_id === undefined ? {} : { tool_call_id }),
        ...(message === undefined ? {} : { message }),
      };
    }
    case "elicitation.requested": {
      const run_id = f.runId("run_id");
      const elicitation_id = f.token("elicitation_id", APPROVAL_ID);
      const tool_call_id = f.optStr("tool_call_id", ID);
      const server = f.str("server", ID);
      const message = f.str("message", { max: 2_000 });
      const mode = f.oneOf("mode", ["form", "url"] as const);
      const raw_schema = own(f.raw, "requested_schema");
      const requested_schema =
        raw_schema === undefined || raw_schema === null ? undefined : f.jsonObject("requested_schema");
      const url = f.optStr("url", { max: 2_000 });
      return {
        type: f.type,
        ...at,
        run_id,
        elicitation_id,
        ...(tool_call_id === undefined ? {} : { tool_call_id }),
        server,
        message,
        mode,
        ...(requested_schema === undefined ? {} : { requested_schema }),
        ...(url === undefined ? {} : { url }),
      };
    }
    case "elicitation.resolved": {
      const run_id = f.runId("run_id");
      const elicitation_id = f.token("elicitation_id", APPROVAL_ID);
      const action = f.oneOf("action", ["accept", "decline", "cancel"] as const);
      return { type: f.type, ...at, run_id, elicitation_id, action, answered_by: f.str("answered_by", ID) };
    }
  }
}

function streamError(f: Fields): StreamError {
  const category = f.str("category", { min: 1, max: 64 });
  const code = f.str("code", { min: 1, max: 128 });
  const message = f.str("message", { max: 2_000 });
  return { category, code, message, retryable: f.bool("retryable") };
}

// ---- how the top-level numbers are written ---------------------------------------------------------------------

const INTEGER_LITERAL = /^-?(?:0|[1-9][0-9]*)$/;

function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && isJsonSpace(text.charCodeAt(i))) i++;
  return i;
}

/** Index just past the string literal whose opening quote is at `i`. */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; ; ) {
    const quote = text.indexOf('"', j);
    if (quote < 0) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    j = quote + 1;
  }
}

/** Index just past the JSON value that starts at `i`. */
function valueEnd(text: string, i: number): number {
  const first = text.charCodeAt(i);
  if (first === 0x22) return stringEnd(text, i);
  if (first === 0x7b || first === 0x5b) {
    let depth = 0;
    for (let j = i; j < text.length; ) {
      const c = text.charCodeAt(j);
      if (c === 0x22) {
        j = stringEnd(text, j);
        continue;
      }
      if (c === 0x7b || c === 0x5b) depth++;
      else if ((c === 0x7d || c === 0x5d) && --depth === 0) return j + 1;
      j++;
    }
    return text.length;
  }
  let j = i;
  while (j < text.length) {
    const c = text.charCodeAt(j);
    if (c === 0x2c || c === 0x7d || c === 0x5d || isJsonSpace(c)) break;
    j++;
  }
  return j;
}

/**
 * For each top-level key whose (last) value is a number: whether the literal is an integer (`1`, `-0`) rather than
 * `1.0` or `1e0`. Runs only on text JSON.parse accepted as an object, so it can skip values without checking them.
 */
function topLevelNumberForms(text: string): Map<string, boolean> {
  const forms = new Map<string, boolean>();
  let i = skipSpace(text, skipSpace(text, 0) + 1); // past "{"
  while (i < text.length && text.charCodeAt(i) === 0x22) {
    const keyEnd = stringEnd(text, i);
    const rawKey = text.slice(i + 1, keyEnd - 1);
    const key = rawKey.includes("\\") ? (JSON.parse(text.slice(i, keyEnd)) as string) : rawKey;
    const start = skipSpace(text, skipSpace(text, keyEnd) + 1); // past ":"
    const end = valueEnd(text, start);
    const c = text.charCodeAt(start);
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) forms.set(key, INTEGER_LITERAL.test(text.slice(start, end)));
    else forms.delete(key); // a later duplicate key wins, as in JSON.parse
    i = skipSpace(text, end);
    if (text.charCodeAt(i) !== 0x2c) break; // "}"
    i = skipSpace(text, i + 1);
  }
  return forms;
}

// ---- Server-Sent Events ---------------------------------------------------------------------------------------

/** One dispatched SSE frame, before its data is decoded. `id` is the `id:` field of this frame, if it had one. */
export interface SseFrame {
  id?: string;
  event: string;
  data: string;
}

/** Longest line the parser buffers (a `data:` line of the longest event, plus its field name). */
export const MAX_SSE_LINE_CHARS = MAX_STREAM_LINE_CHARS + 64;

/**
 * Incremental `text/event-stream` parser (https://html.spec.whatwg.org/multipage/server-sent-events.html#parsing-an-
 * event-stream): feed decoded text in chunks of any size with `push`, get the frames completed so far. Comments and
 * frames without data are skipped, `retry:` is kept in `retry`, the stream's last event id in `lastEventId`.
 */
export class SseParser {
  lastEventId = "";
  retry: number | undefined;
  #buffer = "";
  #skipLineFeed = false;
  #started = false;
  #data: string[] = [];
  #dataChars = 0;
  #event = "";
  #frameId: string | undefined;

  push(chunk: string): SseFrame[] {
    const frames: SseFrame[] = [];
    let text = chunk;
    if (!this.#started && text.length > 0) {
      this.#started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.#skipLineFeed && text.length > 0) {
      this.#skipLineFeed = false;
      if (text.charCodeAt(0) === 0x0a) text = text.slice(1);
    }
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 0x0a && c !== 0x0d) continue;
      const line = this.#buffer + text.slice(start, i);
      this.#buffer = "";
      if (c === 0x0d) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 0x0a) i++;
        } else {
          this.#skipLineFeed = true;
        }
      }
      start = i + 1;
      const frame = this.#line(line);
      if (frame !== null) frames.push(frame);
    }
    this.#buffer += text.slice(start);
    if (this.#buffer.length > MAX_SSE_LINE_CHARS) {
      throw new StreamDecodeError(`an SSE line is longer than ${MAX_SSE_LINE_CHARS} characters`);
    }
    return frames;
  }

  /** The stream ended: an unterminated frame is dropped, as the SSE rules say. */
  finish(): void {
    this.#buffer = "";
    this.#reset();
  }

  #line(line: string): SseFrame | null {
    if (line === "") return this.#dispatch();
    if (line.charCodeAt(0) === 0x3a) return null; // ": comment" (keep-alive)
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    switch (name) {
      case "event":
        this.#event = value;
        break;
      case "data":
        this.#dataChars += value.length + 1;
        if (this.#dataChars > MAX_SSE_LINE_CHARS) {
          throw new StreamDecodeError(`an SSE frame's data is longer than ${MAX_SSE_LINE_CHARS} characters`);
        }
        this.#data.push(value);
        break;
      case "id":
        if (!value.includes("\u0000")) {
          this.lastEventId = value;
          this.#frameId = value;
        }
        break;
      case "retry":
        if (/^[0-9]+$/.test(value)) this.retry = Number(value);
        break;
      default: // unknown fields are ignored
    }
    return null;
  }

  #dispatch(): SseFrame | null {
    if (this.#data.length === 0) {
      this.#reset();
      return null;
    }
    const frame: SseFrame = { event: this.#event === "" ? "message" : this.#event, data: this.#data.join("\n") };
    if (this.#frameId !== undefined) frame.id = this.#frameId;
    this.#reset();
    return frame;
  }

  #reset(): void {
    this.#data = [];
    this.#dataChars = 0;
    this.#event = "";
    this.#frameId = undefined;
  }
}

/** A decoded frame: the event and, for an event from the run's log, its resume id `<seq>-<n>` (tokens have none). */
export interface StreamFrame {
  id: string | null;
  event: AgentEvent;
}

const FRAME_ID = /^([1-9][0-9]{0,15})(?:-([1-9][0-9]{0,15}))?$/;

/**
 * Decode a frame of `GET /v1/runs/{id}/events` (SSE): the data is one event (`decodeEvent`), the `event:` name must be
 * its `type`, and an `id:` must be `<seq>` or `<seq>-<n>` with the event's own `seq`.
 */
export function decodeFrame(frame: SseFrame): StreamFrame {
  const event = decodeEvent(frame.data);
  if (frame.event !== event.type) {
    throw new StreamDecodeError(
      `SSE frame named ${JSON.stringify(frame.event.slice(0, 64))} carries a ${JSON.stringify(event.type)} event`,
      "event",
      event.type,
    );
  }
  if (frame.id === undefined) return { id: null, event };
  const match = FRAME_ID.exec(frame.id);
  if (match === null || event.seq === undefined || Number(match[1]) !== event.seq) {
    throw new StreamDecodeError(
      `SSE frame id ${JSON.stringify(frame.id.slice(0, 64))} is not "<seq>-<n>" with the event's seq ${event.seq ?? "(none)"}`,
      "id",
      event.type,
    );
  }
  return { id: frame.id, event };
}

/** A frame of the workspace feed: an event of one of its runs, or `reset` (the feed lost the id you resumed from). */
export type FeedFrame =
  | { kind: "event"; id: string | null; event: AgentEvent }
  | { kind: "reset"; lastEventId: string; oldestEventId: string | null; message: string };

const FEED_ID = /^([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}):([1-9][0-9]{0,15})-([1-9][0-9]{0,15})$/;

/**
 * Decode a frame of `GET /v1/workspaces/{ws}/events`. An event frame is checked as `decodeFrame` checks a run's, but
 * its id is `<run_id>:<seq>-<n>`: the run whose log the event comes from (the parent's for `subagent.*`) and its seq.
 * A `feed.reset` frame is read field by field into `{kind: "reset", …}`.
 */
export function decodeFeedFrame(frame: SseFrame): FeedFrame {
  if (frame.event === "feed.reset") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(frame.data);
    } catch {
      parsed = undefined;
    }
    const raw = isObject(parsed) ? parsed : {};
    const last = own(raw, "last_event_id");
    const oldest = own(raw, "oldest_event_id");
    const message = own(raw, "message");
    if (
      own(raw, "type") !== "feed.reset" ||
      typeof last !== "string" ||
      (oldest !== null && typeof oldest !== "string") ||
      typeof message !== "string"
    ) {
      throw new StreamDecodeError("a feed.reset frame needs type, last_event_id, oldest_event_id and message", "data");
    }
    return { kind: "reset", lastEventId: last, oldestEventId: oldest, message };
  }
  const { event } = decodeFrame({ event: frame.event, data: frame.data }); // its id is checked below, as a feed id
  if (frame.id === undefined) return { kind: "event", id: null, event };
  const match = FEED_ID.exec(frame.id);
  const owner = event.type === "subagent.started" || event.type === "subagent.finished" ? event.parent_run_id : event.run_id;
  if (match === null || match[1] !== owner || event.seq === undefined || Number(match[2]) !== event.seq) {
    throw new StreamDecodeError(
      `feed frame id ${JSON.stringify(frame.id.slice(0, 120))} is not "<run_id>:<seq>-<n>" of the event's run and seq`,
      "id",
      event.type,
    );
  }
  return { kind: "event", id: frame.id, event };
}
