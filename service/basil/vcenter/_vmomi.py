"""pyVmomi's namespaces, typed as ``Any`` for the type checker.

pyVmomi builds its vim/vmodl types at run time and ships only partial annotations, so strict mypy
would flag every constructor call; the adapter's own functions carry the types that matter.
"""

from __future__ import annotations

from typing import Any

import pyVmomi
from pyVmomi import SoapAdapter as _SoapAdapter
from pyVmomi import VmomiSupport as _VmomiSupport

vim: Any = getattr(pyVmomi, "vim")  # noqa: B009 - built at run time, unknown to the checker
vmodl: Any = getattr(pyVmomi, "vmodl")  # noqa: B009
SoapAdapter: Any = _SoapAdapter
VmomiSupport: Any = _VmomiSupport
