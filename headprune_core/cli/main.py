"""Command line: ``headprune <command> ...`` (or ``python -m headprune_core``; ``--help`` on any command).

The parser (:mod:`headprune_core.cli.args`) needs no heavy import, so ``--help`` and bad arguments answer at
once; each command's module (``cli/runs.py``, ``plans``, ``sweep``, ``multitask``, ``cache``, ``data``) is
imported when its command runs.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from pathlib import Path

from headprune_core.base.cache import check_folder
from headprune_core.cli.args import build_parser

COMMANDS = {
    "prepare": "data", "tasks": "data", "data": "data",
    "study": "plans", "sweep": "sweep", "findings": "findings", "report": "findings",
    "affinity": "multitask", "gradts": "multitask", "stemcells": "multitask",
    "finetune": "runs", "score": "runs", "curve": "runs", "evaluate": "runs", "refinetune": "runs", "prune": "runs",
    "ls": "cache", "show": "cache", "rm": "cache", "export": "cache", "cache": "cache", "bundle": "bundle",
    "serve": "serve",
}
"""Each command and the module of ``headprune_core.cli.main`` whose ``cmd_<command>`` runs it."""


def command(name: str):
    """The function that runs command ``name``."""
    # imported here, on use: the command modules import torch, datasets and transformers (seconds), which
    # --help and a mistyped argument never need
    module = importlib.import_module(f"headprune_core.cli.{COMMANDS[name]}")
    return getattr(module, f"cmd_{name}")


def expand_home(args) -> None:
    """``~`` and ``~/...`` in every path-like argument, as a shell would have expanded them (``--out=~/x`` and a
    quoted ``"~/x"`` reach us unexpanded; a folder literally named ``~`` is never what was meant). Names of tasks,
    models and plans never start with ``~``; ``TASK=~/file`` data sources are expanded where they are read."""
    for name, value in vars(args).items():
        if isinstance(value, str) and (value == "~" or value.startswith("~/")):
            setattr(args, name, os.path.expanduser(value))
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            setattr(args, name, [os.path.expanduser(v) if v == "~" or v.startswith("~/") else v for v in value])


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    expand_home(args)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    before = os.environ.get("HEADPRUNE_CACHE")  # --cache holds for this command (and what it starts), then goes
    try:
        if getattr(args, "cache", None):
            os.environ["HEADPRUNE_CACHE"] = str(check_folder(Path(args.cache).expanduser().resolve(),
                                                             "cache folder"))
        return command(args.command)(args) or 0
    except KeyboardInterrupt:
        print("\ninterrupted: finished results stay cached; run the same command again to resume.",
              file=sys.stderr)
        return 130
    except (ValueError, KeyError, OSError, RuntimeError) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"error: {msg}", file=sys.stderr)
        return 2
    finally:
        if before is None:
            os.environ.pop("HEADPRUNE_CACHE", None)
        else:
            os.environ["HEADPRUNE_CACHE"] = before
