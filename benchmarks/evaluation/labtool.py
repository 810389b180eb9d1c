"""The lab's evaluation command (lab/cmd/evaluate) as Python calls: one JSON request, one JSON answer."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BINARY = ROOT / "build" / "basil-evaluate"

Placement = dict[str, str]  # disk id ("vm/unit") -> datastore


class LabToolError(RuntimeError):
    """The evaluation command refused a request or is missing."""


@dataclass(frozen=True, slots=True)
class Source:
    """A scenario: a file (its seed replaced when given) or a generated family with its seed."""

    file: str | None = None
    family: str | None = None
    seed: int | None = None
    workloads: int | None = None
    stores: int | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.file is not None:
            out["file"] = str(ROOT / self.file)
        if self.family is not None:
            out["family"] = self.family
        for name in ("seed", "workloads", "stores"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


@dataclass(frozen=True, slots=True)
class Window:
    """Intervals start+1 … start+intervals are reported, after `warmup` intervals from an empty cache."""

    start: int
    intervals: int
    warmup: int = 9


class LabTool:
    """Runs ``basil-evaluate`` subcommands for one scenario source."""

    def __init__(self, source: Source, binary: Path = DEFAULT_BINARY) -> None:
        if not binary.exists():
            raise LabToolError(f"{binary} is missing: build it with `make lab`")
        self.source = source
        self.binary = binary

    def _call(self, command: str, **fields: Any) -> dict[str, Any]:
        request = {"source": self.source.as_json(), **fields}
        done = subprocess.run(
            [str(self.binary), command],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise LabToolError(f"basil-evaluate {command}: {done.stderr.strip()}")
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer

    def describe(self) -> dict[str, Any]:
        return self._call("describe")

    def measure(
        self,
        placement: Placement,
        window: Window,
        *,
        shares: dict[str, int] | None = None,
        sioc_ms: dict[str, float] | None = None,
    ) -> dict[str, Any]:
        """Measure *placement*; *shares* (disk → SIOC shares) and *sioc_ms* (datastore → SIOC's
        congestion threshold, SIOC on) are set before the window (benchmarks/evaluate_slo.py)."""
        qos: dict[str, Any] = {}
        if shares:
            qos["shares"] = shares
        if sioc_ms:
            qos["sioc_ms"] = sioc_ms
        return self._call(
            "measure",
            placement=placement,
            start=window.start,
            warmup=min(window.warmup, window.start),
            intervals=window.intervals,
            **qos,
        )

    def score(self, placements: list[Placement], window: Window) -> list[dict[str, Any]]:
        answer = self._call(
            "score",
            placements=placements,
            start=window.start,
            warmup=min(window.warmup, window.start),
            intervals=window.intervals,
        )
        result: list[dict[str, Any]] = answer["placements"]
        return result

    def best(self, window: Window, headroom_pct: float) -> dict[str, Any]:
        return self._call(
            "best",
            start=window.start,
            warmup=min(window.warmup, window.start),
            intervals=window.intervals,
            headroom_pct=headroom_pct,
        )
