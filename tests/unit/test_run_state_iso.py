"""`run_state.iso` keeps the texts of UTC datetimes it formatted, and `remember_iso` the text a datetime was parsed
from (issue 22): neither may ever change what `iso` returns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from bearagent.runtime.run_state import iso, parse_time


def _reference(dt: datetime) -> str:
    text = dt.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


_zones: st.SearchStrategy[timezone | None] = st.sampled_from(
    [UTC, None, timezone(timedelta(hours=2)), timezone(timedelta(0)), timezone(-timedelta(hours=5))]
)


def _in_zone(dt: datetime, tz: timezone | None) -> datetime:
    return dt.replace(tzinfo=tz)


_times: st.SearchStrategy[datetime] = st.builds(
    _in_zone,
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    _zones,
)


@settings(max_examples=300, deadline=None)
@given(times=st.lists(_times, min_size=1, max_size=20))
def test_iso_is_what_isoformat_gives(times: list[datetime]) -> None:
    for dt in times + times:
        assert iso(dt) == _reference(dt)
        # an equal instant in another zone keeps its own spelling
        other = dt.astimezone(timezone(timedelta(hours=3))) if dt.tzinfo is not None else dt
        assert iso(other) == _reference(other)


_texts = st.one_of(
    _times.map(lambda dt: dt.isoformat()),
    _times.map(iso),
    st.sampled_from(
        [
            "2026-08-18T02:00:03Z",
            "2026-08-18T02:00:03.000000Z",
            "2026-08-18T02:00:03.500000Z",
            "2026-08-18 02:00:03Z",
            "2026-08-18T02:00:03+00:00",
            "2026-08-18T02:00Z",
            "20260818T020003Z",
        ]
    ),
)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_texts, min_size=1, max_size=10))
def test_parse_time_never_changes_what_iso_returns(texts: list[str]) -> None:
    for text in texts:
        parsed = parse_time(text)
        assert parsed == datetime.fromisoformat(text) and parsed.tzinfo == datetime.fromisoformat(text).tzinfo
        assert iso(parsed) == _reference(parsed)


def test_a_parsed_time_hands_its_text_on() -> None:
    for text in ("2026-08-18T02:00:03Z", "2026-08-18T02:00:03.123456Z", "0999-01-01T00:00:00Z"):
        assert iso(parse_time(text)) == text
    for text in ("2026-08-18T02:00:03.000000Z", "2026-08-18 02:00:03Z", "2026-08-18T02:00:03+00:00"):
        parsed = parse_time(text)
        assert iso(parsed) == _reference(parsed) != text
