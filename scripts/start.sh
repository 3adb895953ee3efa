#!/usr/bin/env bash
# One command from a fresh machine to the dashboard: install, prepare the embedded default (model + corpora),
# compute the demo study and the task affinity maps of the GradTS demo's 8 units (1029 s from a fresh clone in
# the last measurement on 2 shared CPU cores, 963 s in the one before; seconds when cached), start the app.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
. .venv/bin/activate
python -m headprune_core prepare
# Two single-thread jobs at a time on a local Ray cluster use 2 cores better than one 2-thread job (1.16x faster
# here, measured). At most 4 at once: each holds a copy of the model. If Ray cannot start on this machine, the
# same jobs run one after another (whatever the sweep finished is cached and reused).
CPUS=$(python -c "import os; print(max(1, min(4, len(os.sched_getaffinity(0)))))")
python -m headprune_core sweep sweeps/demo.json --cpus "$CPUS" || python -m headprune_core study demo
exec streamlit run app.py "$@"
