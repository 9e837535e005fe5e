"""`domain.recent.remember`: a map keeps its latest `limit` entries, the one remembered longest ago forgotten first;
remembering a key again makes it the latest."""

from __future__ import annotations

from bearagent.domain.recent import remember


def test_the_oldest_entries_are_forgotten_beyond_the_limit() -> None:
    kept: dict[str, int] = {}
    for n in range(5):
        assert remember(kept, f"k{n}", n, 3) == n
    assert list(kept.items()) == [("k2", 2), ("k3", 3), ("k4", 4)]


def test_remembering_a_key_again_makes_it_the_latest_with_its_new_value() -> None:
    kept = {"a": 1, "b": 2, "c": 3}
    remember(kept, "a", 10, 3)
    assert list(kept.items()) == [("b", 2), ("c", 3), ("a", 10)]
    remember(kept, "d", 4, 3)
    assert list(kept) == ["c", "a", "d"]


def test_a_map_already_over_a_lower_limit_is_cut_to_it() -> None:
    kept = {n: n for n in range(10)}
    remember(kept, 10, 10, 4)
    assert list(kept) == [7, 8, 9, 10]
