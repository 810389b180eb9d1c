"""The ``basil`` command line: one group, with each area's commands in a module of its own."""

from __future__ import annotations

import logging
import sys

import click

from basil import __version__
from basil.errors import BasilError


class BasilGroup(click.Group):
    """A click group that turns Basil's own errors into a message and exit status 2, no traceback."""

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


# Each area's commands live in a module of their own and are registered here, once `main` exists.
from basil.cli.capacity import capacity  # noqa: E402
from basil.cli.config import config_group  # noqa: E402
from basil.cli.db import db_group, token_group  # noqa: E402
from basil.cli.recommend import model, place, recommend  # noqa: E402
from basil.cli.serve import serve  # noqa: E402
from basil.cli.srp import srp  # noqa: E402
from basil.cli.vcenter import vcenter  # noqa: E402
from basil.cli.whatif import whatif  # noqa: E402

for _command in (
    recommend,
    place,
    model,
    srp,
    vcenter,
    config_group,
    db_group,
    token_group,
    serve,
    capacity,
    whatif,
):
    main.add_command(_command)
