from click.testing import CliRunner

from bearagent import __version__
from bearagent.cli import main


def test_version_prints_the_package_version() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output


def test_help_lists_usage() -> None:
    result = CliRunner().invoke(main, ["--help"], prog_name="bearagent")
    assert result.exit_code == 0
    assert "Usage: bearagent" in result.output
