#!/usr/bin/env bash
# Every check: install (incl. chromium for the browser test), prepare the embedded default, lint (ruff) and the
# layers contract (import-linter), then the fast tier on two workers and the slow and browser tests one at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --browser
. .venv/bin/activate
headprune prepare
ruff check .
lint-imports --no-logo
python -m pytest -q tests
python -m pytest -q -m "slow or browser" -n 0 tests
