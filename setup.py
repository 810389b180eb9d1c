"""Packaging for Basil: IO load balancing and storage QoS for VMware vSphere.

A wheel carries the vSphere Client plugin's build (``plugin/dist``, made by ``make plugin``) as the
package data ``basil/data/plugin``, so an installed Basil serves the plugin without a source
checkout; see docs/packaging.md. An editable install (``pip install -e``) serves ``plugin/dist``
directly and copies nothing.
"""

import re
import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PLUGIN_DIST = HERE / "plugin" / "dist"
# One version, basil.__version__ (what `basil --version` prints).
VERSION = re.search(
    r'^__version__ = "([^"]+)"', (HERE / "service" / "basil" / "__init__.py").read_text(encoding="utf-8"), re.M
).group(1)


class BuildWithPlugin(build_py):
    """build_py, plus the built plugin copied into the wheel's ``basil/data/plugin``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        if not (PLUGIN_DIST / "index.html").is_file():
            print(f"basil: {PLUGIN_DIST} is not built (make plugin): this build carries no plugin")
            return
        target = Path(self.build_lib) / "basil" / "data" / "plugin"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(PLUGIN_DIST, target)


setup(
    name="basil",
    version=VERSION,
    description="Automatic IO load balancing and storage QoS for VMware vSphere (BASIL + Storage Resource Pools)",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    package_dir={"": "service"},
    # basil.data holds files only (the packaged default configuration; the plugin in a wheel).
    packages=[*find_packages("service"), "basil.data"],
    package_data={
        "basil": ["py.typed"],
        "basil.data": ["*"],
        "basil.store.migrations": ["script.py.mako"],
    },
    cmdclass={"build_py": BuildWithPlugin},
    install_requires=[
        "click>=8.1,<9",
        "PyYAML>=6.0,<7",
        "numpy>=1.26,<3",
        "SQLAlchemy>=2.0.30,<2.2",
        "alembic>=1.13,<2",
        "psycopg[binary]>=3.1,<4",
        # vCenter: SOAP (pyVmomi) and the vSphere Automation SDK (tags); vmware-vcenter brings
        # vmware-vapi-runtime and vmware-vapi-common-client, which pull requests and pyOpenSSL.
        "pyvmomi>=8.0.3,<10",
        "vmware-vcenter>=8.0.3,<10",
        # The web layer: Flask app behind an asyncio front end (h11 parses HTTP/1.1), self-signed TLS, metrics.
        "Flask>=3.0,<4",
        "h11>=0.14,<1",
        "cryptography>=42",
        "prometheus-client>=0.20,<1",
        # The one in-process scheduler of the service (basil.app.jobs); 3.x has the SQLAlchemy job store.
        "APScheduler>=3.10,<4",
    ],
    extras_require={
        "test": [
            "pytest>=8,<9",
            # tests/packaging builds the wheel without build isolation (no network): bdist_wheel
            # is part of setuptools from 70.1.
            "setuptools>=70.1",
            "hypothesis>=6.100,<7",
            "openapi-spec-validator>=0.7,<1",
            # The bounded fuzz run of the API against its OpenAPI document (tests/api/test_schemathesis.py).
            "schemathesis>=4.30,<5",
            # The lab's tests talk to it as the service will: pyVmomi for SOAP, requests for REST.
            "pyvmomi>=8.0.1,<10",
            "requests>=2.31,<3",
            # The plugin's end-to-end tests drive Debian's chromium (never a downloaded browser).
            "playwright>=1.50,<2",
            # The Ansible collection (ansible/): ansible-test, ansible-galaxy and ansible-playbook.
            "ansible-core>=2.19,<2.20",
            # The PowerShell module's checks parse it with tree-sitter's PowerShell grammar.
            "tree-sitter>=0.25,<0.27",
            "tree-sitter-powershell>=0.26,<0.27",
        ],
        "dev": [
            "ruff>=0.6",
            "mypy>=1.11",
            "types-PyYAML",
        ],
    },
    entry_points={"console_scripts": ["basil=basil.cli:main"]},
    classifiers=[
        "Programming Language :: Python :: 3.11",
        "Typing :: Typed",
    ],
)
