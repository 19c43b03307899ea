#!/usr/bin/env python3
"""Print one summary of every JUnit XML file in a folder; fail on failures or on no tests.

`make test` runs colcon test (one JUnit file per package) and pytest on tests/ (one more
file); this reads them all and ends with the line

    Total: N passed, N failed, N skipped

Exit status: 0 only when at least one test passed, none failed or errored, no test runner
reported a crash (``--runner-failed``, e.g. pytest exiting on a collection error), and
every suite named with ``--expect`` left a JUnit file with at least one test in it.

Each failure is printed again at the very end with its message and the last lines of its
traceback: CI logs keep only the head and the tail of a long run, and a failure that scrolled
out of both could not be read (three policy_safety failures once left no message).
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Counts:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)
    details: dict[str, str] = field(default_factory=dict)   # failure name -> message and traceback tail

    def add(self, other: "Counts") -> None:
        self.passed += other.passed
        self.failed += other.failed
        self.skipped += other.skipped
        self.failures += other.failures
        self.details.update(other.details)


# CI shows ~2,000 characters of a log's tail: each failure's detail is kept short, and printed last
DETAIL_LINES = 6       # traceback lines kept per failure
DETAIL_CHARS = 300     # characters of the failure message kept
LINE_CHARS = 160       # characters kept per traceback line
MAX_DETAILED = 4       # failures printed with details (the rest by name only)


def failure_detail(element: ET.Element) -> str:
    """The message and the last lines of the traceback of a <failure> or <error> element."""
    message = (element.get("message") or "").strip()
    if len(message) > DETAIL_CHARS:
        message = message[:DETAIL_CHARS] + " ..."
    tail = [line[:LINE_CHARS] for line in (element.text or "").rstrip().splitlines() if line.strip()][-DETAIL_LINES:]
    return "\n".join(([message] if message else []) + tail)


def count_junit(path: Path) -> Counts:
    """Count the test cases of one JUnit file (errors count as failures)."""
    counts = Counts()
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}".lstrip(":")
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        if bad is not None:
            counts.failed += 1
            counts.failures.append(name)
            counts.details[name] = failure_detail(bad)
        elif case.find("skipped") is not None:
            counts.skipped += 1
        else:
            counts.passed += 1
    # A suite-level error (e.g. a collection error) has no testcase of its own.
    for suite in root.iter("testsuite"):
        declared_errors = int(suite.get("errors", 0) or 0)
        case_errors = sum(1 for c in suite.iter("testcase") if c.find("error") is not None)
        if declared_errors > case_errors:
            counts.failed += declared_errors - case_errors
            counts.failures.append(f"{path.stem}: {declared_errors - case_errors} error(s) outside test cases")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="folder with JUnit XML files")
    parser.add_argument("--runner-failed", default="",
                        help="names of test runners that exited non-zero (space separated)")
    parser.add_argument("--expect", nargs="*", default=[],
                        help="suites (JUnit file stems) that must be present and non-empty")
    args = parser.parse_args(argv)

    total = Counts()
    rows = []
    for path in sorted(args.results.glob("*.xml")):
        try:
            counts = count_junit(path)
        except ET.ParseError as exc:
            counts = Counts(failed=1, failures=[f"{path.name}: unreadable JUnit file ({exc})"])
        rows.append((path.stem, counts))
        total.add(counts)

    print("\n== Test summary")
    width = max([len(name) for name, _ in rows] + [5])
    print(f"  {'suite':<{width}}  passed  failed  skipped")
    for name, c in rows:
        print(f"  {name:<{width}}  {c.passed:>6}  {c.failed:>6}  {c.skipped:>7}")
    for failure in total.failures:
        print(f"  FAILED {failure}")
    problems = []
    if args.runner_failed.strip():
        problems.append(f"test runner(s) exited with an error: {args.runner_failed.strip()}")
    if total.passed == 0:
        problems.append("no test ran")
    counted = {name: c for name, c in rows}
    for suite in args.expect:
        if suite not in counted:
            problems.append(f"suite '{suite}' has tests but reported no results")
        elif counted[suite].passed + counted[suite].failed + counted[suite].skipped == 0:
            problems.append(f"suite '{suite}' has tests but ran none")
    for problem in problems:
        print(f"  ERROR {problem}")
    for failure in total.failures[:MAX_DETAILED]:
        if total.details.get(failure):
            print(f"-- {failure}")
            print("\n".join(f"   | {line}" for line in total.details[failure].splitlines()))
    print(f"Total: {total.passed} passed, {total.failed} failed, {total.skipped} skipped")
    return 1 if (total.failed or problems) else 0


if __name__ == "__main__":
    sys.exit(main())
