"""Run references as people type them: a full run id, a unique prefix of one, or `last` (the newest run a caller
started: child runs of `Task`, action tools and hooks are created after their parent, so they are not what `last`
means). The rules are here once; stores only find run ids by prefix (`RunStorage.find_runs`)."""

from __future__ import annotations

from collections.abc import Sequence

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import RunId
from bearagent.ports import RunStorage

MATCH_LIMIT = 6
"""How many matches a prefix lookup asks for: enough to name five of them in the ambiguity error."""


def run_ref_prefix(ref: str) -> str | None:
    """The id prefix `ref` stands for, or None for `last`; `invalid_request.bad_run_ref` if it cannot be one."""
    text = ref.strip().lower()
    if text == "last":
        return None
    if not text or any(ch not in "0123456789abcdef-" for ch in text):
        raise BearAgentError(
            ErrorInfo.of(
                "invalid_request",
                "bad_run_ref",
                f"run reference {ref!r} is not a run id, a prefix of one or 'last'; copy an id from `bearagent runs list`",
            )
        )
    return text


def pick_run(ref: str, prefix: str | None, found: Sequence[RunId], where: str) -> RunId:
    """The one run `ref` names among `found` (the lookup of `prefix`, newest first), or a clear error."""
    if prefix is None:
        if not found:
            raise BearAgentError(
                ErrorInfo.of(
                    "not_found",
                    "no_runs",
                    f"there are no runs in {where} yet, so 'last' names nothing; start one with `bearagent run`",
                )
            )
        return found[0]
    if not found:
        raise BearAgentError(
            ErrorInfo.of(
                "not_found",
                "run",
                f"no run id starts with {ref!r} in {where}; list the runs with `bearagent runs list`",
            )
        )
    if len(found) > 1:
        ids = ", ".join(str(run_id) for run_id in found[:5])
        more = " and more" if len(found) > 5 else ""
        raise BearAgentError(
            ErrorInfo.of(
                "invalid_request",
                "ambiguous_run_ref",
                f"run reference {ref!r} matches several runs ({ids}{more}); type more characters of the id",
            )
        )
    return found[0]


async def resolve_run_ref(storage: RunStorage, ref: str, *, where: str = "this workspace") -> RunId:
    """A run id from a full id, a unique prefix of one, or `last`."""
    prefix = run_ref_prefix(ref)
    if prefix is None:
        found = await storage.find_runs("", top_level=True, limit=1)
    else:
        found = await storage.find_runs(prefix, limit=MATCH_LIMIT)
    return pick_run(ref, prefix, found, where)


__all__ = ["MATCH_LIMIT", "pick_run", "resolve_run_ref", "run_ref_prefix"]
