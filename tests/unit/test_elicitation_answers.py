"""An answer to an MCP server's question checked against the server's form (`mcp.elicitation.checked_content`), as
the approvals API and `bearagent approvals answer` check it: every field type MCP's elicitation schema allows, each
refusal naming the field."""

from __future__ import annotations

import pytest

from bearagent.domain._base import JsonValue
from bearagent.mcp.elicitation import checked_content

FORM: dict[str, JsonValue] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 5},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1},
        "notify": {"type": "boolean"},
        "region": {"type": "string", "enum": ["eu", "us"]},
        "tier": {"type": "string", "oneOf": [{"const": "gold", "title": "Gold"}, {"const": "free", "title": "Free"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
    },
    "required": ["name", "replicas"],
}


def test_a_fitting_answer_is_kept_and_integers_are_whole() -> None:
    given: dict[str, JsonValue] = {
        "name": "web",
        "replicas": 3.0,
        "ratio": 0.5,
        "notify": False,
        "region": "eu",
        "tier": "gold",
        "tags": ["a", "b"],
    }
    assert checked_content("accept", given, FORM) == {**given, "replicas": 3}
    assert checked_content("accept", {"name": "ab", "replicas": 1, "region": None}, FORM) == {
        "name": "ab",
        "replicas": 1,
    }


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ({"replicas": 1}, "'name': required"),
        ({"name": "web"}, "'replicas': required"),
        ({"name": "web", "replicas": 1, "force": True}, "'force': the form has no such field"),
        ({"name": "w", "replicas": 1}, "'name': at least 2"),
        ({"name": "website", "replicas": 1}, "'name': at most 5"),
        ({"name": 5, "replicas": 1}, "'name': expected text"),
        ({"name": "web", "replicas": 11}, "'replicas': 11 is above the maximum 10"),
        ({"name": "web", "replicas": 0}, "'replicas': 0 is below the minimum 1"),
        ({"name": "web", "replicas": 1.5}, "'replicas': expected a whole number"),
        ({"name": "web", "replicas": True}, "'replicas': expected a number"),
        ({"name": "web", "replicas": "3"}, "'replicas': expected a number"),
        ({"name": "web", "replicas": 1, "notify": "yes"}, "'notify': expected true or false"),
        ({"name": "web", "replicas": 1, "region": "mars"}, "'region': 'mars' is not one of"),
        ({"name": "web", "replicas": 1, "tier": "platinum"}, "'tier': 'platinum' is not one of"),
        ({"name": "web", "replicas": 1, "tags": ["c"]}, "'tags': 'c' is not one of"),
        ({"name": "web", "replicas": 1, "tags": "a"}, "'tags': expected a list of strings"),
    ],
)
def test_an_answer_that_does_not_fit_names_the_field(content: dict[str, JsonValue], named: str) -> None:
    with pytest.raises(ValueError, match="field ") as caught:
        checked_content("accept", content, FORM)
    assert named in str(caught.value)


def test_only_an_accepted_form_carries_content() -> None:
    assert checked_content("decline", None, FORM) is None
    assert checked_content("cancel", {}, FORM) is None
    with pytest.raises(ValueError, match="only an accepted form carries content"):
        checked_content("decline", {"name": "web"}, FORM)
    assert checked_content("accept", None, None, url_mode=True) is None
    with pytest.raises(ValueError, match="to a URL"):
        checked_content("accept", {"x": 1}, None, url_mode=True)
    with pytest.raises(ValueError, match="content: expected an object"):
        checked_content("accept", ["name"], FORM)
