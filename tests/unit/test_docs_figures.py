"""Every measured figure lives in one place, bench/RESULTS.md, with the command that measured it; a page that
quotes one marks the quote, and these tests check each quote against that place, so a copy cannot drift.

In RESULTS.md a figure measured by hand is marked ``<!--fig NAME-->VALUE``; a goal of a section that
``python -m bench`` writes is quoted by its section and goal, ``<!--fig SECTION: GOAL-->``, and its value is the
goal's measured cell (from ``bench/results/SECTION.json``, which RESULTS.md is rendered from). A quote on another
page is the same marker, then the same value (bold or not). Also checked: no page holds an unmarked copy of a
figure, and RESULTS.md's written sections are what their JSON renders, so ``python -m bench`` keeps every hand-made
part when it writes the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench import report
from bench.__main__ import HEADER, SECTIONS

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "RESULTS.md"
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# where a copy could hide without a marker: the pages, the scripts' comments, the code's help text and docstrings
OTHER = [*PAGES, *sorted((REPO / "scripts").glob("*.sh")), REPO / "pytest.ini",
         *sorted(p for d in ("headprune_core", "headprune_app", "bench") for p in (REPO / d).rglob("*.py"))]
MARK = re.compile(r"<!--fig ([a-z0-9][^>]*?)-->(?:\*\*)?")  # a name in capitals is the syntax, not a figure
UNIT = r"(?:ms|s|min|h|MiB|MB|GB|KB|%|x)(?![A-Za-z])"
VALUE = re.compile(rf"[-+]?\d[\d,.]*(?:\s?{UNIT})?")


def sections() -> list[dict]:
    return [json.loads((REPO / "bench" / "results" / f"{name}.json").read_text()) for name in SECTIONS]


def figures(results: str, written: list[dict]) -> dict[str, str]:
    """NAME -> value of every figure a page may quote: each one marked in ``results`` (the text of RESULTS.md), and
    'SECTION: GOAL' -> the measured cell of each goal of the ``written`` sections."""
    found: dict[str, str] = {}
    for m in MARK.finditer(results):
        value = VALUE.match(results, m.end())
        name = m.group(1).strip()
        assert value, f"bench/RESULTS.md: no figure right after <!--fig {name}-->"
        assert name not in found, f"bench/RESULTS.md marks {name!r} twice"
        found[name] = value.group(0).rstrip(",.")
    for s in written:
        found.update({f"{s['name']}: {g['what']}": g["measured"] for g in s["goals"]})
    return found


def drifted(text: str, known: dict[str, str]) -> list[str]:
    """Each quote in ``text`` that is not its figure's value in RESULTS.md, in words."""
    out = []
    for m in MARK.finditer(text):
        name, after = m.group(1).strip(), text[m.end():]
        if name not in known:
            out.append(f"{name}: no such figure in bench/RESULTS.md")
            continue
        want = known[name]
        if not after.startswith(want) or re.match(r"\d|[.,]\d", after[len(want):]):
            got = VALUE.match(after)
            quoted = got.group(0) if got else repr(after[:20])
            out.append(f"{name}: quoted {quoted}, bench/RESULTS.md says {want}")
    return out


def unmarked(text: str, known: dict[str, str]) -> list[str]:
    """Copies of a figure without their marker. Only figures a page is unlikely to hold for another reason are
    looked for: a number of three digits or more with its unit ("484 s", "30.3 s", "1,684.3 MB")."""
    out = []
    for name, value in known.items():
        if not re.fullmatch(rf"[-+]?[\d,.]+\s?{UNIT}", value) or len(re.sub(r"\D", "", value)) < 3:
            continue
        for m in re.finditer(rf"(?<![\d.,]){re.escape(value)}(?!\d|[.,]\d)", text):
            if not re.search(r"<!--fig [^>]+-->(?:\*\*)?$", text[:m.start()]):
                out.append(f"{value} ({name}) without its marker, at character {m.start()}")
    return out


