// Shared by the test files: where the repository's shared samples are, and what the Python side said about them.
//
// Environment (set by tests/clients/test_typescript_client.py; without it the live tests skip and the rest runs):
//   BEARAGENT_ROOT          the repository (default: found upwards from this file or the working directory)
//   BEARAGENT_PY_VERDICTS   a JSON file of Python's verdict on every shared sample and edge case
//   BEARAGENT_BASE_URL      a running `bearagent serve` with the workspaces of that test
//   BEARAGENT_TOKEN         its local token (every scope); BEARAGENT_READER_TOKEN a gateway JWT with runs:read only

import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

function findRoot(): string {
  const given = process.env["BEARAGENT_ROOT"];
  if (given !== undefined && given !== "") return resolve(given);
  for (const start of [dirname(fileURLToPath(import.meta.url)), process.cwd()]) {
    for (let dir = start; ; dir = dirname(dir)) {
      if (existsSync(join(dir, "schemas", "samples", "valid.jsonl"))) return dir;
      if (dirname(dir) === dir) break;
    }
  }
  throw new Error("cannot find the repository (schemas/samples/); set BEARAGENT_ROOT");
}

export const ROOT = findRoot();

export function sampleLines(name: string): string[] {
  return readFileSync(join(ROOT, "schemas", "samples", name), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "");
}

export interface InvalidSample {
  why: string;
  event: unknown;
}

export function invalidSamples(): InvalidSample[] {
  return JSON.parse(readFileSync(join(ROOT, "schemas", "samples", "invalid.json"), "utf8")) as InvalidSample[];
}

export interface EdgeCase {
  name: string;
  why: string;
  line: string;
  verdict: "accept" | "reject";
  field?: string | null;
  decoded?: unknown;
}

export function edgeCases(): EdgeCase[] {
  const doc = JSON.parse(readFileSync(join(ROOT, "tests", "fixtures", "stream_edge_cases.json"), "utf8")) as {
    cases: EdgeCase[];
  };
  return doc.cases;
}

/** Python's verdict on one line: what `parse_stream_event_json` returned (as JSON) or the field its error named. */
export interface PythonVerdict {
  line: string;
  verdict: "accept" | "reject";
  field?: string | null;
  decoded?: unknown;
}

export function pythonVerdicts(): PythonVerdict[] | null {
  const path = process.env["BEARAGENT_PY_VERDICTS"];
  if (path === undefined || path === "") return null;
  return JSON.parse(readFileSync(path, "utf8")) as PythonVerdict[];
}

export const live = {
  baseUrl: process.env["BEARAGENT_BASE_URL"] ?? "",
  token: process.env["BEARAGENT_TOKEN"] ?? "",
  readerToken: process.env["BEARAGENT_READER_TOKEN"] ?? "",
};

/** The skip option of the live tests: a reason when no server was given. */
export const LIVE_SKIP: string | false =
  live.baseUrl === "" ? "no BEARAGENT_BASE_URL: run through tests/clients/test_typescript_client.py" : false;

/** The plain-JSON view of a decoded value (what Python's `json.loads(encode_stream_event(...))` compares with). */
export function asJson(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value));
}
