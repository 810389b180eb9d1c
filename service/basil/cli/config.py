"""``basil config``: check a configuration, show the effective one, print the default."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import NoReturn

import click
import yaml

from basil.config import default_config_text, load_config, runtime_problems, to_document
from basil.errors import Problem, ValidationError

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Configuration file (default: $BASIL_CONFIG, else the packaged default).",
)


@click.group("config")
def config_group() -> None:
    """Check and show Basil's configuration (basil.yaml plus BASIL_* environment overrides)."""


@config_group.command("check")
@config_option
@click.option("--offline", is_flag=True, help="Skip checks of secrets and files on this machine.")
def check(config_path: str | None, offline: bool) -> None:
    """Report every problem of the configuration at once; exit non-zero if there is any."""
    try:
        config = load_config(config_path)
    except ValidationError as err:
        _report(err.problems)
    problems = [] if offline else runtime_problems(config)
    if problems:
        _report(problems)
    source = config_path or os.environ.get("BASIL_CONFIG") or "(packaged default)"
    click.echo(
        f"{source}: ok ({len(config.vcenters)} vCenter(s), {len(config.pods)} pod(s), "
        f"store {config.store.url.split(':', 1)[0]})"
    )


def _report(problems: Sequence[Problem]) -> NoReturn:
    click.echo(f"configuration: {len(problems)} problem(s)", err=True)
    for p in problems:
        click.echo(f"  - {p}", err=True)
    raise SystemExit(1)


@config_group.command("show")
@config_option
def show(config_path: str | None) -> None:
    """Print the effective configuration (file plus environment) as YAML; secrets are named, never read."""
    config = load_config(config_path)
    click.echo(yaml.safe_dump(to_document(config), sort_keys=False), nl=False)


@config_group.command("default")
def default() -> None:
    """Print the packaged default configuration, a starting point for basil.yaml."""
    click.echo(default_config_text(), nl=False)
