"""Packaging for Basil: IO load balancing and storage QoS for VMware vSphere."""

from setuptools import find_packages, setup

setup(
    name="basil",
    version="0.1.0",
    description="Automatic IO load balancing and storage QoS for VMware vSphere (BASIL + Storage Resource Pools)",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    package_dir={"": "service"},
    packages=find_packages("service"),
    package_data={"basil": ["py.typed", "data/*", "data/**/*", "store/migrations/script.py.mako"]},
    include_package_data=True,
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
