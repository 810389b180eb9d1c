"""Reading ``basil.yaml``: YAML → environment overrides → typed dataclasses → every problem at once.

The file is the one from ``--config``, else ``$BASIL_CONFIG``, else the packaged default (the lab on
localhost, SQLite under ``var/``). Environment overrides are ``BASIL_`` variables whose name holds a
double underscore between path segments: ``BASIL_STORE__URL``, ``BASIL_SCHEDULES__REBALANCE__CRON``,
``BASIL_VCENTERS__LAB__SERVER`` (a list item by its ``name``, or by position: ``BASIL_PODS__0__MODE``).
Values are read as YAML scalars, so ``true``, ``20`` and ``[a, b]`` mean what they say. Unknown keys
are errors, wherever they come from, so a typo is reported instead of being silently ignored.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import types
from collections.abc import Mapping
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import yaml

from basil.config.durations import format_duration, parse_duration
from basil.config.schema import BasilConfig, StoreConfig, VCenterConfig, secret_sources
from basil.errors import Problem, ValidationError, raise_if_problems

ENV_PREFIX = "BASIL_"
CONFIG_ENV = "BASIL_CONFIG"
DEFAULT_CONFIG_RESOURCE = "basil.default.yaml"

T = TypeVar("T")


class _StrictLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses a key given twice in one mapping (the second would win silently)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping",
                node.start_mark,
                f"found the key {key!r} twice",
                key_node.start_mark,
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def default_config_text() -> str:
    """The packaged default configuration (used when no file is named)."""
    return resources.files("basil").joinpath("data", DEFAULT_CONFIG_RESOURCE).read_text(encoding="utf-8")


def config_source(path: str | Path | None, env: Mapping[str, str]) -> tuple[str, str]:
    """(label, YAML text) of the configuration to use: *path*, else ``$BASIL_CONFIG``, else the default."""
    chosen = str(path) if path else env.get(CONFIG_ENV, "")
    if not chosen:
        return "(packaged default)", default_config_text()
    try:
        return chosen, Path(chosen).read_text(encoding="utf-8")
    except OSError as err:
        raise ValidationError(
            [Problem("config", f"cannot read {chosen}: {err.strerror or err}")], "configuration"
        ) from err


def parse_yaml(text: str, label: str) -> dict[str, Any]:
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise ValidationError(
            [Problem("config", f"{label}: not valid YAML{where}: {problem}")], "configuration"
        ) from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValidationError(
            [Problem("config", f"{label}: the top level must be a mapping of sections")], "configuration"
        )
    return data


# --- environment overrides ------------------------------------------------------------------------


def _env_key(name: str) -> str:
    return re.sub(r"[^A-Z0-9]", "_", name.upper())


def apply_env_overrides(
    data: dict[str, Any], env: Mapping[str, str]
) -> tuple[dict[str, Any], list[Problem], dict[str, str]]:
    """Apply ``BASIL_A__B__C=value`` overrides to a copy of *data*.

    Returns the new data, the problems found (a path into a list item that does not exist, a value
    that is not YAML) and, for each overridden field path, the variable that set it.
    """
    result: dict[str, Any] = yaml.load(yaml.safe_dump(data), Loader=_StrictLoader) or {}
    problems: list[Problem] = []
    origins: dict[str, str] = {}
    for var in sorted(env):
        if not var.startswith(ENV_PREFIX) or "__" not in var:
            continue
        segments = var[len(ENV_PREFIX) :].split("__")
        if any(not s for s in segments):
            problems.append(Problem(f"env {var}", "empty path segment (use single __ between keys)"))
            continue
        try:
            value = yaml.load(env[var], Loader=_StrictLoader) if env[var] != "" else ""
        except yaml.YAMLError:
            problems.append(Problem(f"env {var}", "value is not a valid YAML scalar or list"))
            continue
        try:
            origins[_set_path(result, segments, value)] = var
        except LookupError as err:
            problems.append(Problem(f"env {var}", str(err.args[0])))
    return result, problems, origins


def _set_path(root: dict[str, Any], segments: list[str], value: Any) -> str:
    """Set *value* at the path *segments* inside *root*, creating sections; returns the dotted field path."""
    node: Any = root
    path = ""
    for depth, segment in enumerate(segments):
        last = depth == len(segments) - 1
        if isinstance(node, list):
            index = _list_index(node, segment)
            if index is None:
                raise LookupError(
                    f"{path or 'top level'} has no item {segment.lower()!r} (by name or position)"
                )
            path = f"{path}[{index}]"
            key: Any = index
        elif isinstance(node, dict):
            key = segment.lower()
            path = f"{path}.{key}" if path else key
            if not last and node.get(key) is None:
                node[key] = {}
        else:
            raise LookupError(f"{path} is not a section")
        if last:
            node[key] = value
        else:
            node = node[key]
    return path


def _list_index(items: list[Any], segment: str) -> int | None:
    if segment.isdigit():
        index = int(segment)
        return index if index < len(items) else None
    wanted = _env_key(segment)
    for index, item in enumerate(items):
        if isinstance(item, dict) and isinstance(item.get("name"), str) and _env_key(item["name"]) == wanted:
            return index
    return None


# --- typed conversion -----------------------------------------------------------------------------


def _describe(tp: Any) -> str:
    if tp is timedelta:
        return "a duration such as 90s, 5m, 3h or 7d"
    if get_origin(tp) is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    names = {str: "text", int: "a whole number", float: "a number", bool: "true or false"}
    return names.get(tp, getattr(tp, "__name__", str(tp)))


# One early return per kind of type reads better than a chain of flags.
def _convert(tp: Any, value: Any, path: str, problems: list[Problem]) -> tuple[bool, Any]:  # noqa: PLR0911
    """Convert *value* to type *tp*; on failure record a problem at *path* and return (False, None)."""
    origin = get_origin(tp)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, dict):
            problems.append(Problem(path, f"must be a section (a mapping), got {type(value).__name__}"))
            return False, None
        return True, build(tp, value, path, problems)
    if origin is tuple:
        if not isinstance(value, list):
            problems.append(Problem(path, f"must be a list, got {type(value).__name__}"))
            return False, None
        item_type = get_args(tp)[0]
        converted = [_convert(item_type, item, f"{path}[{i}]", problems) for i, item in enumerate(value)]
        return True, tuple(item for ok, item in converted if ok)
    if origin is dict:
        if not isinstance(value, dict):
            problems.append(Problem(path, f"must be a mapping, got {type(value).__name__}"))
            return False, None
        value_type = get_args(tp)[1]
        pairs = {str(k): _convert(value_type, v, f"{path}.{k}", problems) for k, v in value.items()}
        return True, {k: item for k, (ok, item) in pairs.items() if ok}
    if origin in (Union, types.UnionType):
        if value is None and type(None) in get_args(tp):
            return True, None
        inner = [o for o in get_args(tp) if o is not type(None)]
        return _convert(inner[0], value, path, problems)
    return _convert_scalar(tp, value, path, problems)


def _convert_scalar(tp: Any, value: Any, path: str, problems: list[Problem]) -> tuple[bool, Any]:
    if get_origin(tp) is Literal:
        ok = value in get_args(tp)
    elif tp is timedelta:
        try:
            return True, parse_duration(value)
        except ValueError as err:
            problems.append(Problem(path, str(err)))
            return False, None
    elif tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif tp is str:
        ok = isinstance(value, str)
    else:  # pragma: no cover - a schema type this converter was not taught
        raise TypeError(f"unsupported configuration type {tp!r} at {path}")
    if not ok:
        problems.append(Problem(path, f"must be {_describe(tp)}, got {value!r}"))
        return False, None
    return True, value


def build(cls: type[T], data: Mapping[str, Any], path: str, problems: list[Problem]) -> T:
    """Build dataclass *cls* from *data*; unknown keys and bad types are problems, bad fields default."""
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        at = f"{path}.{key}" if path else str(key)
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(fields)})"
            problems.append(Problem(at, f"unknown key{hint}"))
            continue
        if value is None:
            problems.append(Problem(at, "is empty; give a value or remove the key"))
            continue
        ok, converted = _convert(hints[key], value, at, problems)
        if ok:
            kwargs[key] = converted
    return cls(**kwargs)


def _mark_origins(problems: list[Problem], origins: Mapping[str, str]) -> list[Problem]:
    marked: list[Problem] = []
    for p in problems:
        source = next(
            (var for path, var in origins.items() if p.field == path or p.field.startswith(path + ".")), None
        )
        marked.append(Problem(p.field, f"{p.message} (set by {source})") if source else p)
    return marked


def load_config(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> BasilConfig:
    """The configuration from *path* (or ``$BASIL_CONFIG``, or the default) with *env* overrides, validated.

    Raises :class:`ValidationError` listing every problem: unknown keys, wrong types, bad values and
    broken references between sections. Files and secrets are not read here (see :func:`runtime_problems`).
    """
    environ = os.environ if env is None else env
    label, text = config_source(path, environ)
    data = parse_yaml(text, label)
    data, env_problems, origins = apply_env_overrides(data, environ)
    problems = list(env_problems)
    config = build(BasilConfig, data, "", problems)
    converted_paths = {p.field for p in problems}
    # A field that failed conversion kept its default; do not also report the default's own problems.
    for p in config.problems():
        if not any(
            p.field == bad or p.field.startswith(bad + ".") or p.field.startswith(bad + "[")
            for bad in converted_paths
        ):
            problems.append(p)
    raise_if_problems(_mark_origins(problems, origins), "configuration")
    return config


# --- secrets and files ----------------------------------------------------------------------------


def read_secret(env_name: str, file_path: str, env: Mapping[str, str] | None = None) -> str:
    """The secret named by an environment variable or held in a file (one trailing newline removed).

    Raises ValidationError naming the variable or the file, never echoing any secret.
    """
    environ = os.environ if env is None else env
    if env_name:
        value = environ.get(env_name, "")
        if not value:
            raise ValidationError(
                [Problem("password_env", f"environment variable {env_name} is not set")], "secret"
            )
        return value
    if file_path:
        try:
            text = Path(file_path).read_text(encoding="utf-8")
        except OSError as err:
            raise ValidationError(
                [Problem("password_file", f"cannot read {file_path}: {err.strerror or err}")], "secret"
            ) from err
        value = text[:-1] if text.endswith("\n") else text
        if not value:
            raise ValidationError([Problem("password_file", f"{file_path} is empty")], "secret")
        return value
    return ""


def vcenter_password(vc: VCenterConfig, env: Mapping[str, str] | None = None) -> str:
    return read_secret(vc.password_env, vc.password_file, env)


def store_url(store: StoreConfig, env: Mapping[str, str] | None = None) -> str:
    """The store URL with its password filled in from the environment or a file, ready for SQLAlchemy."""
    password = read_secret(store.password_env, store.password_file, env)
    if not password:
        return store.url
    # Imported here so that reading a configuration does not need SQLAlchemy.
    from sqlalchemy.engine import make_url  # noqa: PLC0415

    return make_url(store.url).set(password=password).render_as_string(hide_password=False)


def runtime_problems(config: BasilConfig, env: Mapping[str, str] | None = None) -> list[Problem]:
    """Problems only this machine can show: unset password variables, unreadable files."""
    environ = os.environ if env is None else env
    found: list[Problem] = []
    for path, (env_name, file_path) in secret_sources(config).items():
        try:
            read_secret(env_name, file_path, environ)
        except ValidationError as err:
            found += [Problem(f"{path}.{p.field}", p.message) for p in err.problems]
    for i, vc in enumerate(config.vcenters):
        if vc.tls.ca_bundle and not Path(vc.tls.ca_bundle).is_file():
            found.append(
                Problem(f"vcenters[{i}].tls.ca_bundle", f"{vc.tls.ca_bundle} is not a readable file")
            )
    tls = config.server.tls
    if not tls.self_signed:
        for key in ("cert", "key"):
            value = getattr(tls, key)
            if value and not Path(value).is_file():
                found.append(Problem(f"server.tls.{key}", f"{value} is not a readable file"))
    return found


def to_document(config: BasilConfig) -> dict[str, Any]:
    """The configuration as plain YAML-able data (durations spelled as in the file); holds no secret."""

    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, tuple):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, timedelta):
            return format_duration(value)
        return value

    result: dict[str, Any] = plain(config)
    return result
