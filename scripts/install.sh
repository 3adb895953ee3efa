#!/usr/bin/env bash
# Install headprune and its pinned dependencies into .venv (idempotent). With --browser, also Debian's chromium + Playwright for the
# real-browser test. Needs only Python 3.11+, pip and the package registries.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
# torch first and pinned, so nothing pulls a different (multi-GB CUDA) build in behind our back
python -m pip install --quiet "torch==2.13.0"
python -m pip install --quiet -r requirements.txt
# headprune itself, editable: the `headprune` command, and imports that follow this checkout
python -m pip install --quiet --no-deps --no-build-isolation -e .
if [ "${1:-}" = "--browser" ]; then
  python -m pip install --quiet "playwright==1.65.2"
  if [ ! -x /usr/bin/chromium ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
  fi
fi
echo "headprune installed in .venv"
