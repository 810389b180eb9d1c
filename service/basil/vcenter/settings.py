"""Where the vCenter connection settings come from: command-line values, BASIL_VCENTER_* variables, a file.

The file is the ``vcenters:`` list of Basil's config (``basil.yaml``); this small loader reads only
that list, so the command line works before the service's config module exists, which will then
call :func:`vcenters_from_config` with its parsed document. Passwords are never in the file: each
entry names an environment variable (``password_env``) or a file (``password_file``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from basil.errors import Problem, ValidationError, raise_if_problems
from basil.vcenter.connection import ConnectionParams, TLSOptions

ENV_PREFIX = "BASIL_VCENTER_"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True)
class NamedVCenter:
    name: str
    params: ConnectionParams


def _read_secret_file(path: str, where: str, problems: list[Problem]) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as err:
        problems.append(Problem(where, f"cannot read {path}: {err.strerror}"))
        return None


def vcenters_from_config(doc: Mapping[str, Any], env: Mapping[str, str] | None = None) -> list[NamedVCenter]:
    """The ``vcenters`` entries of a parsed config document; every problem is reported at once."""
    env = os.environ if env is None else env
    problems: list[Problem] = []
    entries = doc.get("vcenters")
    if not isinstance(entries, list) or not entries:
        raise ValidationError([Problem("vcenters", "must be a non-empty list")], "config")
    out: list[NamedVCenter] = []
    names: set[str] = set()
    for i, e in enumerate(entries):
        where = f"vcenters[{i}]"
        if not isinstance(e, Mapping):
            problems.append(Problem(where, "must be a mapping"))
            continue
        entry = _entry(e, where, env, problems)
        if entry.name in names:
            problems.append(Problem(f"{where}.name", f"{entry.name!r} is used twice"))
        names.add(entry.name)
        out.append(entry)
    raise_if_problems(problems, "config")
    return out


_ENTRY_KEYS = frozenset({"name", "server", "user", "password_env", "password_file", "tls"})


def _entry(e: Mapping[str, Any], where: str, env: Mapping[str, str], problems: list[Problem]) -> NamedVCenter:
    for key in sorted(set(e) - _ENTRY_KEYS):
        message = (
            "passwords are not written in the file: use password_env or password_file"
            if key == "password"
            else "unknown key"
        )
        problems.append(Problem(f"{where}.{key}", message))
    name = str(e.get("name") or "")
    if not name:
        problems.append(Problem(f"{where}.name", "required"))
    password = _password(e, where, env, problems)
    tls = _tls(e.get("tls") or {}, f"{where}.tls", problems)
    params = ConnectionParams(
        server=str(e.get("server") or ""), user=str(e.get("user") or "") or None, password=password, tls=tls
    )
    for p in params.validate():
        if p.field == "password" and password is None:
            continue  # already reported against password_env / password_file
        if p.field.startswith("tls."):
            continue  # reported by _tls with the right path
        problems.append(Problem(f"{where}.{p.field}", p.message))
    return NamedVCenter(name, params)


def _password(
    e: Mapping[str, Any], where: str, env: Mapping[str, str], problems: list[Problem]
) -> str | None:
    if "password_env" in e and "password_file" in e:
        problems.append(Problem(f"{where}.password_env", "give password_env or password_file, not both"))
        return None
    if "password_env" in e:
        var = str(e["password_env"])
        if var not in env:
            problems.append(Problem(f"{where}.password_env", f"environment variable {var} is not set"))
        return env.get(var)
    if "password_file" in e:
        return _read_secret_file(str(e["password_file"]), f"{where}.password_file", problems)
    problems.append(Problem(f"{where}.password_env", "required (or password_file)"))
    return None


def _tls(doc: Any, where: str, problems: list[Problem]) -> TLSOptions:
    if not isinstance(doc, Mapping):
        problems.append(Problem(where, "must be a mapping"))
        return TLSOptions()
    for key in sorted(set(doc) - {"verify", "ca_bundle", "thumbprint"}):
        problems.append(Problem(f"{where}.{key}", "unknown key"))
    verify = doc.get("verify", True)
    if not isinstance(verify, bool):
        problems.append(Problem(f"{where}.verify", "must be true or false"))
        verify = True
    tls = TLSOptions(
        verify=verify,
        ca_bundle=str(doc["ca_bundle"]) if doc.get("ca_bundle") else None,
        thumbprint=str(doc["thumbprint"]) if doc.get("thumbprint") else None,
    )
    problems.extend(tls.validate(where))
    return tls


def load_config_file(path: str | Path, env: Mapping[str, str] | None = None) -> list[NamedVCenter]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise ValidationError([Problem("config", f"cannot read {path}: {err.strerror}")], "config") from None
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        raise ValidationError([Problem("config", f"{path} is not valid YAML: {err}")], "config") from None
    if not isinstance(doc, Mapping):
        raise ValidationError([Problem("config", f"{path} must hold a mapping")], "config")
    return vcenters_from_config(doc, env)


def _env_bool(value: str, name: str, problems: list[Problem]) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v not in _FALSE:
        problems.append(Problem(name, f"must be true or false, got {value!r}"))
    return False


def resolve_connection(
    *,
    server: str | None = None,
    user: str | None = None,
    password: str | None = None,
    insecure: bool | None = None,
    ca_bundle: str | None = None,
    thumbprint: str | None = None,
    config: str | None = None,
    vcenter: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ConnectionParams:
    """Connection settings from, in order of precedence: arguments, BASIL_VCENTER_* variables, the file.

    With a config file, *vcenter* picks the entry by name (the first one when not given); values given
    as arguments or variables override that entry's.
    """
    env = os.environ if env is None else env
    problems: list[Problem] = []
    base: ConnectionParams | None = None
    config = config or env.get("BASIL_CONFIG")
    if config:
        entries = load_config_file(config, env)
        if vcenter is None:
            base = entries[0].params
        else:
            match = [e for e in entries if e.name == vcenter]
            if not match:
                names = ", ".join(e.name for e in entries)
                raise ValidationError(
                    [Problem("vcenter", f"no vCenter named {vcenter!r} in {config} ({names})")]
                )
            base = match[0].params

    def pick(arg: str | None, var: str, from_file: str | None) -> str | None:
        if arg is not None:
            return arg
        if f"{ENV_PREFIX}{var}" in env:
            return env[f"{ENV_PREFIX}{var}"]
        return from_file

    tls_base = base.tls if base is not None else TLSOptions()
    env_insecure = None
    if f"{ENV_PREFIX}INSECURE" in env:
        env_insecure = _env_bool(env[f"{ENV_PREFIX}INSECURE"], f"{ENV_PREFIX}INSECURE", problems)
    verify = not insecure if insecure else (not env_insecure if env_insecure is not None else tls_base.verify)
    tls = TLSOptions(
        verify=verify,
        ca_bundle=pick(ca_bundle, "CA_BUNDLE", tls_base.ca_bundle),
        thumbprint=pick(thumbprint, "THUMBPRINT", tls_base.thumbprint),
    )
    params = ConnectionParams(
        server=pick(server, "SERVER", base.server if base else None) or "",
        user=pick(user, "USER", base.user if base else None),
        password=pick(password, "PASSWORD", base.password if base else None),
        tls=tls,
    )
    if not params.server:
        problems.append(Problem("server", f"required: --server, {ENV_PREFIX}SERVER or a config file"))
    else:
        problems.extend(params.validate())
    raise_if_problems(problems, "vCenter connection")
    return params
