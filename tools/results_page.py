#!/usr/bin/env python3
"""Builds docs/results.md, the one page of measured figures, from result files.

Sources, both committed and small:

* ``docs/results/<name>.json``: one run each. Written by the evaluators and benchmarks themselves
  (``--record docs/results/<name>.json`` on ``python -m rlstack_mission.evaluate``,
  ``python -m rlstack_perception.evaluate``, ``bench/bench_*.py``; :mod:`rlstack_common.results_record`),
  or, for a figure measured before those options existed, written by hand from the documentation of
  the time (``"source": "docs"``, with ``recorded_from`` naming the page and commit) until the run is
  repeated with ``--record``.
* ``policies/<name>/evaluation.yaml`` and ``provenance.yaml``: the shipped bundles' evaluations, as
  the bundle export writes them.

Fields of a results file: ``title``, ``section``, ``order`` (within the section), ``figures`` (a list
of ``{"label", "path", "format"}``: ``path`` is a dotted path into ``summary``, or a list of them for a
``format`` with several fields), ``command``, ``commit``, ``date``, ``hardware``, ``source``
(``evaluator`` or ``bench``: written by the run; ``docs``), ``recorded_from``, ``notes``, ``summary``.

Usage::

    python tools/results_page.py            # rewrite docs/results.md
    python tools/results_page.py --check    # exit 1 if docs/results.md is not what the files give
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import yaml

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "docs" / "results"
PAGE = ROOT / "docs" / "results.md"
POLICIES = ROOT / "policies"

#: section order on the page; a section not listed goes after these, by name
SECTIONS = ("Fetch mission", "Reliability", "Perception", "Navigation and localisation", "Policies",
            "Simulator and training throughput", "Setup and tests")
#: where a result file does not say more (the figures measured before results files recorded it)
PROJECT_MACHINE = "the project machine: 2 shared x86-64 cores, no GPU (CPU model not recorded)"
#: a line under a section's heading
SECTION_INTROS = {
    "Policies": ("Each shipped bundle's `evaluation.yaml`, written when the bundle is exported: episodes on "
                 "evaluation seeds never used in training, nominal and with the task's domain randomisation. "
                 "Commit and date: the export's (`provenance.yaml`: `commit`, `exported_at`)."),
}
#: sources of a file written by the run itself (an evaluator, a benchmark)
RUN_SOURCES = ("evaluator", "bench")
REQUIRED = ("title", "section", "figures", "command", "commit", "date", "hardware", "source", "summary")


class ResultsError(ValueError):
    pass


def _lookup(summary: Any, path: str) -> Any:
    cur = summary
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise ResultsError(f"no '{path}' in the summary (stops at '{part}')")
    return cur


def _plain(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(", ", ": "))
    return str(value)


def figure_value(doc: Dict[str, Any], fig: Dict[str, Any]) -> str:
    paths = fig["path"] if isinstance(fig["path"], list) else [fig["path"]]
    values = [_lookup(doc["summary"], p) for p in paths]
    fmt = fig.get("format")
    try:
        return fmt.format(*values) if fmt else " / ".join(_plain(v) for v in values)
    except (ValueError, TypeError, IndexError) as e:
        raise ResultsError(f"figure '{fig.get('label')}': format {fmt!r} does not fit {values!r}: {e}") from e


def load_results(folder: Path = RESULTS_DIR) -> List[Dict[str, Any]]:
    docs = []
    for path in sorted(folder.glob("*.json")):
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        try:
            doc = json.loads(path.read_text())
        except ValueError as e:
            raise ResultsError(f"{name}: not JSON: {e}") from e
        missing = [k for k in REQUIRED if k not in doc]
        if missing:
            raise ResultsError(f"{name}: missing {', '.join(missing)}")
        if doc["source"] not in RUN_SOURCES + ("docs",):
            raise ResultsError(f"{name}: source must be one of {', '.join(RUN_SOURCES + ('docs',))}")
        if doc["source"] == "docs" and not doc.get("recorded_from"):
            raise ResultsError(f"{name}: a figure recorded from the docs names them (recorded_from)")
        if not doc["figures"]:
            raise ResultsError(f"{name}: no figures")
        doc["_file"] = name
        for fig in doc["figures"]:
            try:
                fig["_value"] = figure_value(doc, fig)
            except ResultsError as e:
                raise ResultsError(f"{doc['_file']}: {e}") from e
        docs.append(doc)
    return docs


def _git_date(path: Path) -> str:
    try:
        return subprocess.run(["git", "log", "-1", "--format=%cs", "--", str(path)], cwd=ROOT, capture_output=True,
                              text=True, timeout=20, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def load_policies(folder: Path = POLICIES) -> List[Dict[str, Any]]:
    """One results entry per shipped bundle, from its evaluation.yaml and provenance.yaml."""
    out = []
    for ev_path in sorted(folder.glob("*/evaluation.yaml")):
        name = ev_path.parent.name
        ev = yaml.safe_load(ev_path.read_text()) or {}
        prov_path = ev_path.with_name("provenance.yaml")
        prov = yaml.safe_load(prov_path.read_text()) if prov_path.is_file() else {}
        nominal, randomized = ev.get("nominal") or {}, ev.get("randomized") or {}
        figures = [{"label": "success, nominal", "_value": "{:.0%} of {}".format(
            nominal.get("success_rate", ev.get("success_rate")), nominal.get("episodes", ev.get("episodes")))}]
        if randomized:
            figures.append({"label": "success, domain randomisation",
                            "_value": "{:.0%} of {}".format(randomized["success_rate"], randomized["episodes"])})
        seeds = nominal.get("seeds") or ev.get("seeds") or {}
        first, last = (seeds.get("first"), seeds.get("last")) if isinstance(seeds, dict) else (seeds[0], seeds[-1])
        figures.append({"label": "evaluation seeds", "_value": f"{first}..{last}"})
        command = (f"make train TASK={name}" if (ROOT / "config" / "train" / f"{name}.yaml").is_file()
                   else f"python -m rlstack_learning.pixels finish --bundle policies/{name}")
        out.append({
            "title": f"policies/{name}", "section": "Policies", "order": 0, "figures": figures,
            "command": command,
            "commit": prov.get("commit", ""),
            "date": str(prov.get("exported_at") or "")[:10] or _git_date(ev_path),
            "hardware": PROJECT_MACHINE,
            "source": "evaluator",
            "_file": ev_path.relative_to(ROOT).as_posix(),
        })
    return out


def _short(commit: str) -> str:
    dirty = commit.endswith("-dirty")
    sha = commit[:-len("-dirty")] if dirty else commit
    return (sha[:7] + (" (dirty)" if dirty else "")) if sha else "not recorded"


def render(results: List[Dict[str, Any]]) -> str:
    hardware: Dict[str, str] = {}
    for doc in results:
        hardware.setdefault(doc["hardware"], f"H{len(hardware) + 1}")

    def key(doc) -> Tuple:
        sec = doc["section"]
        return (SECTIONS.index(sec) if sec in SECTIONS else len(SECTIONS), sec, doc.get("order", 0), doc["title"])

    lines = [
        "# Results",
        "",
        "Every measured figure of the project, with the command that reproduces it, the commit it was",
        "measured at, the date and the hardware. This page is generated: `python tools/results_page.py`",
        "builds it from the result files in [results/](results/) and the shipped bundles'",
        "`policies/*/evaluation.yaml`; `python tools/results_page.py --check` (run by `make test`) fails",
        "when it is stale. To add or renew a figure, run its command with",
        "`--record docs/results/<name>.json` (the evaluators and `bench/bench_*.py` take it), then",
        "regenerate the page.",
        "",
        "Source: **evaluator** or **bench** means the file was written by the evaluator or benchmark itself;",
        "**docs** means the figure was copied from the project's documentation at the commit named",
        "(the page and commit are in the result file's `recorded_from`), and stays marked so until",
        "its command is run again with `--record`.",
    ]
    section = None
    for doc in sorted(results, key=key):
        if doc["section"] != section:
            section = doc["section"]
            lines += ["", f"## {section}", ""]
            if section in SECTION_INTROS:
                lines += [SECTION_INTROS[section], ""]
            lines += ["| result | figure | value | command | commit | date | hardware | source |",
                      "|---|---|---|---|---|---|---|---|"]
        title = f"[{doc['title']}]({Path(doc['_file']).relative_to('docs').as_posix()})" \
            if doc["_file"].startswith("docs/") else f"[{doc['title']}](../{doc['_file']})"
        for i, fig in enumerate(doc["figures"]):
            first = i == 0
            cells = [title if first else "", fig["label"], fig["_value"].replace("|", "\\|"),
                     f"`{doc['command']}`" if first else "", _short(doc["commit"]) if first else "",
                     doc["date"] if first else "", hardware[doc["hardware"]] if first else "",
                     doc["source"] if first else ""]
            lines.append("| " + " | ".join(cells) + " |")
    notes = [d for d in sorted(results, key=key) if d.get("notes")]
    if notes:
        lines += ["", "## Notes", ""]
        lines += [f"- **{d['title']}**: {d['notes']}" for d in notes]
    lines += ["", "## Hardware", ""]
    lines += [f"- **{tag}**: {desc}" for desc, tag in hardware.items()]
    return "\n".join(lines) + "\n"


def build() -> str:
    return render(load_results() + load_policies())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/results.md is stale; write nothing")
    a = ap.parse_args(argv)
    try:
        text = build()
    except ResultsError as e:
        print(f"results_page: {e}", file=sys.stderr)
        return 2
    if a.check:
        if not PAGE.is_file() or PAGE.read_text() != text:
            print("results_page: docs/results.md is stale: run python tools/results_page.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
