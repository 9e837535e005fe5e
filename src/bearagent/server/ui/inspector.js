// BearAgent run inspector (served at /ui). Plain JS, no build step, nothing from another origin.
// Everything a run produced is untrusted: it is only ever inserted as text (textContent / text nodes), never as
// markup, and the page's Content-Security-Policy (default-src 'self') forbids inline script besides.
"use strict";

(() => {
  const TOKEN_KEY = "bearagent.token";
  const TERMINAL = new Set(["succeeded", "failed", "cancelled"]);
  const TERMINAL_EVENTS = new Set(["run.succeeded", "run.failed"]);
  const MAX_DEPTH = 4; // subagent nesting shown
  const DECISIONS = ["allow_once", "allow_always", "deny"];

  const $ = (id) => {
    const node = document.getElementById(id);
    if (node === null) throw new Error(`missing #${id}`);
    return node;
  };

  // el("li", {className: "x", dataset: {seq: "3"}}, "text", child): children are nodes or text, never markup.
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    if (props) {
      for (const [key, value] of Object.entries(props)) {
        if (value === undefined || value === null) continue;
        if (key === "className") node.className = String(value);
        else if (key === "dataset") for (const [k, v] of Object.entries(value)) node.dataset[k] = String(v);
        else if (["type", "title", "value", "min", "max", "low", "high"].includes(key)) node.setAttribute(key, String(value));
        else throw new Error(`el: property ${key} not allowed`);
      }
    }
    for (const child of children) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const json = (value) => (typeof value === "string" ? value : JSON.stringify(value, null, 2));
  const short = (id) => String(id).slice(0, 8);
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  // ---- the API ----

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  function token() {
    return sessionStorage.getItem(TOKEN_KEY);
  }

  function headers(extra) {
    return Object.assign({ Authorization: `Bearer ${token() || ""}` }, extra || {});
  }

  async function api(path, init) {
    const response = await fetch(path, Object.assign({ cache: "no-store" }, init || {}, {
      headers: headers(init && init.headers),
    }));
    let body = null;
    try {
      body = await response.json();
    } catch {
      body = null;
    }
    if (!response.ok) {
      const error = body && typeof body === "object" && body.error && typeof body.error === "object" ? body.error : {};
      const code = typeof error.code === "string" ? error.code : `http.${response.status}`;
      const message = typeof error.message === "string" ? error.message : response.statusText;
      if (response.status === 401) showLogin(`The server refused the token: ${message}`);
      throw new ApiError(response.status, code, message);
    }
    return body;
  }

  // ---- SSE over fetch (EventSource cannot send Authorization) ----

  class SseParser {
    constructor(onFrame) {
      this.onFrame = onFrame;
      this.buffer = "";
      this.reset();
    }
    reset() {
      this.data = [];
      this.event = "";
      this.id = null;
    }
    push(chunk) {
      this.buffer += chunk;
      for (;;) {
        const match = /\r\n|\r|\n/.exec(this.buffer);
        if (match === null) return;
        // a lone "\r" at the end may be the first half of "\r\n": wait for the next chunk
        if (match[0] === "\r" && match.index === this.buffer.length - 1) return;
        const line = this.buffer.slice(0, match.index);
        this.buffer = this.buffer.slice(match.index + match[0].length);
        this.line(line);
      }
    }
    line(line) {
      if (line === "") {
        if (this.data.length > 0) this.onFrame({ id: this.id, event: this.event || "message", data: this.data.join("\n") });
        this.reset();
        return;
      }
      if (line.startsWith(":")) return; // a comment (keep-alive)
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") this.data.push(value);
      else if (field === "event") this.event = value;
      else if (field === "id" && !value.includes("\0")) this.id = value;
    }
  }

  // Follows one run's events until its terminal event, reconnecting with Last-Event-ID when the connection drops.
  async function follow(runId, signal, onEvent) {
    let lastId = null;
    let delay = 250;
    while (!signal.aborted) {
      let terminal = false;
      try {
        const extra = { Accept: "text/event-stream" };
        if (lastId !== null) extra["Last-Event-ID"] = lastId;
        const response = await fetch(`/v1/runs/${encodeURIComponent(runId)}/events`, {
          headers: headers(extra),
          cache: "no-store",
          signal,
        });
        if (response.status === 401) {
          showLogin("The server refused the token.");
          return;
        }
        if (response.status === 404 || response.status === 403) return;
        if (!response.ok || response.body === null) throw new Error(`HTTP ${response.status}`);
        setConnection(lastId === null ? "live" : `live (resumed after ${lastId})`);
        delay = 250;
        const parser = new SseParser((frame) => {
          let data;
          try {
            data = JSON.parse(frame.data);
          } catch {
            return; // not a frame of the protocol: ignored
          }
          if (data === null || typeof data !== "object" || data.type !== frame.event) return;
          if (frame.id !== null) lastId = frame.id;
          if (TERMINAL_EVENTS.has(data.type) && data.run_id === runId) terminal = true;
          onEvent(data, frame.id);
        });
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.push(value);
        }
      } catch (error) {
        if (signal.aborted) return;
        setConnection(`disconnected (${error instanceof Error ? error.message : error}); reconnecting`);
      }
      if (terminal) {
        setConnection("run ended");
        return;
      }
      try {
        const run = await api(`/v1/runs/${encodeURIComponent(runId)}`);
        if (TERMINAL.has(run.status)) {
          setConnection("run ended");
          return;
        }
      } catch {
        // reconnect below
      }
      setConnection(`reconnecting${lastId === null ? "" : ` after ${lastId}`}`);
      await sleep(delay);
      delay = Math.min(delay * 2, 5000);
    }
  }

  // ---- state ----

  // approvals: the run's, from its stream (approval.requested / approval.resolved), by approval id in arrival order
  const state = { workspace: null, runId: null, abort: null, generation: 0, pending: null, events: 0, approvals: new Map(), approvalsKey: null, ended: false, diffs: new Map() };

  function setConnection(text) {
    $("connection").textContent = text;
  }

  function showLogin(message) {
    $("login").hidden = false;
    $("app").hidden = true;
    $("forget").hidden = true;
    $("login-error").textContent = message || "";
    closeRun();
  }

  function showError(where, error) {
    $(where).textContent = error instanceof Error ? error.message : String(error);
  }

  function setHash() {
    const params = new URLSearchParams();
    if (state.workspace) params.set("ws", state.workspace);
    if (state.runId) params.set("run", state.runId);
    history.replaceState(null, "", `#${params.toString()}`);
  }

  // ---- workspaces and runs ----

  async function loadWorkspaces() {
    const { workspaces } = await api("/v1/workspaces");
    const select = $("workspace");
    const wanted = new URLSearchParams(location.hash.slice(1));
    select.replaceChildren(...workspaces.map((w) => el("option", { value: w.id }, w.name ? `${w.name} (${w.id})` : w.id)));
    $("login").hidden = true;
    $("app").hidden = false;
    $("forget").hidden = false;
    const ws = workspaces.find((w) => w.id === wanted.get("ws")) || workspaces[0];
    if (!ws) {
      showError("app-error", "This token sees no workspace.");
      return;
    }
    select.value = ws.id;
    state.workspace = ws.id;
    await loadRuns();
    const run = wanted.get("run");
    if (run) await openRun(run);
  }

  // The prompt's first line, cut to 80 characters: the list shows what each run was asked (as text, never markup).
  function promptLine(goal) {
    const first = String(goal).trim().split("\n", 1)[0];
    return first.length > 80 ? `${first.slice(0, 79)}…` : first;
  }

  async function loadRuns() {
    if (!state.workspace) return;
    const words = $("run-search").value.trim();
    const query = words ? `?q=${encodeURIComponent(words)}` : "";
    const { runs } = await api(`/v1/workspaces/${encodeURIComponent(state.workspace)}/runs${query}`);
    const list = $("runs");
    list.replaceChildren(
      ...runs.map((run) => {
        const button = el(
          "button",
          { type: "button", className: "run-link", dataset: { runId: run.run_id } },
          el("span", { className: `status status-${run.status}` }, run.status),
          " ",
          el("span", { className: "agent" }, run.effective_agent_name || run.agent_name || run.trigger_type),
          " ",
          el("code", null, short(run.run_id)),
          run.goal ? el("span", { className: "goal", title: run.goal.slice(0, 2000) }, promptLine(run.goal)) : null,
          el("br"),
          el("small", null, new Date(run.created_at).toLocaleString()),
          ...(run.match ? [el("br"), el("small", { className: "match" }, run.match.snippet)] : []),
        );
        button.addEventListener("click", () => void openRun(run.run_id));
        return el("li", { className: run.run_id === state.runId ? "selected" : "" }, button);
      }),
    );
    if (runs.length === 0) {
      list.append(el("li", { className: "empty" }, words ? "No run matches these words." : "No runs in this workspace yet."));
    }
  }

  // ---- one run ----

  function closeRun() {
    if (state.abort) state.abort.abort();
    state.abort = null;
    state.runId = null;
    state.approvals = new Map();
    state.approvalsKey = null;
    state.ended = false;
    state.generation += 1;
  }

  async function openRun(runId) {
    closeRun();
    state.runId = runId;
    state.events = 0;
    setHash();
    $("run").hidden = false;
    $("timeline").replaceChildren();
    $("events").replaceChildren();
    $("event-count").textContent = "0";
    $("live").textContent = "";
    $("run-error").textContent = "";
    for (const li of $("runs").children) {
      const button = li.querySelector("button");
      li.className = button && button.dataset.runId === runId ? "selected" : "";
    }
    renderApprovals(runId);
    const controller = new AbortController();
    state.abort = controller;
    await refresh();
    // Everything after this comes from the stream (caught up from the log, then live): approvals included, so a
    // waiting run is not polled. The run record and its steps are re-read after an event, not on a timer.
    void follow(runId, controller.signal, (event, id) => onStreamEvent(runId, event, id));
  }

  function onStreamEvent(runId, event, id) {
    if (runId !== state.runId) return;
    if (event.type === "token") {
      $("live").textContent += event.text;
      return;
    }
    state.events += 1;
    $("event-count").textContent = String(state.events);
    const detail = event.name || event.kind || event.agent || event.tool_name || event.decision || (event.error && event.error.code) || "";
    $("events").append(el("li", null, el("code", null, id || "-"), " ", event.type, detail ? ` ${detail}` : ""));
    if (event.type === "final" || event.type === "step") $("live").textContent = "";
    if (event.type === "approval.requested" || event.type === "approval.resolved") onApproval(runId, event);
    if (event.type === "elicitation.requested" || event.type === "elicitation.resolved") onQuestion(runId, event);
    if (TERMINAL_EVENTS.has(event.type) && event.run_id === runId) {
      state.ended = true; // an approval still unanswered is moot now
      $("live").textContent = "";
      renderApprovals(runId);
      void loadRuns().catch(() => undefined);
    }
    scheduleRefresh();
  }

  // The stream's approval events, read field by field (the page trusts no shape it did not check).
  function onApproval(runId, event) {
    const text = (value) => (typeof value === "string" ? value : "");
    if (event.run_id !== runId || typeof event.approval_id !== "string" || event.approval_id === "") return;
    if (event.type === "approval.requested") {
      const choices = Array.isArray(event.choices) ? DECISIONS.filter((c) => event.choices.includes(c)) : [];
      const args = event.arguments !== null && typeof event.arguments === "object" ? event.arguments : {};
      state.approvals.set(event.approval_id, {
        approval_id: event.approval_id,
        tool: text(event.tool_name),
        arguments: args,
        reason: text(event.reason),
        suggested_rule: text(event.suggested_rule),
        choices,
        decision: null,
        answered_by: null,
      });
    } else {
      const known = state.approvals.get(event.approval_id);
      if (!known) return;
      known.decision = DECISIONS.includes(event.decision) ? event.decision : "answered";
      known.answered_by = text(event.answered_by);
    }
    renderApprovals(runId);
  }

  // An MCP server's question mid-call (elicitation.requested / .resolved), kept beside the approvals: same list,
  // same answer route, with a form for the server's requested_schema.
  function onQuestion(runId, event) {
    const text = (value) => (typeof value === "string" ? value : "");
    if (event.run_id !== runId || typeof event.elicitation_id !== "string" || event.elicitation_id === "") return;
    if (event.type === "elicitation.requested") {
      const schema = event.requested_schema !== null && typeof event.requested_schema === "object" ? event.requested_schema : {};
      state.approvals.set(event.elicitation_id, {
        kind: "elicitation",
        approval_id: event.elicitation_id,
        server: text(event.server),
        message: text(event.message),
        mode: event.mode === "url" ? "url" : "form",
        url: text(event.url),
        schema,
        decision: null,
        answered_by: null,
      });
    } else {
      const known = state.approvals.get(event.elicitation_id);
      if (!known) return;
      known.decision = ["accept", "decline", "cancel"].includes(event.action) ? event.action : "answered";
      known.answered_by = text(event.answered_by);
    }
    renderApprovals(runId);
  }

  function scheduleRefresh() {
    if (state.pending !== null) return;
    state.pending = setTimeout(() => {
      state.pending = null;
      void refresh();
    }, 100);
  }

  async function refresh() {
    const runId = state.runId;
    const generation = state.generation;
    if (!runId) return;
    try {
      const run = await api(`/v1/runs/${encodeURIComponent(runId)}`);
      const timeline = await stepList(runId, 0);
      showFileChanges(timeline, await fileChanges(runId), runId);
      if (generation !== state.generation) return; // another run was opened meanwhile
      renderRun(run);
      const shown = $("timeline");
      if (shown.textContent !== timeline.textContent || shown.childElementCount !== timeline.childElementCount) {
        timeline.id = "timeline";
        shown.replaceWith(timeline); // only when it changed: a re-read must not re-create what the user is reading
      }
      if (TERMINAL.has(run.status)) $("live").textContent = "";
    } catch (error) {
      if (generation === state.generation) showError("run-error", error);
    }
  }

  function renderRun(run) {
    $("run-title").replaceChildren(
      "Run ",
      el("code", null, run.run_id),
      " ",
      el("span", { className: `status status-${run.status}` }, run.status),
    );
    const meta = [
      ["agent", run.effective_agent_name || run.agent_name],
      ["trigger", run.trigger_ref ? `${run.trigger_type} (${run.trigger_ref})` : run.trigger_type],
      ["session", run.session_id],
      ["initiator", run.initiator_ref],
      ["model", run.metadata && run.metadata.model_ref],
      ["created", run.created_at],
      ["ended", run.ended_at],
      ["stop reason", run.stop_reason],
    ];
    $("run-meta").replaceChildren(
      ...meta.filter(([, v]) => v !== null && v !== undefined).flatMap(([k, v]) => [el("dt", null, k), el("dd", null, v)]),
    );
    $("run-error").textContent = run.error ? `${run.error.code}: ${run.error.message}` : "";
    const rows = Object.entries(run.budgets || {}).map(([name, { limit, used }]) => {
      const bar = limit ? el("meter", { min: 0, max: limit, value: Math.min(used, limit), high: limit * 0.8 }) : "no limit";
      return el("tr", { dataset: { budget: name } }, el("td", null, name), el("td", null, used), el("td", null, limit ?? "—"), el("td", null, bar));
    });
    $("budgets").querySelector("tbody").replaceChildren(...rows);
    $("final").textContent = run.final_text || "";
    const rewindable = typeof run.session_id === "string" && run.session_id !== "";
    if (state.rewindRun !== run.run_id) {
      state.rewindRun = run.run_id;
      state.rewindSession = rewindable ? run.session_id : null;
      resetRewind();
    }
    $("rewind-section").hidden = !rewindable;
  }

  // ---- rewind: preview (a dry run), then rewind; a file changed since is named and kept unless forced ----

  function resetRewind() {
    $("rewind-plan").replaceChildren();
    $("rewind-go").hidden = true;
    $("rewind-force-label").hidden = true;
    $("rewind-force").checked = false;
    $("rewind-result").textContent = "";
  }

  async function rewind(dryRun) {
    const runId = state.runId;
    const session = state.rewindSession;
    if (!runId || !session) return;
    const body = { run_id: runId, restore: $("rewind-what").value, dry_run: dryRun, force: $("rewind-force").checked };
    $("rewind-result").textContent = "";
    try {
      const answer = await api(`/v1/sessions/${encodeURIComponent(session)}/rewind`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      const changes = Array.isArray(answer.changes) ? answer.changes : [];
      const items = changes.map((c) =>
        el("li", { className: c.changed_since ? "rewind-file changed-since" : "rewind-file", dataset: { path: String(c.path) } },
          `${dryRun ? "will " : ""}${String(c.action)}${dryRun ? "" : "d"} `, el("code", null, String(c.path)),
          c.changed_since ? " (changed since by someone else)" : ""),
      );
      if (answer.conversation) items.push(el("li", { className: "rewind-conversation" }, `${dryRun ? "will rewind" : "rewound"} the conversation to before this run`));
      $("rewind-plan").replaceChildren(...items);
      if (answer.nothing_to_do) {
        $("rewind-result").textContent = "Nothing to rewind: the files and the conversation are as they were.";
        $("rewind-go").hidden = true;
        return;
      }
      const conflicts = Array.isArray(answer.conflicts) ? answer.conflicts : [];
      $("rewind-force-label").hidden = conflicts.length === 0;
      $("rewind-go").hidden = !dryRun;
      if (!dryRun) $("rewind-result").textContent = `Rewound ${changes.length} file(s)${answer.conversation ? " and the conversation" : ""}.`;
    } catch (error) {
      showError("rewind-result", error);
    }
  }

  function approvalStatus(a) {
    if (a.decision !== null) return "answered";
    return state.ended ? "unanswered" : "pending";
  }

  function renderApprovals(runId) {
    const approvals = [...state.approvals.values()];
    const key = JSON.stringify([runId, state.ended, approvals]);
    if (key === state.approvalsKey) return; // unchanged: keep the buttons the user may be about to click
    state.approvalsKey = key;
    $("approvals-section").hidden = approvals.length === 0;
    const said = { pending: "waiting for an answer", unanswered: "not answered: the run ended" };
    $("approvals").replaceChildren(
      ...approvals.map((a) => {
        const status = approvalStatus(a);
        if (a.kind === "elicitation") return questionItem(runId, a, status, said);
        const item = el(
          "li",
          { className: `approval approval-${status}`, dataset: { approvalId: a.approval_id } },
          el("strong", null, a.tool),
          " ",
          el("span", { className: "status" }, said[status] || `${a.decision} by ${a.answered_by}`),
          el("pre", { className: "arguments" }, json(a.arguments)),
          a.reason ? el("p", { className: "reason" }, a.reason) : null,
          a.suggested_rule ? el("p", null, "rule: ", el("code", null, a.suggested_rule)) : null,
        );
        if (status === "pending") {
          const labels = { allow_once: "Allow", allow_always: "Always allow", deny: "Deny" };
          const buttons = el("div", { className: "buttons" });
          for (const choice of a.choices) {
            const button = el("button", { type: "button", className: `answer answer-${choice}`, dataset: { decision: choice } }, labels[choice]);
            button.addEventListener("click", () => void answer(runId, a.approval_id, choice, buttons));
            buttons.append(button);
          }
          item.append(buttons);
        }
        return item;
      }),
    );
  }

  // The form of an MCP server's question: one field per property of its requested_schema (text, number, a
  // checkbox for a boolean, a list for an enum, a multiple list for an array of enum values). The server's text
  // is shown as text; the answer is checked again by the server (a field that does not fit is named in the error).
  function questionItem(runId, q, status, said) {
    const item = el(
      "li",
      { className: `approval approval-${status}`, dataset: { approvalId: q.approval_id } },
      el("strong", null, `MCP server ${q.server} asks`),
      " ",
      el("span", { className: "status" }, said[status] || `${q.decision} by ${q.answered_by}`),
      el("p", { className: "reason" }, q.message),
      q.mode === "url" && q.url ? el("p", null, "open: ", el("code", null, q.url)) : null,
    );
    if (status !== "pending") return item;
    const props = q.schema.properties !== null && typeof q.schema.properties === "object" ? q.schema.properties : {};
    const required = Array.isArray(q.schema.required) ? q.schema.required : [];
    const fields = el("div", { className: "question-fields" });
    if (q.mode === "form") {
      for (const [name, raw] of Object.entries(props).slice(0, 30)) {
        const spec = raw !== null && typeof raw === "object" ? raw : {};
        const options = Array.isArray(spec.enum) ? spec.enum : Array.isArray(spec.oneOf) ? spec.oneOf.map((o) => o && o.const) : null;
        const items = spec.items !== null && typeof spec.items === "object" ? spec.items : {};
        let input;
        if (spec.type === "array") {
          input = el("select", { dataset: { field: name, kind: "array" } });
          input.multiple = true;
          const values = Array.isArray(items.enum) ? items.enum : Array.isArray(items.anyOf) ? items.anyOf.map((o) => o && o.const) : [];
          for (const v of values) input.append(el("option", { value: String(v) }, String(v)));
        } else if (options) {
          input = el("select", { dataset: { field: name, kind: "enum" } });
          if (!required.includes(name)) input.append(el("option", { value: "" }, ""));
          for (const v of options) input.append(el("option", { value: String(v) }, String(v)));
        } else if (spec.type === "boolean") {
          input = el("input", { type: "checkbox", dataset: { field: name, kind: "boolean" } });
          if (spec.default === true) input.checked = true;
        } else if (spec.type === "number" || spec.type === "integer") {
          input = el("input", { type: "number", dataset: { field: name, kind: spec.type } });
        } else {
          input = el("input", { type: "text", dataset: { field: name, kind: "string" } });
        }
        const title = typeof spec.title === "string" ? spec.title : name;
        fields.append(el("label", { className: "question-field" }, `${title}${required.includes(name) ? " *" : ""} `, input));
      }
    }
    const buttons = el("div", { className: "buttons" });
    const labels = { accept: q.mode === "url" ? "Done" : "Submit", decline: "Decline", cancel: "Cancel" };
    for (const choice of ["accept", "decline", "cancel"]) {
      const button = el("button", { type: "button", className: `answer answer-${choice}`, dataset: { decision: choice } }, labels[choice]);
      button.addEventListener("click", () => {
        const content = choice === "accept" && q.mode === "form" ? formContent(fields, required) : undefined;
        void answer(runId, q.approval_id, choice, buttons, content);
      });
      buttons.append(button);
    }
    item.append(fields, buttons);
    return item;
  }

  function formContent(fields, required) {
    const content = {};
    for (const input of fields.querySelectorAll("[data-field]")) {
      const name = input.dataset.field;
      const kind = input.dataset.kind;
      if (kind === "boolean") content[name] = input.checked;
      else if (kind === "array") content[name] = [...input.selectedOptions].map((o) => o.value);
      else if (input.value === "" && !required.includes(name)) continue;
      else if (kind === "number" || kind === "integer") content[name] = input.value === "" ? input.value : Number(input.value);
      else content[name] = input.value;
    }
    return content;
  }

  async function answer(runId, approvalId, decision, buttons, content) {
    for (const b of buttons.querySelectorAll("button")) b.disabled = true;
    try {
      await api(`/v1/runs/${encodeURIComponent(runId)}/approvals/${encodeURIComponent(approvalId)}`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(content === undefined ? { decision } : { decision, content }),
      });
    } catch (error) {
      showError("run-error", error);
      for (const b of buttons.querySelectorAll("button")) b.disabled = false; // e.g. a 403: the buttons stay usable
    }
    // the stream's approval.resolved takes the buttons away (here, or in every other page showing the run)
  }

  // ---- the timeline: the run's steps, child runs nested under the step that started them ----

  async function stepList(runId, depth) {
    const { steps } = await api(`/v1/runs/${encodeURIComponent(runId)}/steps`);
    const list = el("ol", { className: depth === 0 ? "timeline" : "timeline nested" });
    for (const step of steps) list.append(await stepItem(step, depth));
    if (steps.length === 0) list.append(el("li", { className: "empty" }, "No steps yet."));
    return list;
  }

  // each tool call's file changes (its FilesChanged facts: created / modified / deleted), from the run's events
  const MAX_EVENT_PAGES = 20;

  async function fileChanges(runId) {
    const byCall = new Map();
    let after = 0;
    for (let page = 0; page < MAX_EVENT_PAGES; page++) {
      const { events, next } = await api(`/v1/runs/${encodeURIComponent(runId)}/events?after=${after}`);
      if (!Array.isArray(events) || events.length === 0) break;
      for (const event of events) {
        if (event.event_type !== "FilesChanged" || !event.payload || typeof event.payload.tool_call_id !== "string") continue;
        const changes = Array.isArray(event.payload.changes) ? event.payload.changes : [];
        byCall.set(event.payload.tool_call_id, [...(byCall.get(event.payload.tool_call_id) || []), ...changes]);
      }
      if (typeof next !== "number" || next <= after) break;
      after = next;
    }
    return byCall;
  }

  function showFileChanges(timeline, byCall, runId) {
    for (const item of timeline.querySelectorAll("li[data-tool-call-id]")) {
      const callId = item.dataset.toolCallId;
      const changes = byCall.get(callId) || [];
      if (changes.length === 0) continue;
      const kind = (c) => (c.before == null ? "created" : c.after == null ? "deleted" : "modified");
      const button = el("button", { type: "button", className: "show-diff", title: "the call's file changes as diffs (GET /v1/runs/{id}/diff)" }, "diff");
      const pane = el("div", { className: "file-diffs" });
      button.addEventListener("click", () => void toggleDiff(runId, callId, pane));
      item.append(
        el("div", { className: "label" }, "files changed"),
        el("ul", { className: "files-changed" }, ...changes.map((c) => el("li", { className: `file-${kind(c)}`, dataset: { path: String(c.path) } }, `${kind(c)} `, el("code", null, String(c.path))))),
        button,
        pane,
      );
      const open = state.diffs.get(`${runId} ${callId}`);
      if (open === DIFF_LOADING) pane.replaceChildren(loadingLabel());
      else if (open) renderDiff(pane, open); // the timeline was redrawn: the diff stays open
    }
  }

  // a tool call's file changes as diffs, on demand; shown as text (the workspace's and the model's: never markup).
  // While the diff loads the key holds DIFF_LOADING, so a refresh that redraws the timeline meanwhile keeps the
  // pane loading, and the answer goes to the pane on the page then, not to the one the click came from (replaced).
  const DIFF_LOADING = Symbol("loading");

  function loadingLabel() {
    return el("div", { className: "label" }, "loading the diff…");
  }

  function currentPane(callId, clicked) {
    if (clicked.isConnected) return clicked;
    for (const item of $("timeline").querySelectorAll("li[data-tool-call-id]")) {
      if (item.dataset.toolCallId === callId) return item.querySelector(":scope > .file-diffs") || clicked;
    }
    return clicked;
  }

  async function toggleDiff(runId, callId, pane) {
    const key = `${runId} ${callId}`;
    if (state.diffs.has(key)) {
      state.diffs.delete(key);
      pane.replaceChildren();
      return;
    }
    state.diffs.set(key, DIFF_LOADING);
    pane.replaceChildren(loadingLabel());
    try {
      const found = await api(`/v1/runs/${encodeURIComponent(runId)}/diff?tool_call_id=${encodeURIComponent(callId)}`);
      if (state.diffs.get(key) !== DIFF_LOADING) return; // closed again meanwhile
      state.diffs.set(key, found);
      renderDiff(currentPane(callId, pane), found);
    } catch (error) {
      if (state.diffs.get(key) === DIFF_LOADING) state.diffs.delete(key);
      currentPane(callId, pane).replaceChildren(el("div", { className: "error" }, `The diff could not be read: ${error.message}`));
    }
  }

  function renderDiff(pane, found) {
    const files = Array.isArray(found.files) ? found.files : [];
    pane.replaceChildren(
      ...files.map((f) =>
        el(
          "div",
          { className: "file-diff", dataset: { path: String(f.path) } },
          el("div", { className: "label" }, `${f.action} `, el("code", null, String(f.path))),
          typeof f.diff === "string" ? el("pre", { className: "diff" }, f.diff) : null,
          typeof f.note === "string" ? el("div", { className: "note" }, f.note) : null,
        ),
      ),
      ...(Array.isArray(found.cut) ? found.cut : []).map((c) => el("div", { className: "note cut" }, String(c))),
    );
  }

  async function stepItem(step, depth) {
    const input = step.input || {};
    const output = step.output || {};
    const labels = { model_call: "model call", tool_call: "tool call", agent_delegate: "subagent", agent_switch: "agent switch" };
    const item = el(
      "li",
      { className: `step step-${step.step_type} step-${step.status}`, dataset: { seq: step.seq, stepType: step.step_type, toolCallId: step.step_type === "tool_call" && typeof input.tool_call_id === "string" ? input.tool_call_id : "" } },
      el(
        "div",
        { className: "step-head" },
        el("span", { className: "kind" }, labels[step.step_type] || step.step_type),
        " ",
        el("strong", { className: "name" }, step.name || ""),
        " ",
        el("span", { className: `status status-${step.status}` }, step.status),
        step.agent_name ? el("span", { className: "by" }, ` · ${step.agent_name}`) : null,
      ),
    );
    if (step.step_type === "model_call") {
      if (output.text) item.append(el("pre", { className: "text" }, output.text));
      for (const call of output.tool_calls || []) {
        item.append(el("div", { className: "call" }, "calls ", el("code", null, call.name || call.tool_name || "?"), el("pre", { className: "arguments" }, json(call.arguments ?? call.input ?? {}))));
      }
      const usage = output.usage;
      if (usage) item.append(el("small", { className: "usage" }, `tokens in ${usage.input_tokens ?? "?"} · out ${usage.output_tokens ?? "?"}${output.stop_reason ? ` · ${output.stop_reason}` : ""}`));
      if (output.error) item.append(el("p", { className: "error" }, json(output.error)));
      if (Array.isArray(input.failed_attempts) && input.failed_attempts.length) item.append(el("small", null, `${input.failed_attempts.length} failed attempt(s) retried`));
    } else if (step.step_type === "tool_call") {
      item.append(el("div", { className: "label" }, "arguments"), el("pre", { className: "arguments" }, json(input.arguments ?? {})));
      for (const decision of output.hook_decisions || []) item.append(el("p", { className: "hook" }, "hook decision: ", el("code", null, json(decision))));
      if (output.approval) item.append(el("p", { className: "approval-note" }, "approval: ", el("code", null, output.approval)));
      if (step.output) {
        item.append(el("div", { className: "label" }, output.is_error ? "error result" : "result"), el("pre", { className: output.is_error ? "result error" : "result" }, json(output.content ?? "")));
        if (output.error) item.append(el("p", { className: "error" }, json(output.error)));
      }
    } else if (step.step_type === "agent_delegate") {
      const child = input.child_run_id || output.child_run_id;
      if (child) {
        item.append(el("div", { className: "label" }, "child run ", el("code", null, child)));
        if (depth < MAX_DEPTH) {
          try {
            item.append(await stepList(child, depth + 1));
          } catch (error) {
            item.append(el("p", { className: "error" }, `child run: ${error instanceof Error ? error.message : error}`));
          }
        }
      }
    } else if (step.step_type === "agent_switch") {
      item.append(el("p", null, `${input.from_agent ?? step.agent_name ?? "?"} → ${output.to_agent ?? step.name ?? "?"}`, input.reason ? ` (${input.reason})` : ""));
    }
    return item;
  }

  // ---- start ----

  function init() {
    $("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const value = $("token").value.trim();
      if (!value) return;
      sessionStorage.setItem(TOKEN_KEY, value);
      $("token").value = "";
      $("login-error").textContent = "";
      loadWorkspaces().catch((error) => showError("login-error", error));
    });
    $("forget").addEventListener("click", () => {
      sessionStorage.removeItem(TOKEN_KEY);
      showLogin("");
    });
    $("rewind-preview").addEventListener("click", () => void rewind(true));
    $("rewind-go").addEventListener("click", () => void rewind(false));
    $("rewind-what").addEventListener("change", resetRewind);
    $("workspace").addEventListener("change", () => {
      closeRun();
      $("run").hidden = true;
      state.workspace = $("workspace").value;
      setHash();
      loadRuns().catch((error) => showError("app-error", error));
    });
    $("refresh-runs").addEventListener("click", () => void loadRuns().catch((error) => showError("app-error", error)));
    $("search-form").addEventListener("submit", (event) => {
      event.preventDefault();
      loadRuns().catch((error) => showError("app-error", error));
    });
    if (token()) loadWorkspaces().catch((error) => showError("login-error", error));
    else showLogin("");
  }

  init();
})();
