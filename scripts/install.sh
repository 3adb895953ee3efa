#!/usr/bin/env bash
# Install headprune and its locked dependencies into .venv (idempotent). With --browser, also Debian's chromium for the
# real-browser test (Playwright, which drives it, is in the dev lock). Needs only Python 3.11+, pip and the package
# registries.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# Debian's chromium installs while pip does (each mostly waits on its downloads and one core); checked at the end
browser=""
if [ "${1:-}" = "--browser" ] && [ ! -x /usr/bin/chromium ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  browser_log=$(mktemp)
  ($SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium) \
    >"$browser_log" 2>&1 &
  browser=$!
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
# --no-compile: Python compiles a module when it is first imported, so the install does not compile all 1.9 GB of
# packages (a minute on 2 cores) for the few modules headprune imports.
# The locks (scripts/lock.sh makes them), every file checked against its hash: the runtime dependencies and the dev
# tools (the dev lock repeats the runtime pins; pip fails if the two disagree). torch is in neither and nothing in them
# needs it: in hash mode a package that did would fail here, not pull a (multi-GB CUDA) torch build in behind our back.
python -m pip install --quiet --no-compile --require-hashes -r requirements.txt -r requirements-dev.txt
# torch, pinned without a hash (requirements-torch.txt says why): here the CPU build from the machine's wheel folder,
# whose dependencies the locks have just installed; elsewhere the build pip picks for the platform, with its own.
python -m pip install --quiet --no-compile -r requirements-torch.txt
# headprune itself, editable: the `headprune` command, and imports that follow this checkout
python -m pip install --quiet --no-deps --no-build-isolation -e .
if [ -n "$browser" ] && ! wait "$browser"; then
  cat "$browser_log" >&2
  echo "scripts/install.sh: failed: apt-get could not install Debian's chromium (its output above)" >&2
  exit 1
fi
echo "headprune installed in .venv"
