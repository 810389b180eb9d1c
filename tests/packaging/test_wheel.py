"""The wheel as an operator installs it: built from the repository, installed into a clean venv, served.

What is checked: the build prints no setuptools warning; the wheel carries the built plugin
(``basil/data/plugin``) and the migrations; installed in a venv where the repository is NOT on
``sys.path``, ``basil --version`` answers, ``basil db upgrade`` migrates a store and ``basil serve``
on the lab serves the plugin's manifest and index page from the wheel's copy.

Bounded (about half a minute) and offline, by choice:

- the wheel is built by ``pip wheel --no-deps --no-build-isolation`` with the project venv's
  setuptools (``setuptools>=70.1`` is in the ``test`` extra), from a copy of the files a build needs
  (setup.py, pyproject.toml, README.md, service/, plugin/dist), so the checkout gets no build/ or
  egg-info of it;
- the clean venv has no pip and no packages of its own: the wheel goes in with the project's pip
  (``pip --python``, ``--no-deps --no-index``), and the dependencies (Flask, pyVmomi, ...) come from
  the project venv's site-packages, added as a *path* in a ``.pth`` file. A path added that way is
  not a site directory, so its own ``.pth`` files, among them the editable install's pointer to the
  checkout's ``service/``, are not read: ``basil`` is imported from the wheel (the test checks it).
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from basil import __version__
from basil.serve import READY_LINE
from tests.e2e.conftest import PASSWORD_ENV, lab_env, write_config
from tests.vcenter.labproc import ROOT, LabProcess

pytestmark = pytest.mark.lab

PLUGIN_DIST = ROOT / "plugin" / "dist"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the sources (plugin/dist must be built: `make plugin`)."""
    assert (PLUGIN_DIST / "index.html").is_file(), "plugin/dist is not built: run `make plugin`"
    src = tmp_path_factory.mktemp("src")
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "service", src / "service", ignore=ignore)
    shutil.copytree(PLUGIN_DIST, src / "plugin" / "dist")
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "--wheel-dir", str(out), str(src)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout + build.stderr
    assert "Warning" not in build.stdout + build.stderr, build.stdout + build.stderr
    (found,) = out.glob("basil-*.whl")
    return found


def test_wheel_carries_plugin_and_migrations(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        manifest = json.loads(whl.read("basil/data/plugin/plugin.json"))
    built = {
        f"basil/data/plugin/{p.relative_to(PLUGIN_DIST).as_posix()}"
        for p in PLUGIN_DIST.rglob("*")
        if p.is_file()
    }
    assert built <= names, sorted(built - names)
    assert manifest == json.loads((PLUGIN_DIST / "plugin.json").read_text(encoding="utf-8"))
    migrations = ROOT / "service" / "basil" / "store" / "migrations"
    shipped = {f"basil/store/migrations/versions/{p.name}" for p in (migrations / "versions").glob("*.py")}
    assert shipped, "no migration found in the checkout"
    assert shipped | {"basil/store/migrations/env.py", "basil/store/migrations/script.py.mako"} <= names
    assert "basil/data/basil.default.yaml" in names
    assert wheel.name == f"basil-{__version__}-py3-none-any.whl"


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding the wheel; the dependencies come from the project venv (see the module's doc)."""
    env_dir = tmp_path_factory.mktemp("venv") / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
         "--quiet", str(wheel)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert install.returncode == 0, install.stdout + install.stderr
    (target,) = (env_dir / "lib").glob("python3*/site-packages")
    (target / "project-dependencies.pth").write_text(
        "\n".join(site.getsitepackages()) + "\n", encoding="utf-8"
    )
    return env_dir


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment without anything that would point Basil at the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BASIL_PLUGIN_DIST")}
    env.update(extra or {})
    return env


def test_installed_basil_comes_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    code = "import basil, sys; print(basil.__file__); print(sys.path)"
    probe = subprocess.run(
        [str(installed / "bin" / "python"), "-c", code],
        capture_output=True, text=True, timeout=60, check=True, cwd=tmp_path, env=clean_env(),
    )  # fmt: skip
    where, path = probe.stdout.splitlines()
    assert Path(where).is_relative_to(installed), where
    assert str(ROOT / "service") not in path
    version = subprocess.run(
        [str(installed / "bin" / "basil"), "--version"],
        capture_output=True, text=True, timeout=60, check=True, cwd=tmp_path, env=clean_env(),
    )  # fmt: skip
    assert version.stdout.strip() == f"basil, version {__version__}"


@pytest.fixture
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(ROOT / "lab" / "scenarios" / "basil-6.3.yaml", speed=0) as running:
        yield running


def test_installed_basil_serves_the_plugin(installed: Path, lab: LabProcess, tmp_path: Path) -> None:
    basil = str(installed / "bin" / "basil")
    env = clean_env({PASSWORD_ENV: lab_env(lab)[PASSWORD_ENV]})
    config = write_config(tmp_path, lab)
    subprocess.run(
        [basil, "db", "upgrade", "--config", str(config)], capture_output=True, text=True, timeout=120,
        check=True, cwd=tmp_path, env=env,
    )  # fmt: skip
    with (tmp_path / "serve.log").open("w", encoding="utf-8") as log:
        serve = subprocess.Popen(
            [basil, "serve", "--config", str(config)], stdout=subprocess.PIPE, stderr=log, text=True,
            cwd=tmp_path, env=env,
        )  # fmt: skip
    try:
        assert serve.stdout is not None
        banner = []
        for line in serve.stdout:
            banner.append(line.rstrip("\n"))
            if line.strip() == READY_LINE:
                break
        assert banner, (tmp_path / "serve.log").read_text(encoding="utf-8")
        assert banner[-1] == READY_LINE, (banner, (tmp_path / "serve.log").read_text(encoding="utf-8"))
        base = next(line.split(" API ", 1)[1].split("/api/v1/", 1)[0] for line in banner if " API " in line)
        cert = str(tmp_path / "tls" / "basil.crt")
        manifest = requests.get(f"{base}/plugin/plugin.json", verify=cert, timeout=60)
        assert manifest.status_code == 200, manifest.text
        assert manifest.json() == json.loads((PLUGIN_DIST / "plugin.json").read_text(encoding="utf-8"))
        index = requests.get(f"{base}/plugin/", verify=cert, timeout=60)
        assert index.status_code == 200, index.text
        assert index.text == (PLUGIN_DIST / "index.html").read_text(encoding="utf-8")
        health = requests.get(f"{base}/api/v1/health", verify=cert, timeout=60)
        assert health.status_code == 200, health.text
        assert health.json()["version"] == __version__
    finally:
        serve.terminate()
        serve.wait(timeout=120)
        if serve.stdout is not None:
            serve.stdout.close()
