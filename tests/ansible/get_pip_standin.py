"""A stand-in for the pip bootstrap script ansible-test downloads from ci-files.testing.ansible.com.

ansible-test creates its sanity and unit-test virtual environments without pip, then runs the
``get-pip`` script it caches as ``~/.ansible/test/cache/get_pip_<version>.py`` with pip's install
options. Where that host cannot be reached, this script does the same job from what is at hand: the
interpreter's own ``ensurepip`` puts a pip into the environment, which then installs the requested
packages (the pinned pip among them) from the package index.
"""

from __future__ import annotations

import subprocess
import sys

# get-pip's own options; pip itself does not know them.
_GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}


def main() -> None:
    ensurepip = [sys.executable, "-m", "ensurepip", "--default-pip"]
    subprocess.run(ensurepip, check=True, stdout=subprocess.DEVNULL)
    args = [a for a in sys.argv[1:] if a not in _GET_PIP_ONLY]
    if args and args[0] == "install":
        args = args[1:]
    subprocess.run([sys.executable, "-m", "pip", "install", *args], check=True)


if __name__ == "__main__":
    main()
