"""The run choices added to `RunRequest` for issue 32 (`disallowed_tools`, `system_prompt`, `append_system_prompt`,
`add_dirs`) are sealed when set and left out of the sealed text while unset, so a record sealed before they existed
still verifies, and one that sets them cannot be widened afterwards."""

from __future__ import annotations

from pathlib import Path

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.ids import RunId
from bearagent.domain.run_events import RUN_CHOICE_FIELDS, RunRequest
from bearagent.trust.run_seals import _request_material, sealed_request  # pyright: ignore[reportPrivateUsage]
from bearagent.trust.seals import Sealer


def test_unset_choices_leave_the_sealed_text_as_it_was() -> None:
    old_shape = RunRequest(allowed_tools=("Read",)).model_dump(mode="json", exclude={"seal", *RUN_CHOICE_FIELDS})
    assert _request_material(RunRequest(allowed_tools=("Read",))) == old_shape
    chosen = _request_material(RunRequest(add_dirs=("/srv/shared",), system_prompt="Be brief."))
    assert chosen["add_dirs"] == ["/srv/shared"] and chosen["system_prompt"] == "Be brief."


def test_a_choice_added_after_sealing_does_not_verify(tmp_path: Path) -> None:
    sealer = Sealer(tmp_path)
    run_id = RunId("00000000-0000-4000-8000-000000000001")
    kwargs = {
        "session_id": None,
        "goal": "go",
        "agent_name": "main",
        "budgets": BudgetLimits(),
        "trigger_type": "message",
        "trigger_ref": None,
    }
    sealed = sealed_request(sealer, run_id, request=RunRequest(disallowed_tools=("Bash",)), **kwargs)  # type: ignore[arg-type]
    again = sealed_request(sealer, run_id, request=sealed.model_copy(update={"seal": None}), **kwargs)  # type: ignore[arg-type]
    assert again.seal == sealed.seal
    widened = sealed_request(
        sealer,
        run_id,
        request=sealed.model_copy(update={"seal": None, "add_dirs": ("/etc",), "disallowed_tools": ()}),
        **kwargs,  # type: ignore[arg-type]
    )
    assert widened.seal != sealed.seal
