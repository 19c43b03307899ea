#!/usr/bin/env bash
# Run the test suites and print one summary. Called by `make test` after setup, with env.sh
# sourced. Usage: tools/run_tests.sh [all|packages|system]
#   packages  colcon test: each package's own tests (ros2_ws/src/*/test, sim_bridges/test)
#   system    pytest tests/: cross-package tests with real processes
# Exits non-zero when any test fails or errors, when a runner crashes, or when no test ran.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WS="$ROOT/ros2_ws"
RESULTS="$WS/test_results"
WHICH="${1:-all}"
case "$WHICH" in
  all|packages|system) ;;
  -h|--help) echo "usage: tools/run_tests.sh [all|packages|system]   (make test, make test-packages, make test-system)"; exit 0 ;;
  *) echo "usage: tools/run_tests.sh [all|packages|system]" >&2; exit 2 ;;
esac
failed_runs=()
expected=()   # suites that must produce a JUnit file: a silent "ran 0 tests" is a failure

rm -rf "$RESULTS"
mkdir -p "$RESULTS"

if [ "$WHICH" = all ] || [ "$WHICH" = packages ]; then
  mapfile -t BASE_PATHS <"$ROOT/.venv/.rlstack/base_paths"
  # Every package with test files must report results (colcon quietly runs nothing for a
  # Python package whose setup.py does not declare pytest as a test dependency).
  while IFS=$'\t' read -r name path _; do
    if compgen -G "$path/test/test_*.py" >/dev/null; then expected+=("$name"); fi
  done < <(cd "$ROOT" && colcon list --base-paths "${BASE_PATHS[@]}")
  echo "== colcon test (package tests)"
  # Each package's pytest writes its JUnit file to build/<pkg>/pytest.xml; stale ones from an
  # earlier run must not be counted.
  find "$WS/build" -maxdepth 2 -name pytest.xml -delete 2>/dev/null
  (cd "$ROOT" && colcon --log-base "$WS/log" test \
      --build-base "$WS/build" --install-base "$WS/install" --base-paths "${BASE_PATHS[@]}" \
      --event-handlers console_direct- console_cohesion- console_start_end+ status- summary+ \
      --pytest-args -p no:cacheprovider) || failed_runs+=("colcon test")
  for f in "$WS"/build/*/pytest.xml; do
    [ -e "$f" ] && cp "$f" "$RESULTS/$(basename "$(dirname "$f")").xml"
  done
  # Show the failures (if any) with their messages.
  colcon test-result --test-result-base "$WS/build" >/dev/null 2>&1 || \
    colcon test-result --test-result-base "$WS/build" --verbose 2>&1 | tail -n 60
fi

if [ "$WHICH" = all ] || [ "$WHICH" = system ]; then
  # The live view's browser test (tests/test_live_view.py) drives Debian's headless Chromium: install
  # it when missing and apt-get can (root); otherwise that one test says why it is skipped.
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      mkdir -p "$WS/log"
      echo "== installing chromium and chromium-driver for the browser test (log: $WS/log/chromium-apt.log)"
      { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
          chromium chromium-driver; } >"$WS/log/chromium-apt.log" 2>&1 \
        || echo "   could not install them (see the log): the browser test is skipped"
    fi
  fi
  # One pytest process per file: in a single process, after ~110 tests' worth of probes (each its
  # own rclpy context and DDS participant), new probes stopped discovering anything and every later
  # ROS test timed out (each file alone passes). Real nodes are one process each anyway.
  echo "== pytest tests/ (system tests, one process per file)"
  for file in "$ROOT"/tests/test_*.py; do
    stem="$(basename "$file" .py)"
    expected+=("system_${stem#test_}")
    echo "-- $stem"
    # lark (under rosidl's parser) imports sre_parse: two deprecation warnings per file that
    # only push real output out of CI's log.
    (cd "$ROOT" && python -m pytest "tests/$stem.py" -p no:cacheprovider -q -rfE \
        -W "ignore::DeprecationWarning:lark.utils" \
        --junitxml="$RESULTS/system_${stem#test_}.xml") || failed_runs+=("pytest tests/$stem.py")
  done
fi

python "$ROOT/tools/test_summary.py" "$RESULTS" --runner-failed "${failed_runs[*]:-}" \
  --expect ${expected[@]+"${expected[@]}"}
