"""``python -m bench`` writes bench/RESULTS.md again from its sections' JSON and keeps what was measured by hand."""

from __future__ import annotations

from bench import report


def test_python_m_bench_keeps_what_was_measured_by_hand():
    def section(name: str, value: float) -> report.Section:
        return report.Section(name, name.title(), ["a"], [[value]], command=f"python -m bench --only {name}",
                              machine="m", when="2026-12-07 10:00 UTC", seconds=3.0)

    one, gone, two = section("one", 1.0), section("gone", 0.0), section("two", 2.0)
    old = ("# H\n\n" + report.render_section(one) + "\n### By hand under one\n\nsome figure\n\n"
           + report.render_section(gone) + "\n### By hand under a gone section\n\nanother\n\n"
           + report.render_section(two) + "\n## Measured by hand\n\nMeasured by hand: a figure.\n")
    one.rows = [[1.5]]
    new = report.render([one, two], "# H", kept=old)
    assert "| 1.5 |" in new and "| 1 |" not in new and "## Gone" not in new and "| 0 |" not in new
    assert new.index("## One") < new.index("### By hand under one") < new.index("## Two")
    assert new.index("## Two") < new.index("### By hand under a gone section\n\nanother")
    assert new.rstrip().endswith("## Measured by hand\n\nMeasured by hand: a figure.")
    assert report.render([one, two], "# H", kept=new) == new
