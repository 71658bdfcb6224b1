"""benchmarks/README.md is what benchmarks/make_readme.py generates from the committed
results: no figure in it is typed by hand, and none disagrees with benchmarks/results/."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _make_readme():
    spec = importlib.util.spec_from_file_location("make_readme",
                                                  ROOT / "benchmarks" / "make_readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_readme_is_generated_from_the_results():
    assert (ROOT / "benchmarks" / "README.md").read_text() == _make_readme().render()


def test_check_mode_fails_on_a_changed_record(tmp_path, monkeypatch):
    module = _make_readme()
    results = tmp_path / "results"
    results.mkdir()
    for src in (ROOT / "benchmarks" / "results").iterdir():
        if src.suffix in (".jsonl", ".json"):
            (results / src.name).write_text(src.read_text())
    readme = tmp_path / "README.md"
    readme.write_text((ROOT / "benchmarks" / "README.md").read_text())
    monkeypatch.setattr(module, "RESULTS", results)
    monkeypatch.setattr(module, "README", readme)
    assert module.main(["--check"]) == 0
    rows = [json.loads(line) for line in (results / "warm_solver.jsonl").read_text().splitlines()]
    rows[0]["warm_s"] = 99.0
    (results / "warm_solver.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert module.main(["--check"]) == 1
    assert module.main([]) == 0 and "| 99.00 |" in readme.read_text()
    assert module.main(["--check"]) == 0


def test_readme_stays_short():
    # 400 lines was the aim; the scale-out, BSGD-averaging and restructuring sections took
    # it to 436: a section that grows past this is to be shortened, not the limit raised
    assert len((ROOT / "benchmarks" / "README.md").read_text().splitlines()) <= 440


def test_readme_results_table_figures_come_from_the_benchmarks_readme():
    import re

    readme = (ROOT / "README.md").read_text()
    bench = (ROOT / "benchmarks" / "README.md").read_text()
    start = readme.index("| data set | rows |")
    rows = readme[start:readme.index("\n\n", start)].splitlines()[2:]
    figures = [f for row in rows for f in re.findall(r"\d[\d,]*\.\d+", row)]
    assert len(figures) >= 15
    assert [f for f in figures if f not in bench] == []
