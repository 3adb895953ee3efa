#!/usr/bin/env bash
# Relock: compile requirements.txt (the runtime dependencies and the app and cluster extras) and requirements-dev.txt
# (those and the dev extra, the runtime pins kept as constraints) from pyproject.toml's ranges, with hashes, for the
# machines headprune runs and is tested on (Linux x86_64, CPython 3.11). torch stays out of both: it is pinned in
# requirements-torch.txt, and resolved here as the CPU build in the machine's local wheel folder, whose dependencies
# the locks then hold. Pins already in a lock are kept: pass `--upgrade-package NAME` (or `--upgrade`) to move
# them; any argument goes to both compiles. uv comes from requirements-dev.txt (bash scripts/install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. .venv/bin/activate
compile() {
  uv pip compile pyproject.toml --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
    --find-links /opt/wheels -c requirements-torch.txt --no-emit-package torch \
    --custom-compile-command "bash scripts/lock.sh" --quiet "$@"
}
compile --extra app --extra cluster -o requirements.txt "$@"
compile --extra app --extra cluster --extra dev -c requirements.txt -o requirements-dev.txt "$@"
