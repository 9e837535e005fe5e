"""Where `bearagent plugins install` installs: BearAgent's own interpreter, with uv when it is on PATH, else pip."""

from __future__ import annotations

from pathlib import Path

from bearagent.plugins.install import (
    detect_environment,
    distribution_of,
    install_command,
    is_protected,
    uninstall_command,
)


def test_the_kind_of_environment_is_detected(tmp_path: Path) -> None:
    tool = tmp_path / "uv" / "tools" / "bearagent"
    tool.mkdir(parents=True)
    (tool / "uv-receipt.toml").write_text("[tool]\n")
    found = detect_environment(
        executable=str(tool / "bin/python"), prefix=str(tool), base_prefix="/usr", which=lambda _: None
    )
    assert found.kind == "uv-tool" and found.uv is None and "uv tool environment" in found.describe()
    pipx = tmp_path / "pipx" / "venvs" / "bearagent"
    assert detect_environment(prefix=str(pipx), base_prefix="/usr", which=lambda _: None).kind == "pipx"
    assert detect_environment(prefix=str(tmp_path / "venv"), base_prefix="/usr", which=lambda _: None).kind == "venv"
    assert detect_environment(prefix="/usr", base_prefix="/usr", which=lambda _: None).kind == "system"


def test_uv_targets_bearagents_own_python_and_pip_is_the_fallback(tmp_path: Path) -> None:
    (tmp_path / "my-plugin").mkdir()
    with_uv = detect_environment(
        executable="/env/bin/python", prefix="/env", base_prefix="/usr", which=lambda _: "/bin/uv"
    )
    argv = install_command(with_uv, ["./my-plugin", "bearagent-foo"], upgrade=True, cwd=tmp_path)
    assert argv == [
        "/bin/uv",
        "pip",
        "install",
        "--python",
        "/env/bin/python",
        "--upgrade",
        str(tmp_path / "my-plugin"),
        "bearagent-foo",
    ]
    no_uv = detect_environment(executable="/env/bin/python", prefix="/env", base_prefix="/usr", which=lambda _: None)
    assert install_command(no_uv, ["./my-plugin"], editable=True, cwd=tmp_path) == [
        "/env/bin/python",
        "-m",
        "pip",
        "install",
        "-e",
        str(tmp_path / "my-plugin"),
    ]
    assert install_command(no_uv, ["./missing"], cwd=tmp_path)[-1] == "./missing"  # not a path that exists: as typed
    assert uninstall_command(no_uv, ["bearagent-guard"]) == [
        "/env/bin/python",
        "-m",
        "pip",
        "uninstall",
        "--yes",
        "bearagent-guard",
    ]
    assert uninstall_command(with_uv, ["x"]) == ["/bin/uv", "pip", "uninstall", "--python", "/env/bin/python", "x"]


def test_uninstall_names_and_what_is_protected() -> None:
    assert distribution_of("guard", {"guard": "bearagent-guard"}) == "bearagent-guard"
    assert distribution_of("bearagent-guard", {"guard": "bearagent-guard"}) == "bearagent-guard"
    assert is_protected("bearagent") and is_protected("Pluggy") and not is_protected("bearagent-guard")
