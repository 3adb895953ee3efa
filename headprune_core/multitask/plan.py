"""GradTS plans: what a GradTS validation computes (units, primaries, selection options, training), the presets,
and the lookup of a plan by name or file.

A *unit* is ``task/lang`` (``"pos/en"``, ``"polarity-nl/nl"``).

>>> find_gradts_plan("gradts-demo").primaries
('name/es', 'polarity-nl/nl')
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from headprune_core.base.cache import cache_root
from headprune_core.base.defaults import DEFAULT_MODEL
from headprune_core.base.specs import find_spec, spec_catalog, spec_from_dict
from headprune_core.data.refs import parse_sources, read_plan_file, ref_for
from headprune_core.data.registry import get_task
from headprune_core.runs.config import BANDIT_OPTIONS, GradTSOptions, check_train_options, split_unit


def normalize_unit(unit: str, sources: dict | None = None) -> str:
    """``"pos/en"`` stays; a bare task with one language gets it (``"polarity-en"`` -> ``"polarity-en/en"``).

    The task must be built-in or registered, unless ``sources`` (a plan's data sources) names it."""
    task, lang = split_unit(unit)
    if lang is not None and ref_for(sources or {}, task, lang) is None:
        get_task(task)
    if lang is None:
        info = get_task(task)
        if len(info.languages) != 1 or info.languages[0] == "*":
            raise ValueError(f"say which language of {task!r} to use, e.g. '{task}/{info.languages[0]}'; "
                             f"it has: {', '.join(info.languages)}")
        lang = info.languages[0]
    return f"{task}/{lang}"


@dataclass(frozen=True, kw_only=True)
class GradTSPlan(GradTSOptions):
    """What a GradTS validation computes (a preset, or a JSON file of these fields): the GradTS options
    (:class:`~headprune_core.runs.config.GradTSOptions`: units, primaries, method, thresholds, seeds ...) and

    ``train``: fine-tuning overrides (``max_train_sentences``, ``epochs``, ``lr``, ``sampling`` ...), the same for
    single- and multi-task runs; ``bandit``: AUTOSEM options (:data:`~headprune_core.runs.config.BANDIT_OPTIONS`);
    ``sources``: a task (or ``task/lang``) -> a data reference (:mod:`headprune_core.data.refs`) for data that is
    not embedded, e.g. ``{"sst2": "hub"}``, a local copy laid out like the Hub (``{"rte":
    "hub:/data/glue-copy:rte"}``) or files (``{"pos/sw": "sw.conllu"}``); ``note``: how the plan was cut down
    (shown with the results); ``map_seeds``: more training seeds of one unit per task (the task's first in
    ``units``) whose single-task fine-tune and head map a study plan that runs this check computes again (the
    Findings stem-cell card g: the heads most tasks claim, per run, and one task's maps from run to run).
    """

    name: str
    description: str
    model: str = DEFAULT_MODEL
    train: dict = field(default_factory=lambda: {"max_train_sentences": 300, "epochs": 1.0})
    bandit: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)
    note: str = ""
    map_seeds: tuple[int, ...] = ()

    def __post_init__(self):
        where = f"plan {self.name!r}"
        try:
            super().__post_init__()
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        if not isinstance(self.map_seeds, tuple) or len(set(self.map_seeds)) != len(self.map_seeds) or \
                not all(isinstance(v, int) and not isinstance(v, bool) for v in self.map_seeds):
            raise ValueError(f"{where}: map_seeds must be a list of distinct integers, got {self.map_seeds!r}")
        if not isinstance(self.bandit, dict) or set(self.bandit) - set(BANDIT_OPTIONS):
            raise ValueError(f"{where}: bandit options must be an object with keys among "
                             f"{sorted(BANDIT_OPTIONS)}, got {self.bandit!r}")
        check_train_options(self.train, where)
        parse_sources(self.sources, where=where)

    @classmethod
    def from_dict(cls, data: dict, *, where: str = "GradTS plan") -> GradTSPlan:
        return spec_from_dict(cls, data, where=where, what="GradTS plan")

    @classmethod
    def from_file(cls, path) -> GradTSPlan:
        """A plan from JSON; relative local data files are relative to the plan file's folder."""
        return cls.from_dict(read_plan_file(path, "GradTS plan"), where=str(path))

    def to_dict(self) -> dict:
        return asdict(self)

    def restricted(self, *, units: tuple[str, ...] | None = None, primaries: tuple[str, ...] | None = None,
                   sentences: int | None = None, method: str | None = None) -> GradTSPlan:
        """The same plan on other units / primaries / fewer sentences / another method (quick looks)."""
        plan = self
        if units:
            plan = replace(plan, units=tuple(units),
                           primaries=tuple(p for p in (primaries or plan.primaries) if p in units) or (units[0],))
        if primaries:
            plan = replace(plan, primaries=tuple(primaries))
        if sentences:
            plan = replace(plan, score_sentences=sentences, eval_sentences=sentences,
                           train={**plan.train, "max_train_sentences": sentences},
                           note=(plan.note + " " if plan.note else "") + f"Capped at {sentences} sentences.")
        if method:
            plan = replace(plan, method=method)
        return plan


