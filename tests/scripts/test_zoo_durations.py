"""scripts/zoo_durations.py: each broken client's measured seconds, for the self-test's order."""

import importlib.util
import json
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "zoo_durations", _ROOT / "scripts" / "zoo_durations.py"
)
zoo_durations = importlib.util.module_from_spec(_spec)
sys.modules["zoo_durations"] = zoo_durations
_spec.loader.exec_module(zoo_durations)


def _run(root: Path, name: str, seconds: str | None, durations: list[float] | None) -> None:
    run = root / "zoo0" / name
    run.mkdir(parents=True)
    if durations is not None:
        report = {
            "cases": [{"nodeid": f"t.py::c{i}", "duration": d} for i, d in enumerate(durations)]
        }
        (run / "report.json").write_text(json.dumps(report))
    else:
        (run / "report.json").write_text("{broken")
    if seconds is not None:
        (run / zoo_durations.SECONDS_FILE).write_text(seconds)


def test_measured_seconds_come_from_the_run_or_else_its_cases(tmp_path, capsys):
    _run(tmp_path, "connects-on-add", "98.34\n", [1.0])
    _run(tmp_path, "no-redaction", None, [1.25, 2.0])
    _run(tmp_path, "no-approval", "garbage", None)  # neither figure: left out
    _run(tmp_path, "reference", "12", [12.0])  # not a broken client: left out of the file
    _run(tmp_path, "reference/shard-0", "7", [7.0])  # a part of the traced run: no client
    assert zoo_durations.measured(tmp_path) == {
        "connects-on-add": 98.3,
        "no-redaction": 3.2,
        "reference": 12.0,
    }
    out = tmp_path / "durations.json"
    assert zoo_durations.main([str(tmp_path), "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == {"connects-on-add": 98.3, "no-redaction": 3.2}
    assert "2 clients" in capsys.readouterr().out


def test_a_basetemp_without_runs_is_an_error(tmp_path, capsys):
    assert zoo_durations.main([str(tmp_path), "--out", str(tmp_path / "d.json")]) == 2
    assert "no broken client" in capsys.readouterr().err
    assert not (tmp_path / "d.json").exists()
