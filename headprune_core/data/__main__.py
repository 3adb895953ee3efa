"""``python -m headprune_core.data prepare [--force]``: convert the embedded corpora into cache/corpora."""

import argparse
import sys

from headprune_core.data.corpora import prepare_corpora


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m headprune_core.data")
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="fetch and convert the embedded corpora")
    prep.add_argument("--force", action="store_true", help="rebuild corpora already prepared")
    prep.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    report = prepare_corpora(force=args.force, progress=not args.quiet)
    print(report.summary())
    return 1 if report.missing else 0


if __name__ == "__main__":
    sys.exit(main())