def test_every_quoted_figure_is_the_one_in_results():
    known = figures(RESULTS.read_text(encoding="utf-8"), sections())
    quoted = {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8") for p in PAGES}
    assert sum(len(MARK.findall(t)) for t in quoted.values()) >= 10, "the pages quote figures: are the markers gone?"
    wrong = {name: d for name, t in quoted.items() if (d := drifted(t, known))}
    assert not wrong, f"quotes that differ from bench/RESULTS.md (quote the figure as it is there): {wrong}"


def test_no_page_holds_an_unmarked_copy_of_a_figure():
    known = figures(RESULTS.read_text(encoding="utf-8"), sections())
    copies = {p.relative_to(REPO).as_posix(): c for p in OTHER if (c := unmarked(p.read_text(encoding="utf-8"),
                                                                                    known))}
    assert not copies, f"figures copied from bench/RESULTS.md without a marker (link there, or mark them): {copies}"


def test_links_into_results_name_its_sections():
    """A link to ``bench/RESULTS.md#anchor`` names a heading there (GitHub's anchors: lower case, punctuation
    dropped, spaces as hyphens)."""
    headings = re.findall(r"^#{2,3} (.+)$", RESULTS.read_text(encoding="utf-8"), re.M)
    anchors = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}
    links = [(p.name, m.group(1)) for p in PAGES for m in re.finditer(r"RESULTS\.md#([\w-]+)", p.read_text())]
    assert links and not [link for link in links if link[1] not in anchors], (links, sorted(anchors))


def test_a_copy_that_drifts_fails():
    known = {"cold-start": "484 s", "classroom: server peak RSS with 30 sessions": "1.80 GB"}
    page = ("answered after **<!--fig cold-start-->484 s**; peak "
            "<!--fig classroom: server peak RSS with 30 sessions-->1.80 GB.")
    assert drifted(page, known) == [] and unmarked(page, known) == []
    assert drifted(page.replace("484 s", "492 s"), known) == ["cold-start: quoted 492 s, bench/RESULTS.md says 484 s"]
    assert drifted(page.replace("484 s", "4845 s"), known)                 # a longer number is another number
    assert drifted(page.replace("1.80 GB", "1.8 GB"), known)               # so is a rounded one
    assert drifted(page.replace("fig cold-start", "fig cold-strat"), known) == [
        "cold-strat: no such figure in bench/RESULTS.md"]
    assert unmarked("the dashboard answered after 484 s", known) == [
        "484 s (cold-start) without its marker, at character 29"]
    assert unmarked("after 1484 s or 484.5 s", known) == []


def test_a_source_that_moves_fails_its_quotes():
    """The real README against a RESULTS.md whose cold start was measured again: the README's quote fails."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    text = RESULTS.read_text(encoding="utf-8")
    assert "<!--fig cold-start-->484 s" in text and "<!--fig cold-start-->" in readme
    moved = figures(text.replace("<!--fig cold-start-->484 s", "<!--fig cold-start-->492 s"), sections())
    assert "cold-start: quoted 484 s, bench/RESULTS.md says 492 s" in drifted(readme, moved)
    written = sections()
    goal = next(g for s in written if s["name"] == "classroom" for g in s["goals"] if "peak" in g["what"])
    goal["measured"] = "2.10 GB"
    assert any(d.startswith("classroom: server peak") for d in drifted(readme, figures(text, written)))


def test_the_written_sections_are_what_their_json_renders():
    """A hand edit inside a section ``python -m bench`` writes would be lost the next time it writes the file."""
    text = RESULTS.read_text(encoding="utf-8")
    again = report.render(report.load_all(REPO / "bench" / "results", list(SECTIONS)), HEADER, kept=text)
    assert again == text, ("bench/RESULTS.md differs from what bench/results/*.json renders: put a figure measured "
                           "by hand in a ### subsection or a ## section of its own, which python -m bench keeps")


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
