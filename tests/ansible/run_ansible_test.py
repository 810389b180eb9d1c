"""Run ``ansible-test`` on the collection in ``ansible/`` (``make ansible-test``).

ansible-test wants the collection at ``ansible_collections/<namespace>/<name>/``: the collection is
copied into a temporary tree of that shape, then ``ansible-test sanity`` and ``ansible-test units``
run there, and ``ansible-galaxy collection build`` must produce a tarball that ``ansible-galaxy
collection install`` installs. The sanity tests and the unit tests run in ansible-test's own virtual
environments (their pinned requirements from the package index), cached under
``build/ansible-test-home`` so that later runs reuse them; the project's venv is left as it is.

Skipped sanity tests, and why:
- ``shellcheck`` needs the shellcheck binary (not installed on these machines; the collection has no
  shell script);
- ``pslint`` needs PowerShell (the collection has no PowerShell; the Basil PowerShell module is
  checked by tests/powershell).

The integration tests are pytest tests (tests/ansible/test_playbooks.py) because they need the lab
vCenter and ``basil serve`` started the way the service's end-to-end tests start them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "ansible"
HOME = REPO / "build" / "ansible-test-home"
SKIPPED_SANITY = ("shellcheck", "pslint")
BIN = Path(sys.executable).parent


def _collection() -> tuple[str, str, str]:
    galaxy = yaml.safe_load((SOURCE / "galaxy.yml").read_text(encoding="utf-8"))
    return str(galaxy["namespace"]), str(galaxy["name"]), str(galaxy["version"])


def stage(root: Path) -> Path:
    """Copy the collection to ``root/ansible_collections/<ns>/<name>`` and return that directory."""
    namespace, name, _ = _collection()
    target = root / "ansible_collections" / namespace / name
    shutil.copytree(
        SOURCE, target, ignore=shutil.ignore_patterns("output", "__pycache__", "*.tar.gz", ".pytest_cache")
    )
    return target


def _pip_standin() -> None:
    """ansible-test's pip bootstrap script, where its download host cannot be reached (see
    get_pip_standin.py); a real download, when there was one, is left alone."""
    cache = HOME / ".ansible" / "test" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    for version in _pip_versions():
        path = cache / f"get_pip_{version.replace('.', '_')}.py"
        if not path.exists():
            shutil.copyfile(Path(__file__).with_name("get_pip_standin.py"), path)


def _pip_versions() -> list[str]:
    """The pip version(s) ansible-test pins for its virtual environments."""
    import ansible_test  # noqa: PLC0415

    source = (Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py").read_text(
        encoding="utf-8"
    )
    return sorted(set(__import__("re").findall(r"pip='([0-9.]+)'", source)))


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=cwd, env=env, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--python", default=f"{sys.version_info.major}.{sys.version_info.minor}")
    parser.add_argument("--skip", choices=("sanity", "units", "build"), action="append", default=[])
    args = parser.parse_args()
    _pip_standin()
    env = {**os.environ, "HOME": str(HOME), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    with tempfile.TemporaryDirectory(prefix="basil-ansible-test-") as tmp:
        collection = stage(Path(tmp))
        test = str(BIN / "ansible-test")
        if "sanity" not in args.skip:
            skips = [a for t in SKIPPED_SANITY for a in ("--skip-test", t)]
            run([test, "sanity", "--python", args.python, "--color", "no", *skips], collection, env)
        if "units" not in args.skip:
            run([test, "units", "--venv", "--python", args.python, "--color", "no"], collection, env)
        if "build" not in args.skip:
            out = Path(tmp) / "dist"
            galaxy = str(BIN / "ansible-galaxy")
            run([galaxy, "collection", "build", "--output-path", str(out)], collection, env)
            tarball = next(out.glob("*.tar.gz"))
            target = str(Path(tmp) / "installed")
            run([galaxy, "collection", "install", "--offline", "-p", target, str(tarball)], Path(tmp), env)
            namespace, name, _ = _collection()
            installed = Path(tmp) / "installed" / "ansible_collections" / namespace / name
            modules = sorted(p.stem for p in (installed / "plugins" / "modules").glob("*.py"))
            print(f"installed {tarball.name}: {len(modules)} modules ({', '.join(modules)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
