"""``basil whatif``: table and JSON answers from a what-if document; bad documents name the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from basil.cli import main

DOCUMENT = {
    "datastore": {"name": "ds1", "queue_depth": 32},
    "disks": [
        {
            "name": "file",
            "read_iops": 150,
            "write_iops": 170,
            "read_latency_ms": 30,
            "write_latency_ms": 6,
            "read_oio": 4,
            "write_oio": 8,
            "group": "ds1",
        },
        {
            "name": "mail",
            "read_iops": 140,
            "write_iops": 160,
            "read_latency_ms": 35,
            "write_latency_ms": 7,
            "alone": False,
        },
    ],
}


def run(tmp_path: Path, document: object, *args: str) -> tuple[int, str]:
    path = tmp_path / "whatif.json"
    path.write_text(json.dumps(document))
    result = CliRunner().invoke(main, ["whatif", "--input", str(path), *args])
    return result.exit_code, result.output


def test_json_answer(tmp_path: Path) -> None:
    code, output = run(tmp_path, DOCUMENT, "--json")
    assert code == 0, output
    answer = json.loads(output)
    file_p, mail_p = answer["workloads"]
    # S = C / (1 + A) with A all of mail's outstanding IOs (Little's law: 4.9 reads + 1.12 writes)
    queue = 35 * 140 / 1000 + 7 * 160 / 1000
    assert file_p["read_latency_ms"] == pytest.approx(
        30 + 35 / (1 + queue) * 35 * 140 / 1000 + 0.5 * 7 / (1 + queue) * 7 * 160 / 1000
    )
    assert mail_p["confidence"].startswith("never measured alone")
    assert answer["paper_read_mix"] == pytest.approx(290 / 620)  # eq. 1, isolation throughputs
    assert answer["read_mix"] == pytest.approx(
        answer["read_iops"] / (answer["read_iops"] + answer["write_iops"])
    )
    assert [i["oio_source"] for i in answer["inputs"]] == ["measured", "Little's law"]


def test_table_answer(tmp_path: Path) -> None:
    code, output = run(tmp_path, DOCUMENT)
    assert code == 0, output
    assert "47% reads" in output
    assert "[never measured alone]" in output


def test_bad_document(tmp_path: Path) -> None:
    bad = {"disks": [{**DOCUMENT["disks"][0], "read_latency_ms": "slow"}]}  # type: ignore[index, dict-item]
    code, output = run(tmp_path, bad)
    assert code == 2
    assert "disks[0].read_latency_ms" in output


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "whatif.json"
    path.write_text("{nope")
    result = CliRunner().invoke(main, ["whatif", "--input", str(path)])
    assert result.exit_code == 2
    assert "is not JSON" in result.output
