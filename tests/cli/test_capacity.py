"""``basil capacity``: text and JSON answers on a trace file, bad input naming the option or line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from basil.cli import main
from basil.core.shaping import required_count, rtt_admitted
from basil.core.trace import onoff_pareto_arrivals, read_trace


@pytest.fixture
def spc_trace(tmp_path: Path) -> Path:
    arrivals = onoff_pareto_arrivals(5_000, seed=8)
    path = tmp_path / "web.spc"
    path.write_text(
        "".join(f"0,{8 * k},4096,{'RW'[k % 4 == 0]},{t:.6f}\n" for k, t in enumerate(arrivals.tolist()))
    )
    return path


def test_json_answer_is_consistent_with_the_simulator(spc_trace: Path) -> None:
    result = CliRunner().invoke(
        main, ["capacity", "--trace", str(spc_trace), "--fraction", "0.95", "--bound-ms", "10", "--json"]
    )
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)["traces"][0]
    assert answer["trace"]["requests"] == 5_000
    assert answer["trace"]["read_fraction"] == pytest.approx(0.75)
    with spc_trace.open() as lines:
        arrivals = read_trace(lines).arrivals
    need = required_count(0.95, 5_000)
    assert rtt_admitted(arrivals, answer["capacity_iops"], 0.01) >= need
    assert rtt_admitted(arrivals, answer["capacity_iops"] * (1 - 1e-3), 0.01) < need
    assert answer["capacity_full_iops"] >= answer["capacity_iops"]
    assert [p["fraction"] for p in answer["curve"]] == sorted(p["fraction"] for p in answer["curve"])


def test_text_answer_and_several_clients(spc_trace: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.csv"
    other.write_text(
        "timestamp\n" + "".join(f"{t:.6f}\n" for t in onoff_pareto_arrivals(3_000, seed=9).tolist())
    )
    result = CliRunner().invoke(
        main,
        [
            "capacity",
            "--trace",
            str(spc_trace),
            "--trace",
            str(other),
            "--fraction",
            "0.9",
            "--bound-ms",
            "20",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "capacity for 90.00% within 20 ms" in result.output
    assert "2 clients together" in result.output


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(["--fraction", "0", "--bound-ms", "10"], "--fraction", id="fraction"),
        pytest.param(["--fraction", "0.9", "--bound-ms", "-1"], "--bound-ms", id="bound"),
    ],
)
def test_bad_options_are_named(spc_trace: Path, args: list[str], expected: str) -> None:
    result = CliRunner().invoke(main, ["capacity", "--trace", str(spc_trace), *args])
    assert result.exit_code == 2
    assert expected in result.output


def test_unreadable_line_is_named_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.spc"
    path.write_text("0,1,4096,R,0.1\n0,2,4096,R,0.2\n0,3,4096,Q,0.3\n")
    result = CliRunner().invoke(
        main, ["capacity", "--trace", str(path), "--fraction", "0.9", "--bound-ms", "10"]
    )
    assert result.exit_code == 2
    assert f"{path}: line 3" in result.output
    assert "opcode" in result.output


@pytest.mark.parametrize(
    ("extra", "env", "expected"),
    [
        pytest.param([], {}, ["--service", "BASIL_TOKEN"], id="nowhere-to-send"),
        pytest.param(["--service", "http://basil:8443"], {"BASIL_TOKEN": "t"}, ["https://"], id="plain-http"),
        pytest.param(["--service", "https://basil:8443"], {}, ["BASIL_TOKEN"], id="no-token"),
    ],
)
def test_an_upload_for_a_vm_needs_where_and_a_token(
    spc_trace: Path, extra: list[str], env: dict[str, str], expected: list[str]
) -> None:
    """Nothing is sent without an https:// service and a token (read from the environment only)."""
    args = ["capacity", "--trace", str(spc_trace), "--fraction", "0.9", "--bound-ms", "10", "--vm", "oltp-1"]
    result = CliRunner(env={"BASIL_URL": None, "BASIL_TOKEN": None, **env}).invoke(main, [*args, *extra])
    assert result.exit_code == 2
    for text in expected:
        assert text in result.output


def test_an_upload_takes_one_trace(spc_trace: Path) -> None:
    result = CliRunner(env={"BASIL_URL": "https://basil:8443", "BASIL_TOKEN": "t"}).invoke(
        main,
        ["capacity", "--trace", str(spc_trace), "--trace", str(spc_trace), "--fraction", "0.9",
         "--bound-ms", "10", "--vm", "oltp-1"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "exactly one trace" in result.output
