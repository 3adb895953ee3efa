"""The one progress callback: a Study reports its runs through ``on_progress``, and the terminal adapter draws
them as tqdm bars (one per count, renamed when the work's name changes)."""

from __future__ import annotations

import io

from headprune_core.base.progress import TqdmProgress, report


def test_tqdm_adapter_opens_a_bar_per_count_and_renames_on_a_new_what():
    out = io.StringIO()
    bar = TqdmProgress(file=out, mininterval=0)
    bar("scoring heads: pos/en", 0, 3)
    first = bar.bar
    bar("scoring heads: pos/en", 2, 3)
    assert bar.bar is first and first.n == 2
    bar("scoring heads: pos/de", 3, 3)  # the same count goes on under a new name
    assert bar.bar is first and first.n == 3 and first.desc.startswith("scoring heads: pos/de")
    bar("fine-tuning", 1, 10)  # a new count: a new bar
    assert bar.bar is not first and bar.bar.n == 1 and bar.bar.total == 10
    bar.close()
    assert bar.bar is None and "scoring heads: pos/de" in out.getvalue()


def test_report_calls_only_when_there_is_a_callback():
    seen = []
    report(None, "x", 1, 2)
    report(lambda *a: seen.append(a), "x", 1, 2)
    assert seen == [("x", 1, 2)]


def test_a_titled_bar_keeps_its_title_shows_the_job_and_follows_a_growing_total():
    out = io.StringIO()
    bar = TqdmProgress("sweep t", file=out, mininterval=0)
    bar("running: fine-tune pos", 0, 4)
    first = bar.bar
    bar("done: fine-tune pos", 1, 6)  # a sweep adds jobs once their ranking is known: the same bar, a new total
    assert bar.bar is first and first.total == 6 and first.n == 1 and first.desc == "sweep t"
    assert "done: fine-tune pos" in str(first)
    bar.close()


def test_a_bar_prints_the_lines_it_is_asked_to_keep():
    out = io.StringIO()
    bar = TqdmProgress("sweep t", file=out, mininterval=0, lines=("retrying ",))
    printed = []
    bar.write = lambda line, file=None: printed.append(line)
    bar("running: a", 0, 2)
    bar("retrying a (attempt 2): attempt 1 lost with its node on w1", 0, 2)
    bar("done: a", 1, 2)
    assert printed == ["retrying a (attempt 2): attempt 1 lost with its node on w1"]
    bar.close()


def test_every_callback_of_the_core_is_one_progress_type():
    """Issue 44: one progress protocol. Every public function or method of the core that takes a callback named
    ``on_...`` takes ``on_progress: Progress | None``; no other callback shape is left."""
    import importlib
    import inspect
    import pkgutil

    import headprune_core
    from headprune_core.base.progress import Progress

    found, wrong = [], []
    for info in pkgutil.walk_packages(headprune_core.__path__, "headprune_core."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            members = [obj] if inspect.isfunction(obj) else [
                m for k, m in vars(obj).items() if inspect.isfunction(m) and (k == "__init__" or not k.startswith("_"))
            ] if inspect.isclass(obj) else []
            for fn in members:
                for p, param in inspect.signature(fn).parameters.items():
                    if p.startswith("on_"):
                        found.append(f"{fn.__qualname__}({p})")
                        hint = param.annotation  # a string under ``from __future__ import annotations``
                        if isinstance(hint, str):
                            hint = eval(hint, vars(module)) if hint == "Progress | None" else hint
                        if p != "on_progress" or hint != Progress | None:
                            wrong.append(f"{module.__name__}.{fn.__qualname__}({p}: {param.annotation})")
    assert not wrong, wrong
    # the loops that report: training, scoring, evaluation, curves, E5S1, jobs, plans, staged, GradTS, sweeps
    for expected in ("finetune", "score_heads", "evaluate", "curve", "bert_state_dict", "run_jobs", "run_plan",
                     "run_staged", "GradTS.__init__", "StemCells.run", "run_sweep"):
        assert f"{expected}(on_progress)" in found, expected
