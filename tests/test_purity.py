"""The decision core must stay pure: no vCenter, database, web or scheduler import, direct or not."""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import basil

PURE_PACKAGES = ["basil.core", "basil.srp"]
FORBIDDEN = ["pyVmomi", "pyVim", "vmware", "com", "flask", "werkzeug", "sqlalchemy", "alembic", "apscheduler"]


def _pure_modules() -> list[str]:
    names: list[str] = []
    root = Path(basil.__file__).parent
    for package in PURE_PACKAGES:
        path = root / package.split(".", 1)[1]
        names.append(package)
        names.extend(m.name for m in pkgutil.walk_packages([str(path)], prefix=package + "."))
    return names


def test_pure_packages_have_modules() -> None:
    assert len(_pure_modules()) > len(PURE_PACKAGES), "the pure core packages are empty"


@pytest.mark.parametrize("module", _pure_modules())
def test_module_source_imports_nothing_forbidden(module: str) -> None:
    spec_origin = __import__(module, fromlist=["_"]).__file__
    assert spec_origin is not None
    tree = ast.parse(Path(spec_origin).read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module.split(".")[0])
    assert not imported & set(FORBIDDEN), f"{module} imports {sorted(imported & set(FORBIDDEN))}"


def test_importing_the_core_loads_nothing_forbidden_transitively() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for m in {_pure_modules()!r}: importlib.import_module(m)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    loaded = {name.split(".")[0] for name in json.loads(out)}
    assert not loaded & set(FORBIDDEN), f"the pure core pulled in {sorted(loaded & set(FORBIDDEN))}"
