"""Trace readers: SPC (UMass) and plain CSV, in blocks; unreadable lines are named."""

from __future__ import annotations

import io

import numpy as np
import pytest

from basil.core import trace as trace_module
from basil.core.trace import onoff_pareto_arrivals, read_trace
from basil.errors import ValidationError

SPC = """0,20941264,8192,W,0.551706
0,20939840,8192,w,0.554041
1,4150400,4096,R,0.5600
# a comment
0,20939808,8192,r,0.585121

"""


def test_spc_lines_give_times_and_the_mix() -> None:
    trace = read_trace(io.StringIO(SPC))
    np.testing.assert_allclose(trace.arrivals, [0.551706, 0.554041, 0.56, 0.585121])
    assert (trace.reads, trace.writes) == (2, 2)
    assert trace.summary()["mean_size_bytes"] == pytest.approx(7168)
    assert not trace.reordered


@pytest.mark.parametrize(
    ("text", "expected", "reads"),
    [
        pytest.param("0.5\n0.25\n1.0\n", [0.25, 0.5, 1.0], 0, id="times-only-reordered"),
        pytest.param("timestamp,size,op\n0.1,4096,R\n0.2,512,W\n", [0.1, 0.2], 1, id="header"),
        pytest.param("0.1,4096\r\n0.2,512\r\n", [0.1, 0.2], 0, id="crlf-size"),
    ],
)
def test_csv_variants(text: str, expected: list[float], reads: int) -> None:
    trace = read_trace(io.StringIO(text), "csv")
    np.testing.assert_allclose(trace.arrivals, expected)
    assert trace.reads == reads


@pytest.mark.parametrize("block_lines", [3, 100_000], ids=["small-blocks", "one-block"])
@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        pytest.param("0,1,8192,X,0.7", "opcode", id="opcode"),
        pytest.param("0,1,8192,R,soon", "timestamp", id="timestamp"),
        pytest.param("0,1,8192,R", "expected 5", id="fields"),
        pytest.param("0,-1,8192,R,0.7", "LBA", id="lba"),
        pytest.param("0,1,big,R,0.7", "size", id="size"),
        pytest.param("0,1,8192,R,-2", "timestamp", id="negative-time"),
    ],
)
def test_an_unreadable_line_is_named(
    monkeypatch: pytest.MonkeyPatch, block_lines: int, bad_line: str, message: str
) -> None:
    monkeypatch.setattr(trace_module, "_BLOCK_LINES", block_lines)
    lines = [f"0,{k},8192,R,{k / 10:.1f}" for k in range(6)]
    lines.insert(4, bad_line)
    with pytest.raises(ValidationError, match=message) as err:
        read_trace(io.StringIO("\n".join(lines) + "\n"), "spc")
    assert [p.field for p in err.value.problems] == ["line 5"]


@pytest.mark.parametrize(
    ("text", "fmt", "field"),
    [
        pytest.param("", None, "trace", id="empty"),
        pytest.param("# only a comment\n\n", None, "trace", id="comments-only"),
        pytest.param("timestamp,size\n", "csv", "trace", id="header-only"),
        pytest.param("0.1,2,R,4\n", "csv", "line 1", id="csv-four-fields"),
        pytest.param("0.1\n", "tsv", "format", id="unknown-format"),
    ],
)
def test_empty_or_malformed_traces(text: str, fmt: str | None, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        read_trace(io.StringIO(text), fmt)
    assert [p.field for p in err.value.problems] == [field]


def test_blocks_join_into_one_sorted_array(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_module, "_BLOCK_LINES", 7)
    arrivals = onoff_pareto_arrivals(100, seed=4)
    text = "".join(f"0,{k},4096,{'RW'[k % 2]},{t!r}\n" for k, t in enumerate(arrivals.tolist()))
    trace = read_trace(io.StringIO(text))
    np.testing.assert_array_equal(trace.arrivals, arrivals)
    assert (trace.reads, trace.writes) == (50, 50)


def test_onoff_pareto_trace_is_bursty() -> None:
    arrivals = onoff_pareto_arrivals(50_000, seed=1, on_rate_iops=2000, mean_on_s=0.2, mean_off_s=0.8)
    assert arrivals.size == 50_000
    assert np.all(np.diff(arrivals) >= 0)
    per_bin = np.bincount((arrivals * 10).astype(np.int64))  # 100 ms bins
    assert np.count_nonzero(per_bin == 0) > 0.1 * per_bin.size  # off periods
    assert per_bin.max() > 1.5 * per_bin.mean()  # on periods well above the mean rate
