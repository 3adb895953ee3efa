"""Every command in the README and docs/ runs as written: each ``headprune`` line names a real command whose
``--help`` lists every option the line uses, ``python -m bench`` lines use bench's options, scripts and files
named exist; the dry runs of sweep specs in the repository run for real (slow: they read the embedded model)."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from headprune_core.cli.args import build_parser

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SUBCOMMANDS = {"data": {"add", "ls", "show", "rm"}, "cache": {"ls", "du", "gc"}, "bundle": {"export", "import"}}


def fenced_commands(path: Path) -> list[tuple[str, list[str]]]:
    """(where, words) of every command line in the file's ```bash blocks (comments, prompts like ``head$`` and
    variable assignments left out)."""
    out, inside = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            inside = line.strip() == "```bash"
            continue
        if not inside or not line.strip():
            continue
        words = shlex.split(re.sub(r"^\w+\$\s+", "", line), comments=True)
        if words and not re.match(r"^\w+=", words[0]):
            out.append((f"{path.name}:{number}", words))
    return out


COMMANDS = [c for doc in DOCS for c in fenced_commands(doc)]


def headprune_words(words: list[str]) -> list[str] | None:
    """The arguments after ``headprune`` / ``python -m headprune_core``, or None for another program."""
    if words[0] == "headprune":
        return words[1:]
    if words[:3] == ["python", "-m", "headprune_core"]:
        return words[3:]
    return None


def help_text(args: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        build_parser().parse_args([*args, "--help"])
    assert done.value.code == 0
    return out.getvalue()


def test_the_docs_have_commands_to_check():
    assert len([c for c in COMMANDS if headprune_words(c[1]) is not None]) >= 20
    assert any(w[:2] == ["bash", "scripts/start.sh"] for _, w in COMMANDS)
    assert any(w[:2] == ["bash", "scripts/test.sh"] for _, w in COMMANDS)


@pytest.mark.parametrize("where, words", COMMANDS, ids=[w for w, _ in COMMANDS])
def test_every_documented_command_exists_with_its_options(where, words):
    args = headprune_words(words)
    if args is not None:
        command = args[:2] if args and args[0] in SUBCOMMANDS else args[:1]
        text = help_text(command)
        used = [w.split("=")[0] for w in args if w.startswith("--")]
        unknown = [flag for flag in used if not re.search(rf"{re.escape(flag)}\b", text)]
        assert not unknown, f"{where}: {' '.join(words)}: {unknown} are not options of 'headprune {' '.join(command)}'"
    elif words[:3] == ["python", "-m", "bench"]:
        out = subprocess.run([sys.executable, "-m", "bench", "--help"], cwd=REPO, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert all(w.split("=")[0] in out.stdout for w in words[3:] if w.startswith("--")), (where, words)
    elif words[0] == "bash":
        assert (REPO / words[1]).is_file(), f"{where}: no {words[1]}"
    elif words[0] in ("pytest",) or words[:3] == ["python", "-m", "pytest"]:
        paths = [w for w in words if "/" in w or w.endswith(".py")]
        assert all((REPO / p).exists() for p in paths), (where, paths)


# a dry run against a cluster's address (a placeholder in the docs) is tested on a real one in
# tests/integration/test_sweep_cluster.py
DRY_RUNS = [(w, words) for w, words in COMMANDS if "--dry-run" in words and headprune_words(words)
            and (REPO / headprune_words(words)[1]).is_file() and "--address" not in words]


@pytest.mark.slow
@pytest.mark.parallel
@pytest.mark.parametrize("where, words", DRY_RUNS, ids=[w for w, _ in DRY_RUNS])
def test_documented_dry_runs_run(where, words):
    out = subprocess.run([sys.executable, "-m", "headprune_core", *headprune_words(words)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"{where}: {out.stderr[-2000:]}"
    assert "jobs" in out.stdout


def test_the_readme_layout_is_the_map_of_the_folders():
    """One line per folder, and every folder of the package (and the repository's top) is on the map."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("## Layout", 1)[1].split("```")[1]
    listed = {line.split()[0].rstrip("/") for line in block.splitlines() if line.strip()}
    core = {p.name for p in (REPO / "headprune_core").iterdir() if (p / "__init__.py").is_file()}
    top = {"app.py", "headprune_app", "headprune_core", "tests", "bench", "sweeps", "docs", "scripts"}
    assert core | top <= listed, f"not on the map: {sorted((core | top) - listed)}"
    assert all((REPO / name).exists() or (REPO / "headprune_core" / name).is_dir() for name in listed), listed


@pytest.mark.parametrize("name", ["README.md", "docs/findings.md"])
def test_the_cards_tables_are_the_hypotheses(name):
    """The tables of cards in the README and docs/findings.md are what `headprune findings --docs` writes from
    findings/hypotheses.py (rerun it after changing a card)."""
    from headprune_core.findings.doc_tables import BLOCK, rewritten
    from headprune_core.findings.hypotheses import HYPOTHESES

    text = (REPO / name).read_text(encoding="utf-8")
    assert BLOCK.search(text), f"{name} has no cards block"
    assert rewritten(text) == text, f"{name}: the cards' table is stale: run `headprune findings --docs`"
    block = BLOCK.search(text).group(3)
    assert all(f"| {h.id} |" in block for h in HYPOTHESES)


def test_findings_docs_rewrites_a_block_and_refuses_what_it_does_not_use(tmp_path, capsys):
    from headprune_core.cli.main import main

    doc = tmp_path / "doc.md"
    doc.write_text("before\n<!-- cards: short -->\nstale\n<!-- /cards -->\nafter\n", encoding="utf-8")
    assert main(["findings", "--docs", str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert "stale" not in text and "| a1 | Pruning the lowest-ranked heads" in text and text.endswith("after\n")
    assert main(["findings", "--docs", str(doc)]) == 0 and "already current" in capsys.readouterr().out
    assert main(["findings", "--docs", str(doc), "--card", "a1"]) == 2
    assert "takes no --card" in capsys.readouterr().err
    assert main(["findings", "--docs", str(doc), "--draws", "50"]) == 2 and "takes no --draws" in \
        capsys.readouterr().err
    (tmp_path / "plain.md").write_text("no block\n", encoding="utf-8")
    assert main(["findings", "--docs", str(tmp_path / "plain.md")]) == 2
    assert "has no cards block" in capsys.readouterr().err
