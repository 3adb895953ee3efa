#!/usr/bin/env bash
# Every check: install (incl. chromium for the browser test), check that the installed packages agree (pip check),
# prepare the embedded default, lint (ruff) and the layers contract (import-linter), then the fast tier on two workers,
# the slow tests of pure computation two at a time (marked `parallel`: no server, browser or cluster, nothing timed;
# a file at a time on a worker, so a module fixture is computed once), and the other slow and browser tests one at a
# time. No test may be skipped (see pytest_no_skips).
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
trap 'rm -f "$LOG"' EXIT
# pytest with these arguments, failing when it skipped a test: everything a skip waits for (Chromium, Playwright,
# kaleido, Ray) is installed above, so here a skip is a check that did not run. -rfEs lists failures, errors and each
# skip with its reason (an xfail is not a skip); --durations=15 prints the 15 slowest items of each tier.
pytest_no_skips() {
  local skipped
  python -m pytest -rfEs "$@" | tee "$LOG"
  # the summary's skip lines, less colour codes (PY_COLORS or FORCE_COLOR can turn them on)
  skipped=$(sed 's/\x1b\[[0-9;]*m//g' "$LOG" | grep -E '^SKIPPED \[[0-9]+\] ' || true)
  if [ -n "$skipped" ]; then
    echo "scripts/test.sh: failed: tests were skipped, and none may be here:" >&2
    echo "$skipped" >&2
    return 1
  fi
}
pytest_no_skips -q --durations=15 tests
pytest_no_skips -q --durations=15 -m "slow and parallel" -n 2 --dist loadfile tests
pytest_no_skips -q --durations=15 -m "(slow or browser) and not parallel" -n 0 tests
