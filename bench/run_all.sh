#!/usr/bin/env bash
# Run every benchmark in bench/ and keep its JSON in out/bench/<name>.json.
# Usage (through make, which sources env.sh): make bench  |  BENCH_ARGS=--quick make bench
# Benchmarks print JSON on stdout and a markdown table on stderr. A figure for docs/results.md comes
# from one benchmark run with --record docs/results/<name>.json (command, commit, date, hardware kept).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$ROOT/out/bench"
status=0
for bench in "$ROOT"/bench/bench_*.py; do
  name="$(basename "$bench" .py)"
  echo "== $name ${BENCH_ARGS:-}"
  if python "$bench" ${BENCH_ARGS:-} >"$ROOT/out/bench/$name.json"; then
    echo "   -> out/bench/$name.json"
  else
    echo "   FAILED (exit $?)" >&2
    status=1
  fi
done
exit $status
