"""docs/results.md is what its result files give, and an evaluator's --record writes such a file."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _page_module():
    spec = importlib.util.spec_from_file_location("results_page", ROOT / "tools" / "results_page.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_results_page_is_current():
    proc = subprocess.run([sys.executable, "tools/results_page.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_every_figure_has_command_commit_date_and_hardware():
    page = _page_module()
    results = page.load_results() + page.load_policies()
    assert len(results) >= 10
    for doc in results:
        for key in ("command", "commit", "date", "hardware"):
            assert doc[key], (doc["_file"], key)
        assert all(fig["_value"] for fig in doc["figures"]), doc["_file"]
        if doc["source"] == "docs":
            assert doc["recorded_from"], doc["_file"]


def test_a_stale_page_fails_the_check(tmp_path, monkeypatch):
    page = _page_module()
    stale = tmp_path / "results.md"
    stale.write_text(page.build().replace("| success |", "| success (edited) |", 1))
    monkeypatch.setattr(page, "PAGE", stale)
    assert page.main(["--check"]) == 1
    assert page.main([]) == 0 and page.main(["--check"]) == 0


def test_a_figure_without_its_value_in_the_summary_is_refused(tmp_path):
    page = _page_module()
    doc = json.loads((ROOT / "docs" / "results" / "soak.json").read_text())
    doc["figures"].append({"label": "missing", "path": "no_such_field"})
    (tmp_path / "soak.json").write_text(json.dumps(doc))
    try:
        page.load_results(tmp_path)
    except page.ResultsError as e:
        assert "no_such_field" in str(e)
    else:
        raise AssertionError("a figure naming no field of the summary was accepted")


def test_a_benchmark_records_its_summary_with_the_run(tmp_path):
    """bench_sim_backend --record writes the summary it prints, with command, commit, date and hardware; a
    second run keeps the page fields (title, section, figures) of the file and renews the rest."""
    out = tmp_path / "sim_backend.json"
    cmd = [sys.executable, "bench/bench_sim_backend.py", "--quick", "--scenes", "cartpole", "--record", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["summary"] == json.loads(proc.stdout)
    assert doc["source"] == "evaluator" and "bench/bench_sim_backend.py --quick" in doc["command"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert doc["commit"].split("-")[0] == head
    assert doc["date"].startswith("20") and "logical cores" in doc["hardware"]

    doc.update(title="backend rate", section="Simulator and training throughput",
               figures=[{"label": "repeats", "path": "repeats"}])
    out.write_text(json.dumps(doc))
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    again = json.loads(out.read_text())
    assert again["title"] == "backend rate" and again["figures"] == [{"label": "repeats", "path": "repeats"}]
