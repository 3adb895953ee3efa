"""headprune installs as a package: a wheel built from this checkout, installed into a fresh venv, gives the
``headprune`` command and the public API, with nothing read from the checkout.

The fresh venv sees the project venv's site-packages for the dependencies (a .pth line: torch, transformers ...
are not downloaded again); headprune itself comes only from the wheel (the test runs outside the checkout and
checks where the package was imported from)."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.parallel]

REPO = Path(__file__).resolve().parents[2]


def _run(cmd: list[str], *, cwd: Path, env: dict | None = None, timeout: int = 600) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with the wheel of this checkout installed (its bin folder)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # a copy: building in the checkout would leave build/ and *.egg-info there
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for package in ("headprune_core", "headprune_app"):
        shutil.copytree(REPO / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(src), "-w",
          str(tmp / "dist")], cwd=tmp)
    wheels = list((tmp / "dist").glob("headprune-*.whl"))
    assert len(wheels) == 1, wheels
    venv.create(tmp / "venv", with_pip=True)
    py = tmp / "venv" / "bin" / "python"
    purelib = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp).strip()
    (Path(purelib) / "project-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    _run([str(py), "-m", "pip", "install", "--no-deps", "-q", str(wheels[0])], cwd=tmp)
    return tmp / "venv" / "bin"


def test_the_wheel_gives_the_public_api_from_site_packages(installed, tmp_path):
    code = ("import headprune_core as h; print(h.__file__); "
            "names = [getattr(h, n) for n in ('Study', 'StudyPlan', 'load_task', 'score_heads', 'head_gates', "
            "'prune_heads', 'Store')]; print(all(n.__doc__ for n in names), h.__version__)")
    out = _run([str(installed / "python"), "-c", code], cwd=tmp_path).split()
    assert "site-packages" in out[0] and not out[0].startswith(str(REPO))  # not the checkout's copy
    assert out[1:] == ["True", "0.2.0"]


def test_the_headprune_command_answers_help_and_a_sweep_dry_run(installed, tmp_path):
    help_text = _run([str(installed / "headprune"), "--help"], cwd=tmp_path)
    assert help_text.startswith("usage: headprune ") and "sweep" in help_text
    env = {**os.environ, "HEADPRUNE_CACHE": str(REPO / "cache"), "HF_HUB_OFFLINE": "1"}
    out = _run([str(installed / "headprune"), "sweep", str(REPO / "sweeps" / "demo.json"), "--dry-run"],
               cwd=tmp_path, env=env)
    assert "sweep demo: 1 grid point(s), 72 jobs" in out


def test_the_wheel_carries_the_shipped_data_files(installed, tmp_path):
    code = ("from headprune_core.plans import lessons; from pathlib import Path; import headprune_core.findings as f; "
            "print(sorted(lessons.available(None)[0])); print((Path(f.__file__).parent / 'design.json').is_file()); "
            "from headprune_core.findings.paper_numbers import paper_numbers; print(len(paper_numbers()) > 0)")
    out = _run([str(installed / "python"), "-c", code], cwd=tmp_path).splitlines()
    assert "attention-heads-across-languages" in out[0] and out[1] == "True" and out[2] == "True"
