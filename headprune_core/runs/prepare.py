"""``python -m headprune_core prepare``: fetch and convert the embedded default model and corpora.

Each part is idempotent and atomic on its own; a part that fails (no apt-get on the machine, say) is reported
and the others go on, so whatever can be prepared is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from headprune_core.base.cache import cache_root
from headprune_core.base.files import key_lock
from headprune_core.data import prepare_corpora
from headprune_core.encoders import models


@dataclass
class PrepareAll:
    """What ``prepare_all`` did, part by part."""

    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        tail = "done" if self.ok else f"{len(self.failures)} part(s) failed"
        return "\n".join(self.lines + [f"prepare: {tail} in {self.seconds:.1f} s"])


def prepare_all(*, force: bool = False, only: str | None = None, progress: bool = True) -> PrepareAll:
    """Prepare the embedded models (me5-small, minilm-l6-en) and the embedded corpora under cache/.

    One process at a time (a file lock): a second one waits, then finds everything prepared.
    """

    with key_lock(cache_root() / ".prepare.lock"):
        return _prepare_all(force=force, only=only, progress=progress)


def _prepare_all(*, force: bool, only: str | None, progress: bool) -> PrepareAll:

    report = PrepareAll()
    start = time.perf_counter()
    if only in (None, "models"):
        for name in models.EMBEDDED:
            was = models.is_prepared(name)
            try:
                path = models.prepare(name, force=force, progress=progress)[name]
                state = "already prepared, nothing to do" if was and not force else "prepared"
                report.lines.append(f"model {name}: {state} ({path})")
            except Exception as err:  # one part failing must not stop the others
                report.failures.append(name)
                report.lines.append(f"model {name}: FAILED: {err}")
    if only in (None, "corpora"):
        try:
            corpora = prepare_corpora(force=force, progress=progress)
            report.lines.append(corpora.summary())
            report.failures += [f"{t}/{lang}" for t, lang, _ in corpora.missing]
        except Exception as err:
            report.failures.append("corpora")
            report.lines.append(f"corpora: FAILED: {err}")
    report.seconds = time.perf_counter() - start
    return report