DEMO_NOTE = ("Subsampled for a 2-core CPU: 200 training sentences per unit, 1 epoch, batch 8, 100 sentences for "
             "scoring, at most 200 for dev and test (name/es has 100 of each); every final model trained with 3 "
             "seeds; GradTS-trial tries every candidate in tau order (the paper's full procedure); the bandit "
             "(AUTOSEM stage 1) runs 40 rounds of 4 batches. To learn anything in 25 steps the encoder trains at "
             "lr 2e-4 and the classifiers at 5e-3 (at the defaults, 5e-5 / 1e-3 and batch 16, name/es stayed at "
             "F1 0). Differences of a few points are within noise at this size: read the intervals.")
_DEMO_TRAIN = {"max_train_sentences": 200, "epochs": 1.0, "batch_size": 8, "lr": 2e-4, "head_lr": 5e-3}

GRADTS_PRESETS: dict[str, GradTSPlan] = {
    "gradts-demo": GradTSPlan(
        name="gradts-demo",
        description="me5-small (4-bit quantised), 8 task units: POS and NAME (proper-name spans, a PROXY for NER) "
                    "in English and Spanish, English sentence polarity and uncertainty, Dutch book-review "
                    "polarity, Portuguese emotion. Primaries: name/es (token) and "
                    "polarity-nl/nl (sentence). GradTS kv_grad maps, Kendall tau; thres 0.6, trial (every "
                    "candidate), fg (examples above tau 0.62), the AUTOSEM bandit, all, random; 3 training seeds.",
        units=("pos/en", "name/en", "pos/es", "name/es", "polarity-en/en", "uncertainty-en/en", "polarity-nl/nl",
               "emotion-pt/pt"),
        primaries=("name/es", "polarity-nl/nl"),
        train=_DEMO_TRAIN, score_sentences=100, eval_sentences=200, max_trial=None,
        note=DEMO_NOTE,
    ),
    "gradts-findings": GradTSPlan(
        name="gradts-findings",
        description="The Findings page's GradTS check, cut to fit its time budget: 5 task units (POS and NAME, a "
                    "PROXY for NER, in English and Spanish; English sentence polarity), primary name/es, "
                    "kv_grad maps, Kendall tau, thres 0.6, trial (up to 2), fg, the bandit (30 rounds), all, "
                    "random (3 draws); 3 training seeds, and the maps of pos/en, name/en and polarity-en/en under 2 "
                    "more seeds (stem cells per run).",
        units=("pos/en", "name/en", "pos/es", "name/es", "polarity-en/en"),
        primaries=("name/es",),
        train=_DEMO_TRAIN, score_sentences=150, eval_sentences=200, max_trial=2, train_seeds=(13, 14, 15),
        random_seeds=(0, 1, 2), bandit={"rounds": 30}, map_seeds=(14, 15),
        note=("Subsampled to fit the Findings preset's time budget: 200 training sentences per unit, 1 epoch, "
              "batch 8, lr 2e-4 (classifiers 5e-3), 150 sentences for scoring, at most 200 for dev and test "
              "(name/es has 100 of each); GradTS-trial tries at most 2 auxiliary tasks, 3 training seeds, the "
              "bandit 30 rounds. Differences of a few points are within noise at this size."),
    ),
    "gradts-stems": GradTSPlan(
        name="gradts-stems",
        description="The task maps of Findings card g (heads claimed by most tasks): one unit for each of the 6 "
                    "tasks of the GradTS demo (POS, NAME, English polarity and uncertainty, Dutch book-review "
                    "polarity, Portuguese emotion), each from its own single-task fine-tune under 3 training "
                    "seeds; maps only, trained and scored as gradts-findings (so its 3 tasks' maps are shared).",
        units=("pos/en", "name/en", "polarity-en/en", "uncertainty-en/en", "polarity-nl/nl", "emotion-pt/pt"),
        primaries=("name/en",),
        train=_DEMO_TRAIN, score_sentences=150, eval_sentences=200, map_seeds=(14, 15),
        note="Maps only, for the stem-cell card: 200 training sentences per unit, 1 epoch, 150 sentences for "
             "scoring.",
    ),
    "gradts-stems-full": GradTSPlan(
        name="gradts-stems-full",
        description="Findings card g's task maps at full size (findings-full): the 6 tasks of gradts-stems, every "
                    "training sentence, 3 epochs, 5 training seeds.",
        units=("pos/en", "name/en", "polarity-en/en", "uncertainty-en/en", "polarity-nl/nl", "emotion-pt/pt"),
        primaries=("name/en",),
        train={"max_train_sentences": None, "epochs": 3.0}, score_sentences=1000, eval_sentences=None,
        map_seeds=(14, 15, 16, 17), note="Maps only, full size.",
    ),
    "gradts-findings-full": GradTSPlan(
        name="gradts-findings-full",
        description="The Findings page's GradTS check at full size (findings-full, for a GPU or a cluster): the "
                    "same 5 task units, every training sentence, 3 epochs, trial without a cap, the bandit 200 "
                    "rounds, 5 training seeds, 5 random draws.",
        units=("pos/en", "name/en", "pos/es", "name/es", "polarity-en/en"),
        primaries=("name/es",),
        train={"max_train_sentences": None, "epochs": 3.0}, score_sentences=1000, eval_sentences=None,
        max_trial=None, train_seeds=(13, 14, 15, 16, 17), random_seeds=(0, 1, 2, 3, 4), bandit={"rounds": 200},
        map_seeds=(14, 15, 16, 17),
        note="Full size: every training sentence of each unit, 3 epochs, 5 training seeds.",
    ),
    "gradts-glue": GradTSPlan(
        name="gradts-glue",
        description="GradTS's own setting: the 8 GLUE tasks from the Hugging Face Hub (needs network; the Hub "
                    "loader reads whole splits, QQP and MNLI are large), primaries RTE and MRPC. Subsampled "
                    "like gradts-demo.",
        units=("cola/en", "sst2/en", "mrpc/en", "qqp/en", "mnli/en", "qnli/en", "rte/en", "wnli/en"),
        primaries=("rte/en", "mrpc/en"),
        sources={t: "hub" for t in ("cola", "sst2", "mrpc", "qqp", "mnli", "qnli", "rte", "wnli")},
        train=_DEMO_TRAIN, score_sentences=150, eval_sentences=200, max_trial=None,
        note=DEMO_NOTE,
    ),
}


def plans_dir(cache: Path | None = None) -> Path:
    """Where the dashboard looks for GradTS plan files: ``<cache>/plans/gradts`` (of ``cache``, default the cache
    in use)."""
    return (cache if cache is not None else cache_root()) / "plans" / "gradts"


def find_gradts_plan(ref: str | dict) -> GradTSPlan:
    """The GradTS plan ``ref`` names: a preset, a JSON plan file, a file in ``<cache>/plans/gradts`` by its
    name, or an object of :class:`GradTSPlan` fields. An unknown name fails listing the known ones."""
    return find_spec(ref, presets=GRADTS_PRESETS, folder=plans_dir(), read_file=GradTSPlan.from_file,
                     from_dict=lambda d: GradTSPlan.from_dict(d, where="GradTS plan"), what="GradTS plan")


def available_gradts_plans() -> tuple[dict[str, GradTSPlan], list[str]]:
    """Every GradTS plan a user can pick (presets, then the files in ``<cache>/plans/gradts``) and one line
    per unreadable file."""
    return spec_catalog(presets=GRADTS_PRESETS, folder=plans_dir(), read_file=GradTSPlan.from_file)
