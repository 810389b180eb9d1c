"""The ``basil`` command line: one group, with each area's commands in a module of its own."""

from __future__ import annotations

import importlib
import logging
import sys

import click

from basil import __version__
from basil.errors import BasilError

# Each area's commands live in a module of their own, imported when the command is used (so that
# `basil --version` or `basil recommend` does not load the store, the web layer and the vSphere SDKs):
# command name -> (module, attribute).
COMMANDS: dict[str, tuple[str, str]] = {
    "recommend": ("basil.cli.recommend", "recommend"),
    "place": ("basil.cli.recommend", "place"),
    "model": ("basil.cli.recommend", "model"),
    "srp": ("basil.cli.srp", "srp"),
    "vcenter": ("basil.cli.vcenter", "vcenter"),
    "config": ("basil.cli.config", "config_group"),
    "db": ("basil.cli.db", "db_group"),
    "token": ("basil.cli.db", "token_group"),
    "serve": ("basil.cli.serve", "serve"),
    "capacity": ("basil.cli.capacity", "capacity"),
    "whatif": ("basil.cli.whatif", "whatif"),
}


class BasilGroup(click.Group):
    """A click group that turns Basil's own errors into a message and exit status 2, no traceback,
    and loads each command's module when the command is asked for (:data:`COMMANDS`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            module, attribute = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(module), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{module}.{attribute} is not a click command")
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BasilError as err:
            click.echo(f"error: {err.message}", err=True)
            sys.exit(2)


@click.group(cls=BasilGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="basil")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def main(verbose: int) -> None:
    """Basil balances IO load across vSphere datastores and gives groups of VMs storage QoS.

    \b
    Offline (no vCenter needed):
      basil recommend --snapshot FILE      Storage vMotions that balance a pod's IO load
      basil place --snapshot FILE ...      rank datastores for a new virtual disk
      basil srp compute --pools ...        Storage Resource Pool reservations, limits, shares
      basil capacity --trace FILE ...      IO/s for a fraction of a trace's IOs within a bound
      basil whatif --input FILE            disks' IOPS and latency if consolidated on a datastore
    """
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
