"""`make test` fails on a failing test, on a crashed runner and on no tests at all.

tools/run_tests.sh hands every JUnit file to tools/test_summary.py, whose exit status is
make test's. These tests feed it JUnit files written by real pytest runs.
"""

import subprocess
import sys

from conftest import REPO

SUMMARY = REPO / "tools" / "test_summary.py"


def junit_from(tmp_path, name: str, source: str):
    """Run pytest on ``source`` and leave its JUnit file in tmp_path/results/<name>.xml."""
    (tmp_path / f"test_{name}.py").write_text(source)
    results = tmp_path / "results"
    results.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / f"test_{name}.py"),
                    f"--junitxml={results / name}.xml"], capture_output=True, timeout=120)
    return results


def summarise(results, *extra):
    return subprocess.run([sys.executable, str(SUMMARY), str(results), *extra],
                          capture_output=True, text=True, timeout=60)


def test_all_passing_exits_zero(tmp_path):
    results = junit_from(tmp_path, "ok", "def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    result = summarise(results)
    assert result.returncode == 0
    assert result.stdout.strip().splitlines()[-1] == "Total: 2 passed, 0 failed, 0 skipped"


def test_a_deliberately_failing_test_exits_non_zero(tmp_path):
    results = junit_from(tmp_path, "mixed", "def test_a():\n    pass\n\ndef test_fails():\n    assert 1 == 2\n")
    result = summarise(results)
    assert result.returncode == 1
    assert "FAILED" in result.stdout and "test_fails" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "Total: 1 passed, 1 failed, 0 skipped"


def test_collection_error_counts_as_failure(tmp_path):
    results = junit_from(tmp_path, "broken", "import no_such_module_xyz\n\ndef test_a():\n    pass\n")
    assert summarise(results).returncode == 1


def test_no_test_run_exits_non_zero(tmp_path):
    results = junit_from(tmp_path, "empty", "# no tests here\n")
    result = summarise(results)
    assert result.returncode == 1 and "no test ran" in result.stdout


def test_crashed_runner_exits_non_zero_even_with_passes(tmp_path):
    results = junit_from(tmp_path, "ok", "def test_a():\n    pass\n")
    result = summarise(results, "--runner-failed", "colcon test")
    assert result.returncode == 1 and "colcon test" in result.stdout


def test_expected_suite_without_results_exits_non_zero(tmp_path):
    results = junit_from(tmp_path, "ok", "def test_a():\n    pass\n")
    result = summarise(results, "--expect", "ok", "some_package")
    assert result.returncode == 1
    assert "suite 'some_package' has tests but reported no results" in result.stdout


def test_expected_suite_that_ran_nothing_exits_non_zero(tmp_path):
    results = junit_from(tmp_path, "ok", "def test_a():\n    pass\n")
    junit_from(tmp_path, "empty", "# nothing\n")
    result = summarise(results, "--expect", "ok", "empty")
    assert result.returncode == 1 and "suite 'empty' has tests but ran none" in result.stdout


def test_failures_are_repeated_at_the_end_with_their_message(tmp_path):
    """CI keeps the head and the tail of the log: each failure's message must be in the tail."""
    source = ("def helper(x):\n    return x * 2\n\n"
              "def test_fails():\n    value = helper(21)\n    assert value == 41, f'got {value} from the helper'\n")
    results = junit_from(tmp_path, "detail", source)
    out = summarise(results).stdout
    tail = out[out.index("== Test summary"):]
    assert "got 42 from the helper" in tail
    # after the table and the FAILED lines, right before the total: the part of the log CI keeps
    assert tail.index("FAILED ") < tail.index("got 42 from the helper") < tail.index("Total:")
