#!/usr/bin/env bash
# Every check: install (incl. chromium for the browser test), check that the installed packages agree (pip check),
# prepare the embedded default, lint (ruff) and the layers contract (import-linter), then the fast tier on two workers
# and the slow and browser tests one at a time, the quick bench beside them. No test may be skipped (pytest_no_skips).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --browser
. .venv/bin/activate
# the locks and torch's pin are installed apart (scripts/install.sh): their requirements must still meet
python -m pip check
headprune prepare
ruff check .
lint-imports --no-logo
LOG=$(mktemp)
BENCH_LOG=$(mktemp)
trap 'rm -rf "$LOG" "$BENCH_LOG" "${BENCH_TMP:-}"' EXIT
# pytest with these arguments into log file $1 (shown as it runs with --show), failing when it skipped a test:
# everything a skip waits for (Chromium, Playwright, kaleido, Ray) is installed above, so here a skip is a check that
# did not run. -rfEs lists failures, errors and each skip with its reason (an xfail is not a skip); --durations=15
# prints the 15 slowest items of each run.
pytest_no_skips() {
  local log=$1 rc=0 skipped
  shift
  if [ "${1:-}" = "--show" ]; then
    shift
    python -m pytest -rfEs "$@" 2>&1 | tee "$log" || rc=$?
  else
    python -m pytest -rfEs "$@" > "$log" 2>&1 || rc=$?
  fi
  # the summary's skip lines, less colour codes (PY_COLORS or FORCE_COLOR can turn them on)
  skipped=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^SKIPPED \[[0-9]+\] ' || true)
  if [ -n "$skipped" ]; then
    echo "scripts/test.sh: failed: tests were skipped, and none may be here:" >&2
    echo "$skipped" >&2
    return 1
  fi
  return "$rc"
}
pytest_no_skips "$LOG" --show -q --durations=15 tests
# The slow and browser tests one at a time, and beside them, in a second process, the quick bench
# (tests/integration/test_bench.py: its classes are servers and browsers that mostly wait on each other); the bench
# takes its servers' ports from a range of its own (tests/helpers/browser.py: free_port).
BENCH_TMP=$(mktemp -d)  # its own pytest temp folder, and no pytest cache shared with the other process
(export HEADPRUNE_TEST_PORT_BASE=20000
 pytest_no_skips "$BENCH_LOG" -q --durations=15 -m "slow or browser" -n 0 -p no:cacheprovider \
   --basetemp "$BENCH_TMP" tests/integration/test_bench.py) &
BENCH=$!
rc=0
pytest_no_skips "$LOG" --show -q --durations=15 -m "slow or browser" -n 0 --ignore=tests/integration/test_bench.py \
  tests || rc=$?
bench_rc=0
wait "$BENCH" || bench_rc=$?
echo "--- the quick bench (tests/integration/test_bench.py), run beside the tests above ---"
cat "$BENCH_LOG"
if [ "$rc" -ne 0 ] || [ "$bench_rc" -ne 0 ]; then
  echo "scripts/test.sh: failed: the slow tests exited $rc, the quick bench $bench_rc" >&2
  exit 1
fi
