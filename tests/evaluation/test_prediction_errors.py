"""benchmarks/prediction_errors.py: one configuration's touched datastores, predicted against measured
on the lab's physics, and the table they make."""

from __future__ import annotations

import pytest
from benchmarks import prediction_errors
from benchmarks.prediction_errors import main, run, table


def test_each_touched_datastore_has_its_prediction_measurement_and_groups() -> None:
    family = next(f for f in prediction_errors.harness.FAMILIES if f.name == "hetero")
    rows = run(family, 3)
    assert rows, "Basil moves disks on hetero seed 3"
    kinds = {"ssd", "fc15k", "sas10k", "sata7k"}
    for r in rows:
        assert r["predicted_ms"] > 0
        assert r["measured_ms"] > 0
        assert r["kind"] in kinds
        assert r["role"] in {"source", "target", "source+target"}
        assert r["round"] in {1, 2}
    lines = table(rows)
    assert lines[2].startswith("| all | ")
    assert f", {len(rows)})" in lines[2]
    assert any(line.startswith("| hetero | ") for line in lines)


def test_a_bad_family_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["nosuch:1-2"])
    assert refused.value.code == 2
    assert "'nosuch:1-2'" in capsys.readouterr().err
