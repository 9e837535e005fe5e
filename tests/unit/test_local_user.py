"""The local user's name for what a person reads (an answer's `cli:NAME`, a cancel's reason) never fails."""

from __future__ import annotations

import os
import pwd

import pytest

from bearagent.service.run_types import local_initiator, local_user_name


def test_the_name_comes_from_the_environment_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOGNAME", "ada")
    assert local_user_name() == "ada"


def test_a_uid_without_a_name_is_named_by_its_number_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    # a container's uid with no entry in /etc/passwd and no LOGNAME/USER: getpass.getuser() raises there
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.delenv(name, raising=False)

    def no_entry(uid: int) -> pwd.struct_passwd:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    assert local_user_name() == f"uid {os.getuid()}"
    assert local_initiator() == f"local:{os.getuid()}"  # the recorded initiator never needed the name
