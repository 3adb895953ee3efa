#!/usr/bin/env bash
# One command from a fresh machine to the dashboard: install, prepare the embedded default (model + corpora),
# compute the demo study (about 13 minutes the first time on 2 shared CPU cores, seconds when cached), start the app.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
. .venv/bin/activate
python -m headprune_core prepare
python -m headprune_core study demo
exec streamlit run app.py "$@"
