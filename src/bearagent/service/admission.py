"""Before anything runs: the checks that stop a run (guard files, trust, hooks) and what the user is told at its
start (shadowing agents, a capped permission mode, folded load warnings). Functions over a loaded workspace.

The one owner of admission: every entry that starts work (a run, a resume, `/compact`, replay, a new session over
HTTP, A2A or ACP) calls `admit` (through `WorkspaceRuntime.admit`, which adds the recovery scan where a run is
continued or started); `service/preflight.py` lists the same checks for `bearagent doctor`. The permission mode in
force is `mode_for`'s and the notices printed at a run's start are `notices`'."""

from __future__ import annotations

from pathlib import Path

from bearagent.config.diag_summary import run_start_lines
from bearagent.config.workspace import agent_sources
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.specs import AgentSpec
from bearagent.trust.modes import ModeInForce, mode_in_force
from bearagent.workspace import LoadedWorkspace


def admit(loaded: LoadedWorkspace, *, hooks: bool = True) -> None:
    """Refuse (raise the first `BearAgentError`) a workspace that may not run, in this order: guard files that did
    not load, trust, hooks that cannot run. `hooks=False` for what runs no hook (replay drives recorded turns;
    creating a session over HTTP or A2A records a row, and the run it later starts is admitted in full)."""
    check_guards(loaded)
    check_trust(loaded)
    if hooks:
        check_hooks(loaded)


def check_guards(loaded: LoadedWorkspace) -> None:
    """Fail closed: a config, `.mcp.json` or agent file that carries guards and did not load stops the run."""
    from bearagent.trust.guards import require_guards

    dirs = [s.directory for s in agent_sources(loaded.root, loaded.user_dir, compat=True) if s.directory]
    require_guards(loaded.diagnostics(include_tools=False), dirs)


def check_trust(loaded: LoadedWorkspace) -> None:
    """Refuse to run a workspace whose files would decide where requests and keys go, what code runs or what
    is allowed, until the user trusts it (`bearagent.trust`)."""
    from bearagent.trust import require_trust, workspace_trust_surface

    surface = workspace_trust_surface(loaded)
    if surface.is_empty:
        return
    require_trust(loaded.root, surface, env=loaded.env)


def check_hooks(loaded: LoadedWorkspace) -> None:
    """A hook that cannot run (missing or non-executable command, bad entry) must not silently disappear: a
    security gate would fail open. Such a workspace refuses to run until the hook entry is fixed."""
    if loaded.config.execution_policy == "none" or not loaded.hooks.has_errors:
        return
    errors = [d for d in loaded.hooks.diagnostics if d.severity == "error"]
    first = errors[0]
    raise BearAgentError(
        ErrorInfo.of(
            "configuration",
            "broken_hook",
            f"{len(errors)} hook entr{'y' if len(errors) == 1 else 'ies'} cannot run; first: {first.render()}",
        ),
        hint=first.fix or "fix the hook entries (`bearagent doctor` lists them), then run again",
    )


def check_model(loaded: LoadedWorkspace, agent: AgentSpec, model_override: str | None) -> None:
    """Refuse before anything is written (the store, a session, its lock, a transcript) an agent with no model to
    run (the agent's, else `default_model`; a `--model` is the plan's to check). The caller found the agent
    (`AgentPlans.require_agent`: an unknown one is refused there, also before anything is written)."""
    from bearagent.runtime.agent_model import resolve_agent_model

    if model_override is not None:  # the plan resolves it (and says what is wrong with it)
        return
    resolve_agent_model(agent, loaded.models, default_model=loaded.config.default_model)


def mode_for(loaded: LoadedWorkspace, agent: AgentSpec, *, flag: str | None = None) -> ModeInForce:
    """The permission mode the gate and the hooks see for `agent`, capped by the user's ceiling."""
    resolved = loaded.agents.resolved(agent.name)
    shadowed = [c.item for c in resolved.shadows] if resolved is not None else []
    config = loaded.config
    return mode_in_force(
        agent,
        workspace_mode=config.permission_mode,
        user_ceiling=config.permission_ceiling,
        shadowed=shadowed,
        flag=flag,
        bypass_disabled_by=config.bypass_disabled_by,
    )


def notices(loaded: LoadedWorkspace, agent_name: str | None = None, *, flag: str | None = None) -> list[str]:
    """One line each for what a user should know before a run starts: a workspace agent that replaces one of
    the user's own (or a plugin's), a permission mode the user's ceiling capped, and the load warnings (folded:
    `config/diag_summary.py`)."""
    out: list[str] = []
    for resolved in loaded.agents.entries():
        if resolved.item.level != "workspace":
            continue
        mine = [c for c in resolved.shadows if c.source.kind in ("user", "plugin")]
        if mine:
            out.append(
                f"note: the workspace's agent {resolved.name!r} ({_short(resolved.path, loaded.root)}) replaces "
                f"{'your own' if mine[0].source.kind == 'user' else 'the ' + mine[0].source.id} "
                f"({_short(mine[0].path, loaded.root)})"
            )
    agent = loaded.agents.get(agent_name or loaded.config.default_agent)
    if agent is not None:
        capped = mode_for(loaded, agent, flag=flag).capped
        if capped:
            out.append(f"note: {capped}")
    # every load warning (a misspelt `tool:`, an unsupported key), the same one of many files folded into one
    out.extend(run_start_lines(loaded.diagnostics(include_tools=False), loaded.root))
    return out


def _short(path: str, root: Path) -> str:
    """A path relative to the workspace, or with the home directory as `~`."""
    p = Path(path)
    try:
        return p.relative_to(root).as_posix()
    except ValueError:
        pass
    home = Path.home()
    try:
        return "~/" + p.relative_to(home).as_posix()
    except ValueError:
        return str(p)
