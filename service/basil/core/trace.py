"""Request traces for capacity planning: arrival times read from SPC block traces or plain CSV.

Two formats, both one request a line, times in seconds:

- ``spc``: the SPC format of the public UMass storage traces, ``ASU,LBA,size,opcode,timestamp``
  (size in bytes, opcode ``R`` or ``W`` in either case);
- ``csv``: ``timestamp[,size[,op]]``, the same number of fields on every line, optionally under
  a header line whose first field is ``timestamp``.

Blank lines and lines starting with ``#`` are skipped. The reader takes lines in blocks and keeps
only the arrival times (8 bytes a request) and running counts, so 10 million requests need about
80 MB. Blocks are parsed a whole column at a time (SPC by numpy's C text parser, which reads the
LBA, size and timestamp; the opcodes are counted; the ASU is not used); a block that does not
parse is read again line by line so that the error names the first unreadable line.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from basil.errors import Problem, raise_if_problems

FORMATS = ("spc", "csv")
_BLOCK_LINES = 100_000
_OPS = {"R": True, "r": True, "W": False, "w": False}


@dataclass(frozen=True)
class Trace:
    """Arrival times (seconds, sorted) and what else the trace told about its requests."""

    arrivals: NDArray[np.float64]
    reads: int
    writes: int
    bytes_total: float
    reordered: bool  # the file's timestamps were not in order and were sorted
    format: str = ""  # "spc" or "csv": as given, or as guessed from the first data line

    @property
    def requests(self) -> int:
        return int(self.arrivals.size)

    def summary(self) -> dict[str, object]:
        n = self.requests
        span = float(self.arrivals[-1] - self.arrivals[0]) if n else 0.0
        typed = self.reads + self.writes
        return {
            "requests": n,
            "duration_s": span,
            "mean_iops": n / span if span > 0 else None,
            "read_fraction": self.reads / typed if typed else None,
            "mean_size_bytes": self.bytes_total / n if n and self.bytes_total else None,
            "reordered": self.reordered,
            "format": self.format,
        }


class _Block:
    """Columns parsed from one block of lines."""

    def __init__(self, times: NDArray[np.float64], reads: int, writes: int, size_sum: float) -> None:
        self.times = times
        self.reads = reads
        self.writes = writes
        self.size_sum = size_sum


def _bad(line_no: int, message: str) -> None:
    raise_if_problems([Problem(f"line {line_no}", message)], "trace")


def _parse_line(fmt: str, width: int, text: str, line_no: int) -> tuple[float, int, float]:
    """(time, op as 1 read / 0 write / -1 unknown, size) of one line, or a ValidationError naming it."""
    fields = [f.strip() for f in text.split(",")]
    if len(fields) != width:
        _bad(line_no, f"expected {width} comma-separated fields ({_layout(fmt, width)}), found {len(fields)}")
    if fmt == "spc":
        asu, lba, size, op, stamp = fields
        for name, value in (("ASU", asu), ("LBA", lba)):
            if not value.isdigit():
                _bad(line_no, f"{name} must be a non-negative integer, not {value!r}")
    else:
        stamp = fields[0]
        size = fields[1] if width >= 2 else "0"
        op = fields[2] if width >= 3 else ""
    try:
        when = float(stamp)
    except ValueError:
        _bad(line_no, f"timestamp must be a number of seconds, not {stamp!r}")
    if not math.isfinite(when) or when < 0:
        _bad(line_no, f"timestamp must be a finite number of seconds ≥ 0, not {stamp!r}")
    try:
        nbytes = float(size)
    except ValueError:
        _bad(line_no, f"size must be a number of bytes, not {size!r}")
    if not math.isfinite(nbytes) or nbytes < 0:
        _bad(line_no, f"size must be a finite number of bytes ≥ 0, not {size!r}")
    if op and op not in _OPS:
        _bad(line_no, f"opcode must be R or W, not {op!r}")
    kind = -1 if not op else int(_OPS[op])
    return when, kind, nbytes


def _layout(fmt: str, width: int) -> str:
    if fmt == "spc":
        return "ASU,LBA,size,opcode,timestamp"
    return ",".join(["timestamp", "size", "op"][:width])


def _fast_spc(lines: list[str]) -> _Block | None:
    """SPC lines through numpy's C text parser: LBA, size and timestamp parsed, the opcodes counted."""
    joined = "".join(lines)
    n = len(lines)
    reads = joined.count(",R,") + joined.count(",r,")
    writes = joined.count(",W,") + joined.count(",w,")
    if joined.count(",") != 4 * n or reads + writes != n:
        return None
    try:
        columns = np.loadtxt(
            lines, delimiter=",", usecols=(1, 2, 4), dtype=np.float64, ndmin=2, comments=None
        )
    except ValueError:
        return None
    if columns.shape[0] != n:
        return None
    times = np.ascontiguousarray(columns[:, 2])
    sizes = columns[:, 1]
    ok = bool(np.all(np.isfinite(times)) and np.all(times >= 0))
    ok = ok and bool(np.all(np.isfinite(sizes)) and np.all(sizes >= 0) and np.all(columns[:, 0] >= 0))
    return _Block(times, reads, writes, float(sizes.sum())) if ok else None


