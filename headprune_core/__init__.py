"""headprune: see, score and prune the attention heads of Transformer encoders, per language and task.

A plain library with a command line (``headprune --help``, or ``python -m headprune_core --help``); it never
imports streamlit. The public API, importable from here (each loads on first use, so ``import headprune_core``
stays fast):

* :class:`Study` -- every result for one model (fine-tunes, head scores, evaluations, curves, re-fine-tunings),
  computed through the cache: ``study.scores(study.score_config(study.finetune_config("pos"), "pos", "de"))``.
* :class:`StudyPlan` -- what to compute (tasks x languages x settings, curves, retraining experiments); a preset
  (``find_plan("demo")``) or a JSON file; ``run_plan(plan.study(), plan)`` computes it.
* :func:`load_task` -- a task's data in one language from the embedded corpora, the Hub or local files.
* :func:`score_heads` -- a ``(layers, heads)`` importance map of a model on batches (gate gradient, key/value
  gradients, Taylor, attention entropy, random).
* :func:`head_gates` -- a context manager that switches heads off (or scales them) while it is open.
* :func:`prune_heads` -- removes heads for real (query/key/value rows and output-projection columns).
* :class:`Store` -- the content-addressed on-disk cache every result goes through.

>>> import headprune_core
>>> headprune_core.Store.__name__
'Store'
"""

from __future__ import annotations

import importlib

__version__ = "0.2.0"

_EXPORTS = {
    "Study": "headprune_core.runs.study",
    "StudyPlan": "headprune_core.plans.plan",
    "find_plan": "headprune_core.plans.presets",
    "run_plan": "headprune_core.plans.plan",
    "load_task": "headprune_core.data.refs",
    "score_heads": "headprune_core.methods.importance",
    "head_gates": "headprune_core.encoders.heads",
    "prune_heads": "headprune_core.encoders.heads",
    "Store": "headprune_core.runs.store",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    """The public names, imported on first use (torch and the data libraries take seconds to import)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'headprune_core' has no attribute {name!r}; its public API: "
                             f"{', '.join(__all__)}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
