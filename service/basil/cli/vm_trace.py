"""``basil capacity --vm NAME``: a trace uploaded to a running service for a VM
(``PUT /api/v1/vms/{vm}/trace``).

The service plans it and keeps the answer as the VM's reservation suggestion (docs/capacity-planning.md).
Where to: ``--service`` or ``BASIL_URL``; the API token only from ``BASIL_TOKEN`` (never on the command
line, where other users could read it); Basil's certificate verified against ``--ca-path`` or
``BASIL_CA_PATH``, else the system's trust store.
"""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

from basil.errors import BasilError, NotFoundError, Problem, ValidationError

TOKEN_ENV = "BASIL_TOKEN"
URL_ENV = "BASIL_URL"
CA_ENV = "BASIL_CA_PATH"


def upload_vm_trace(
    *, service: str | None, ca_path: str | None, vm: str, path: Path, question: dict[str, Any]
) -> dict[str, Any]:
    """PUT the trace in *path* with *question* (fraction, bound_ms, ...) for *vm*; the service's answer."""
    base = (service or os.environ.get(URL_ENV, "")).rstrip("/")
    token = os.environ.get(TOKEN_ENV, "")
    problems = []
    if not base:
        problems.append(Problem("--service", f"the service's URL is needed with --vm (or set {URL_ENV})"))
    elif not base.startswith("https://"):
        problems.append(Problem("--service", f"must be an https:// URL, not {base!r}"))
    if not token:
        problems.append(Problem(TOKEN_ENV, "an operator's API token is needed in this variable to upload"))
    if problems:
        raise ValidationError(problems, "upload")
    body = {**question, "trace": path.read_text(encoding="utf-8", errors="replace")}
    request = urllib.request.Request(
        f"{base}/api/v1/vms/{quote(vm, safe='')}/trace",
        data=json.dumps(body).encode("utf-8"),
        method="PUT",
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        },
    )
    context = ssl.create_default_context(cafile=ca_path or os.environ.get(CA_ENV) or None)
    try:
        with urllib.request.urlopen(request, context=context, timeout=300) as answer:
            result: dict[str, Any] = json.loads(answer.read().decode("utf-8"))
            return result
    except urllib.error.HTTPError as err:
        raise _refused(err, path) from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise BasilError(f"could not reach the service at {base}: {reason}") from None


def _refused(err: urllib.error.HTTPError, path: Path) -> BasilError:
    try:
        doc = json.loads(err.read().decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        doc = {}
    message = str(doc.get("message") or f"HTTP {err.code}") if isinstance(doc, dict) else f"HTTP {err.code}"
    if err.code == 400 and isinstance(doc, dict) and doc.get("problems"):
        return ValidationError(
            [
                Problem(
                    f"{path}: {p['field']}" if str(p["field"]).startswith("line ") else str(p["field"]),
                    p["message"],
                )
                for p in doc["problems"]
            ],
            "upload",
        )
    if err.code == 404:
        return NotFoundError(message)
    return BasilError(f"the service refused the upload ({err.code}): {message}")


def suggestion_text(answer: dict[str, Any]) -> str:
    """The service's answer in a few lines: the suggestion and the VM's pool reservation beside it."""
    s = answer.get("suggestion") or {}
    lines = [
        f"{answer.get('vm_name')} ({answer.get('vm')}): "
        f"suggested SRP reservation {s.get('reservation_iops')} IOPS "
        f"for {float(s.get('fraction', 0)):.2%} of IOs within {s.get('bound_ms'):g} ms "
        f"(capacity {float(s.get('capacity_iops', 0)):.1f} IO/s, rounded up to a whole IOPS; "
        f"100 %: {float(s.get('capacity_full_iops', 0)):.0f} IO/s)",
    ]
    srp = answer.get("srp")
    if srp:
        where = f"pool tree {srp['pool_tree']}" + (f", pool {srp['pool']}" if srp.get("pool") else "")
        verdict = "meets" if answer.get("meets_target") else "does not meet"
        lines.append(f"  {where} reserves {srp['reservation']:g} IOPS: {verdict} the target")
    else:
        lines.append("  no pool tree holds the VM")
    return "\n".join(lines)