def _fast_block(fmt: str, width: int, lines: list[str]) -> _Block | None:
    """Parse a block column-wise; None when anything in it is off (the slow path then names the line)."""
    if fmt == "spc":
        return _fast_spc(lines)
    flat = "".join(lines).replace("\r", "").replace("\n", ",").split(",")
    if flat and flat[-1] == "":
        flat.pop()
    if len(flat) != width * len(lines):
        return None
    stamps, size_texts, ops = (
        flat[0::width],
        flat[1::width] if width >= 2 else [],
        flat[2::width] if width >= 3 else [],
    )
    try:
        times = np.array(stamps, dtype=np.float64)
        sizes = np.array(size_texts, dtype=np.float64)
    except (ValueError, OverflowError):
        return None
    reads = ops.count("R") + ops.count("r")
    writes = ops.count("W") + ops.count("w")
    ok = bool(np.all(np.isfinite(times)) and np.all(times >= 0))
    ok = ok and bool(np.all(np.isfinite(sizes)) and np.all(sizes >= 0))
    ok = ok and (not ops or reads + writes == len(ops))
    return _Block(times, reads, writes, float(sizes.sum())) if ok else None


def _slow_block(fmt: str, width: int, numbered: list[tuple[int, str]]) -> _Block:
    times = np.empty(len(numbered), dtype=np.float64)
    reads = writes = 0
    size_sum = 0.0
    for k, (line_no, text) in enumerate(numbered):
        when, kind, nbytes = _parse_line(fmt, width, text.rstrip("\r\n"), line_no)
        times[k] = when
        reads += kind == 1
        writes += kind == 0
        size_sum += nbytes
    return _Block(times, reads, writes, size_sum)


def _layout_of(first: tuple[int, str], fmt: str | None) -> tuple[str, int, list[tuple[int, str]]]:
    """(format, fields a line, data lines to read first) from the first non-blank line."""
    line_no, text = first
    fields = text.split(",")
    if fields[0].strip().lower() == "timestamp":
        if fmt == "spc":
            _bad(line_no, "an SPC trace has no header line")
        fmt, pending = "csv", []
    else:
        fmt, pending = fmt or ("spc" if len(fields) == 5 else "csv"), [first]
    width = 5 if fmt == "spc" else len(fields)
    if not 1 <= width <= 5 or (fmt == "csv" and width > 3):
        _bad(line_no, f"a CSV trace has 1 to 3 fields (timestamp[,size[,op]]), found {width}")
    return fmt, width, pending


