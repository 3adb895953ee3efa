"""headprune's benchmarks: ``python -m bench`` measures every speed claim side by side with its reference and its
analytic limit, in one run per section, and writes ``bench/RESULTS.md`` (see :mod:`bench.__main__`)."""
