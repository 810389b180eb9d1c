"""The ``basil`` group itself: its version, its commands, loaded when asked for."""

from __future__ import annotations

import subprocess
import sys

import click
from click.testing import CliRunner

from basil import __version__
from basil.cli import COMMANDS, main


def test_version() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output == f"basil, version {__version__}\n"


def test_every_listed_command_loads_under_its_name() -> None:
    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert isinstance(command, click.Command), name
        assert command.name == name
    assert main.get_command(ctx, "no-such-command") is None


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0, result.output
    listed = result.output.split("Commands:", 1)[1]
    for name in COMMANDS:
        assert f"\n  {name} " in listed, name


def test_version_and_offline_commands_do_not_load_the_store_or_the_web_layer() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from basil.cli import main\n"
        "assert CliRunner().invoke(main, ['--version']).exit_code == 0\n"
        "assert CliRunner().invoke(main, ['recommend', '--help']).exit_code == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('flask', 'sqlalchemy', 'pyVmomi')))\n"
    )
    probe = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert probe.stdout.strip() == "[]", probe.stdout