def _is_data(text: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith("#")


def read_trace(lines: Iterable[str], fmt: str | None = None) -> Trace:
    """Read a trace from *lines* (an open text file will do) in *fmt*, or guess it from the first line.

    Raises a ValidationError naming the first unreadable line, or saying the trace is empty.
    """
    if fmt is not None and fmt not in FORMATS:
        raise_if_problems([Problem("format", f"must be one of {', '.join(FORMATS)}, not {fmt!r}")], "trace")
    raw = iter(lines)
    line_no = 0
    first: tuple[int, str] | None = None
    for text in raw:
        line_no += 1
        if _is_data(text):
            first = (line_no, text)
            break
    if first is None:
        raise_if_problems([Problem("trace", "has no requests (no data lines)")], "trace")
        raise AssertionError  # unreachable: raise_if_problems raised
    fmt, width, pending = _layout_of(first, fmt)
    blocks = [_slow_block(fmt, width, pending)] if pending else []
    # Lines are taken raw, a block at a time; a block with anything but data lines in it (a blank
    # line, a comment, a bad field) fails the column-wise parse and is read again line by line.
    while True:
        block = list(itertools.islice(raw, _BLOCK_LINES))
        if not block:
            break
        parsed = _fast_block(fmt, width, block)
        if parsed is None:
            numbered = [(line_no + k, t) for k, t in enumerate(block, start=1) if _is_data(t)]
            parsed = _slow_block(fmt, width, numbered)
        line_no += len(block)
        blocks.append(parsed)
    times = [b.times for b in blocks if b.times.size]
    reads = sum(b.reads for b in blocks)
    writes = sum(b.writes for b in blocks)
    size_sum = sum(b.size_sum for b in blocks)
    del blocks
    if not times:
        raise_if_problems([Problem("trace", "has no requests (only a header line)")], "trace")
    arrivals = np.concatenate(times) if len(times) > 1 else times[0]
    del times
    reordered = bool(arrivals.size > 1 and np.any(arrivals[1:] < arrivals[:-1]))
    if reordered:
        arrivals.sort(kind="stable")
    return Trace(
        arrivals=arrivals, reads=reads, writes=writes, bytes_total=size_sum, reordered=reordered, format=fmt
    )


def onoff_pareto_arrivals(
    requests: int,
    *,
    seed: int = 0,
    on_rate_iops: float = 2000.0,
    mean_on_s: float = 0.2,
    mean_off_s: float = 0.8,
    shape: float = 1.5,
) -> NDArray[np.float64]:
    """A synthetic bursty trace: on/off periods of Pareto length, Poisson arrivals while on.

    Heavy-tailed on and off periods (``shape`` α in (1, 2): finite mean, infinite variance) give the
    self-similar burstiness of real storage traffic; the mean rate is on_rate × on / (on + off).
    Built from one array of gaps and an index per period, so 10 million requests take about 80 MB.
    """
    if requests <= 0:
        raise_if_problems([Problem("requests", "must be positive")], "synthetic trace")
    rng = np.random.default_rng(seed)
    per_period = max(1.0, on_rate_iops * mean_on_s)
    periods = int(requests / per_period * 1.5) + 16

    def pareto(mean: float, size: int) -> NDArray[np.float64]:
        scale = mean * (shape - 1.0) / shape  # Pareto(α, x_m) has mean α·x_m / (α − 1)
        return scale * (1.0 + rng.pareto(shape, size))

    counts = rng.poisson(on_rate_iops * pareto(mean_on_s, periods))
    while int(counts.sum()) < requests:
        counts = np.concatenate([counts, rng.poisson(on_rate_iops * pareto(mean_on_s, periods))])
    starts = np.cumsum(counts)
    starts = starts[starts < requests]
    arrivals = rng.exponential(1.0 / on_rate_iops, requests)
    arrivals[starts] += pareto(mean_off_s, starts.size)
    np.cumsum(arrivals, out=arrivals)
    return arrivals
