#!/usr/bin/env bash
# Every test: install (incl. chromium for the browser test), prepare the embedded default, run unit,
# integration (slow) and browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --browser
. .venv/bin/activate
python -m headprune_core prepare
python -m pytest -q -m "" tests
