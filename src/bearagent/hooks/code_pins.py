"""Hooks run the code that was trusted: what each command hook reaches in the workspace is pinned when a session's
hooks are wired, and checked again right before each execution, so a file the model wrote during the run (a script
the hook runs, a module it imports) makes the hook refuse to run instead of running the model's code unconfined
(issue 28; the reach itself is `trust/reach.py`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bearagent.domain.specs import HookHandlerSpec, HookMatcherSpec
from bearagent.hooks.protocol import HandlerFailure

if TYPE_CHECKING:
    from bearagent.sandbox.settings import SandboxSettings
    from bearagent.trust.reach import CodePins


def pin_code(
    groups: Sequence[HookMatcherSpec], root: Path, env: Mapping[str, str], sandbox: SandboxSettings | None
) -> CodePins | None:
    """What each command hook reaches in the workspace now (the run's start: trusted, or the user's own), unless
    the user's `sandbox.pin_hook_code: false` turns the re-check off."""
    commands = [spec for group in groups for spec in group.hooks if spec.type == "command" and spec.command]
    if not commands or (sandbox is not None and not sandbox.pin_hook_code):
        return None
    from bearagent.hooks.runners import command_argv
    from bearagent.trust.reach import CodePins

    pins = CodePins(root, dict(env))
    for spec in commands:
        pins.pin(command_argv(spec, root))
    return pins


def code_changed(pins: CodePins | None, spec: HookHandlerSpec, root: Path) -> HandlerFailure | None:
    """The refusal when a file the command hook reaches changed since the run started (so the model may have
    written it), checked right before each execution; None when it may run."""
    if pins is None or spec.type != "command" or not spec.command:
        return None
    from bearagent.hooks.runners import command_argv

    changed = pins.changed(command_argv(spec, root))
    if changed is None:
        return None
    return HandlerFailure(
        "code_changed",
        f"was not run: {changed} (which this hook runs or reaches) changed during the run, perhaps written by the "
        "model, so the hook would no longer run the code that was trusted. To fix: review the change, then start a "
        "new run (the workspace asks for trust again if it is a workspace hook); or set `sandbox: {pin_hook_code: "
        "false}` in your user config to run hooks without this check",
    )
