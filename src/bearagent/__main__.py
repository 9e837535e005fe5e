"""`python -m bearagent` = the `bearagent` command."""

from bearagent.cli import main

main(prog_name="bearagent")
