"""``basil serve``: run the service (API over HTTPS and the scheduled jobs) until SIGTERM or Ctrl-C."""

from __future__ import annotations

import sys

import click

from basil.cli.config import config_option
from basil.config import load_config, runtime_problems
from basil.errors import raise_if_problems


@click.command("serve")
@config_option
def serve(config_path: str | None) -> None:
    """Serve the REST API over HTTPS and run the scheduled jobs, in this one process.

    \b
    The certificate is the configured one (server.tls.cert/key) or a self-signed one kept in
    server.tls.dir; its SHA-1 and SHA-256 thumbprints are printed for the plugin's registration.
    SIGTERM or Ctrl-C stops it gracefully: no new request or move starts, running ones finish.
    """
    config = load_config(config_path)
    raise_if_problems(runtime_problems(config), "configuration")
    # Imported here: the other commands need neither Flask nor the scheduler.
    from basil.app import Service  # noqa: PLC0415
    from basil.serve import run  # noqa: PLC0415

    sys.exit(run(config, Service.from_config))
