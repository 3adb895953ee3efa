#!/usr/bin/env bash
# Every check: install (incl. chromium for the browser test), check that the installed packages agree (pip check),
# prepare the embedded default, lint (ruff) and the layers contract (import-linter), then the fast tier on two workers;
# the slow tests of pure computation two at a time (marked `parallel`: no server, browser or cluster, nothing timed;
# a file at a time on a worker, so a module fixture is computed once) while the slow tests that mostly wait and judge
# no time (marked `beside`: the simulated Ray clusters) run in a process of their own; then the other slow and browser
# tests two at a time, and last those that must run alone (marked `alone`: a time judged, a local Ray), one at a time.
# No test may be skipped (see pytest_no_skips).
set -euo pipefail
cd "$(dirname "$0")/.."
# Python writes each module's bytecode the first time it imports it, so the many Python processes below (workers,
# CLI runs, servers, Ray workers) read it rather than compile torch, transformers and streamlit again: the install
# compiles nothing (--no-compile) and a machine that sets PYTHONDONTWRITEBYTECODE would have every process compile
# from source (measured: 9.4 s against 4.4 s to import torch, transformers and the Study)
unset PYTHONDONTWRITEBYTECODE
bash scripts/install.sh --browser
. .venv/bin/activate
# the locks and torch's pin are installed apart (scripts/install.sh): their requirements must still meet
python -m pip check
headprune prepare
ruff check .
lint-imports --no-logo
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT
# pytest with these arguments (after the log file to write), failing when it failed or skipped a test: everything a
# skip waits for (Chromium, Playwright, kaleido, Ray) is installed above, so here a skip is a check that did not run.
# -rfEs lists failures, errors and each skip with its reason (an xfail is not a skip); --durations=15 prints the 15
# slowest items of each tier. pytest's status is kept by hand: `set -e` does not act inside a function called
# before `||`.
pytest_no_skips() {
  local log=$1 rc=0 skipped
  shift
  python -m pytest -rfEs "$@" 2>&1 | tee "$log" || rc=$?
  # the summary's skip lines, less colour codes (PY_COLORS or FORCE_COLOR can turn them on)
  skipped=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^SKIPPED \[[0-9]+\] ' || true)
  if [ -n "$skipped" ]; then
    echo "scripts/test.sh: failed: tests were skipped, and none may be here:" >&2
    echo "$skipped" >&2
    return 1
  fi
  return "$rc"
}
pytest_no_skips "$LOGS/fast" -q --durations=15 tests
# The simulated Ray clusters (they mostly wait on their nodes, and must pass beside a CPU-heavy process) run in a
# process of their own (one torch thread, its own temp folder) while the slow pure computations run two at a time;
# its log follows theirs.
status=0
OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 pytest_no_skips "$LOGS/beside" -q --durations=15 \
  -m "(slow or browser) and beside" -n 0 --basetemp="$LOGS/beside-tmp" tests >/dev/null &
beside=$!
pytest_no_skips "$LOGS/parallel" -q --durations=15 -m "slow and parallel" -n 2 --dist loadfile tests || status=$?
wait "$beside" || status=$?
echo "== the tests that ran beside them (-m '(slow or browser) and beside'):"
cat "$LOGS/beside"
[ "$status" -eq 0 ] || exit "$status"
# the other slow and browser tests (servers and Chromium, which wait as much as they compute; nothing timed) two at a
# time, a file at a time on a worker; then the ones that must run with nothing beside them, one at a time
pytest_no_skips "$LOGS/servers" -q --durations=15 -m "(slow or browser) and not (parallel or beside or alone)" \
  -n 2 --dist loadfile tests
pytest_no_skips "$LOGS/alone" -q --durations=15 -m "alone" -n 0 tests
