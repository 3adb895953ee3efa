"""Hugging Face Hub sources, mapped from their real Hub formats onto ``TaskData``.

| task | Hub dataset (config) | Hub columns -> ours |
|---|---|---|
| ner | unimelb-nlp/wikiann (language) | tokens, ner_tags (ClassLabel O B-PER ...) -> tokens, tags |
| pos, upos, name | universal-dependencies/universal_dependencies (treebank) | tokens, upos -> tokens, tags (1) |
| sst2 cola mrpc qqp mnli qnli rte wnli | nyu-mll/glue (task) | sentence(s) (2), label -> text[, text_pair], label |
| xnli | facebook/xnli (language) | premise, hypothesis, label -> text, text_pair, label |
| paws-x | google-research-datasets/paws-x (language) | sentence1, sentence2, label -> text, text_pair, label |
| slots | AmazonScience/massive (locale, e.g. en-US) | annot_utt -> tokens, tags (BIO of 55 slot types) (3) |
| onto-pos -ner -dep -con -srl | ontonotes/conll2012_ontonotesv5 (english_v4 ...) | sentences -> tokens, tags (4) |

(1) UPOS (a ClassLabel) mapped onto the 12 universal tags (pos), kept as UD's 17 (upos), or PROPN runs as BIO
NAME (name); UD is a loading script on the Hub's main branch: it is read from its parquet export; tokens with upos
"_" are the surface forms of multi-word tokens, whose parts follow: they are dropped (the Hub rows have no IDs to
rebuild the ranges). (2) sentence1/sentence2, question1/question2, premise/hypothesis or question/sentence.
(3) Read from its parquet export (a loading script on ``main``); the markup ``[type : words]`` becomes BIO tags
(see :mod:`headprune_core.data.massive`); a language code is read as its locale (``de`` -> ``de-DE``).
(4) Read from its parquet export; each row is a document, its sentences the examples (SRL: one a predicate), read as
tags by :mod:`headprune_core.data.ontonotes` (DEP by head rules from the trees, CON as a relative encoding); the label
list of DEP, CON and SRL is every tag the three splits hold, sorted.

GLUE hides its test labels (-1): our ``test`` is the official validation split (``validation_matched`` for
MNLI) and our ``validation`` is a seeded 10% of train (seed 13, at most 5,000 examples), removed from train.

Every loader accepts ``data_files`` ({hub split name: local parquet/json/csv file}) to read a local copy laid
out like the Hub data (same columns and features) instead of the network, and the dataset path may be a local
folder holding a copy of the Hub repository (its README's ``configs`` and parquet files): that is how the tests
run offline. Any other Hub data set with word/tag or text/label columns loads through :func:`load_hub_generic`
(columns found by name or given); missing validation/test splits are carved from train (seed 13, 10% each).

>>> # load_hub("ner", "de")            # network
>>> # load_hub("xnli", "fr", data_files={"train": "x.parquet", "validation": "v.parquet", "test": "t.parquet"})
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import datasets
import numpy as np

from headprune_core.data.corpora import PREPARE_HINT, SPLIT_SEED
from headprune_core.data.formats import ROW_BATCH, find_columns, records_in_batches
from headprune_core.data.loading import TaskData, check_splits, features_for, from_records
from headprune_core.data.massive import MASSIVE, SLOT_TAGS, convert_batch, locale_of
from headprune_core.data.ontonotes import LANG_CONFIGS as ONTONOTES_CONFIGS
from headprune_core.data.ontonotes import ONTONOTES, split_examples
from headprune_core.data.ontonotes import TASKS as ONTONOTES_TASKS
from headprune_core.data.registry import EMBEDDED_TASKS, TASKS, UnknownName, check_language, get_task
from headprune_core.data.tagsets import NAME_TAGS, UD_UPOS_TAGS, UNIVERSAL_TAGS, UPOS, bio_names

UD_TREEBANKS = {"en": "en_ewt", "de": "de_gsd", "es": "es_ancora", "fr": "fr_gsd", "it": "it_isdt",
                "nl": "nl_alpino", "pt": "pt_bosque", "tr": "tr_imst",
                # Ma et al. 2021's other treebanks (UD v2.7)
                "zh": "zh_gsd", "ar": "ar_padt", "he": "he_htb", "ja": "ja_gsd", "fa": "fa_seraji", "ur": "ur_udtb"}
UD_TASKS = ("pos", "upos", "name")
"""Tasks read from Universal Dependencies: 12 universal tags, UD's 17, proper-name runs."""
GLUE_COLUMNS = {"sst2": ("sentence", None), "cola": ("sentence", None), "mrpc": ("sentence1", "sentence2"),
                "qqp": ("question1", "question2"), "mnli": ("premise", "hypothesis"),
                "qnli": ("question", "sentence"), "rte": ("sentence1", "sentence2"),
                "wnli": ("sentence1", "sentence2")}
GLUE_VALIDATION_MAX = 5000
_BUILDERS = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv", ".arrow": "arrow"}


MIRROR_ENV = "HEADPRUNE_HUB_MIRROR"
"""A folder of local copies of Hub data sets, one per data set id (``<mirror>/unimelb-nlp/wikiann``), each as
``hf download --repo-type dataset ID --local-dir <mirror>/ID`` writes it (with ``--revision`` for an export):
read instead of the Hub when the data set is there. The converters after it are the same."""
PARQUET_EXPORT = "refs/convert/parquet"
"""The branch where the Hub keeps a parquet copy of a data set, one folder per config (``en_ewt/train/0000.parquet``).
Data sets that are loading scripts on ``main`` (which ``datasets`` 4 and later refuse to run) are read from it."""
SCRIPT_DATASETS = ("universal-dependencies/universal_dependencies", MASSIVE, ONTONOTES)
"""Hub data sets whose ``main`` branch is a loading script: read from :data:`PARQUET_EXPORT`, config as folder."""


class HubUnavailable(ConnectionError):
    """A Hub dataset could not be loaded (offline, unknown dataset or config)."""


@dataclass(frozen=True)
class HubSpec:
    """Which Hub data set a task reads: its id, config, and branch (``revision``: None is ``main``). ``by_dir``: the
    config is a folder of that branch (a parquet export), read with ``data_dir``, not a declared config."""

    path: str
    config: str | None
    revision: str | None = None
    by_dir: bool = False

    @classmethod
    def of(cls, path: str, config: str | None) -> HubSpec:
        """The spec of data set ``path`` (an alias, a Hub id or a local folder) at ``config``: a loading-script
        data set is read from its parquet export."""
        path = HUB_ALIASES.get(path, path)
        if path in SCRIPT_DATASETS:
            return cls(path, config, PARQUET_EXPORT, by_dir=True)
        return cls(path, config)

    def download_command(self, where: str = "MIRROR") -> str:
        """The command that writes a local copy of this data set into the mirror folder ``where``."""
        branch = f" --revision {self.revision}" if self.revision else ""
        return f"hf download --repo-type dataset {self.path}{branch} --local-dir {where}/{self.path}"


def hub_spec(task: str, lang: str, *, treebank: str | None = None) -> HubSpec:
    """Which Hub dataset and config a (task, language) reads."""
    info = get_task(task)
    if "hub" not in info.sources:
        raise UnknownName(f"task {task!r} has no Hub source; its sources: {', '.join(info.sources)}")
    if task == "ner":
        return HubSpec.of("unimelb-nlp/wikiann", lang)
    if task in UD_TASKS:
        if treebank is None and lang not in UD_TREEBANKS:
            raise UnknownName(f"no default UD treebank for {lang!r} (defaults: "
                              f"{', '.join(f'{k}={v}' for k, v in UD_TREEBANKS.items())}); pass treebank=")
        return HubSpec.of("universal-dependencies/universal_dependencies", treebank or UD_TREEBANKS[lang])
    check_language(info, lang)
    if task in GLUE_COLUMNS:
        return HubSpec.of("nyu-mll/glue", task)
    if task == "xnli":
        return HubSpec.of("facebook/xnli", lang)
    if task == "paws-x":
        return HubSpec.of("google-research-datasets/paws-x", lang)
    if task == "slots":
        return HubSpec.of(MASSIVE, locale_of(lang))
    if task in ONTONOTES_TASKS:
        return HubSpec.of(ONTONOTES, ONTONOTES_CONFIGS[lang])
    raise UnknownName(f"no Hub loader for task {task!r}")


HUB_ALIASES = {"wikiann": "unimelb-nlp/wikiann",
               "universal_dependencies": "universal-dependencies/universal_dependencies",
               "glue": "nyu-mll/glue", "xnli": "facebook/xnli", "paws-x": "google-research-datasets/paws-x",
               "massive": MASSIVE, "conll2012_ontonotesv5": ONTONOTES}
"""Short names of the data sets headprune converts itself (``hub:wikiann:sw``, ``hub:glue:rte``)."""
_ALIAS_TASK = {"unimelb-nlp/wikiann": "ner", "facebook/xnli": "xnli", "google-research-datasets/paws-x": "paws-x",
               MASSIVE: "slots"}


def known_task(path: str, config: str | None, task: str) -> str | None:
    """The built-in converter a Hub path stands for (``None``: a generic data set).

    WikiANN is ``ner``; UD is ``pos`` unless ``task`` is ``name``; GLUE is its config's task; a local folder is a
    copy of the task's own Hub data set when ``task`` is a built-in Hub task.
    """
    path = HUB_ALIASES.get(path, path)
    if path in _ALIAS_TASK:
        return _ALIAS_TASK[path]
    if path == "universal-dependencies/universal_dependencies":
        return task if task in UD_TASKS else "pos"
    if path == ONTONOTES:
        return task if task in ONTONOTES_TASKS else "onto-ner"
    if path == "nyu-mll/glue":
        if config not in GLUE_COLUMNS:
            raise UnknownName(f"GLUE has no config {config!r}; known: {', '.join(GLUE_COLUMNS)}")
        return config
    if Path(path).expanduser().is_dir() and task in TASKS and "hub" in TASKS[task].sources:
        return task
    return None


def _is_local(path: str) -> bool:
    return path.startswith((".", "/", "~")) or Path(path).expanduser().is_dir()


def _load_raw(spec: HubSpec, data_files: Mapping[str, str | Path] | None, **kw) -> datasets.DatasetDict:
    """The raw splits of ``spec``: from ``data_files``, a local folder, the mirror (:data:`MIRROR_ENV`) or the Hub."""
    if data_files:
        files = {k: str(v) for k, v in data_files.items()}
        suffix = Path(next(iter(files.values()))).suffix.lower()
        builder = _BUILDERS.get(suffix)
        if builder is None:
            raise ValueError(f"cannot read {suffix} files as a local Hub copy; use one of {', '.join(_BUILDERS)}")
        return datasets.load_dataset(builder, data_files=files, **kw)
    if _is_local(spec.path):
        folder = Path(spec.path).expanduser()
        if not folder.is_dir():
            raise FileNotFoundError(f"no such folder: {folder} (a local copy of a Hub data set)")
        return _load_folder(folder, spec, **kw)
    mirrored = mirror_folder(spec)
    if mirrored is not None:
        return _load_folder(mirrored, spec, **kw)
    try:
        if spec.by_dir:
            return datasets.load_dataset(spec.path, data_dir=spec.config, revision=spec.revision, **kw)
        return datasets.load_dataset(spec.path, spec.config, **({"revision": spec.revision} if spec.revision else {}),
                                     **kw)
    except Exception as err:  # offline, unknown dataset or config: all end here with one clear message
        raise HubUnavailable(
            f"could not load {spec.path} ({spec.config}{', branch ' + spec.revision if spec.revision else ''}) "
            f"from the Hugging Face Hub: the Hub could not be reached or has no such dataset/config "
            f"({type(err).__name__}: {' '.join(str(err).split())[:200]}). {local_copy_advice(spec)} Offline, the "
            f"embedded tasks work: {', '.join(EMBEDDED_TASKS)} ({PREPARE_HINT} once)") from err


def mirror_folder(spec: HubSpec) -> Path | None:
    """The local copy of ``spec``'s data set in the mirror folder (:data:`MIRROR_ENV`), when there is one."""
    root = os.environ.get(MIRROR_ENV)
    if not root:
        return None
    folder = Path(root).expanduser() / spec.path
    return folder if folder.is_dir() else None


def local_copy_advice(spec: HubSpec) -> str:
    """How to give a machine without the Hub a copy of ``spec``'s data set."""
    root = os.environ.get(MIRROR_ENV)
    where = f"the mirror {root} has no {spec.path}: " if root else ""
    return (f"To use a local copy ({where}on a machine with the Hub, run `{spec.download_command()}`, copy MIRROR "
            f"here and set {MIRROR_ENV}=MIRROR; or name the copy's folder as the source: "
            f"hub:/path/to/{spec.path.rsplit('/', 1)[-1]}{':' + spec.config if spec.config else ''}).")


def _load_folder(folder: Path, spec: HubSpec, **kw) -> datasets.DatasetDict:
    """A local copy of a Hub data set: its README's configs, or (a parquet export) one folder per config."""
    try:
        if spec.config and (folder / spec.config).is_dir() and (spec.by_dir or not (folder / "README.md").is_file()):
            return datasets.load_dataset(str(folder), data_dir=spec.config, **kw)
        return datasets.load_dataset(str(folder), spec.config, **kw)
    except Exception as err:
        raise HubUnavailable(f"could not read the local Hub copy {folder} (config {spec.config}): "
                             f"{type(err).__name__}: {' '.join(str(err).split())[:300]}") from err


def _class_names(ds: datasets.Dataset, column: str) -> list[str] | None:
    feat = ds.features[column]
    feat = getattr(feat, "feature", feat)  # a List/Sequence of ClassLabel
    return list(feat.names) if isinstance(feat, datasets.ClassLabel) else None


def _ud(raw: datasets.DatasetDict, task: str) -> tuple[datasets.DatasetDict, list[str]]:
    def convert(batch, names):
        toks, tags = [], []
        for words, upos in zip(batch["tokens"], batch["upos"]):
            upos = [names[u] if isinstance(u, int) else u for u in upos]
            keep = [i for i, u in enumerate(upos) if u != "_"]
            toks.append([words[i] for i in keep])
            if task == "pos":
                tags.append([UNIVERSAL_TAGS.index(UPOS.get(upos[i], "X")) for i in keep])
            elif task == "upos":
                tags.append([UD_UPOS_TAGS.index(upos[i] if upos[i] in UD_UPOS_TAGS else "X") for i in keep])
            else:
                tags.append([NAME_TAGS.index(t) for t in bio_names([upos[i] == "PROPN" for i in keep])])
        return {"tokens": toks, "tags": tags}

    labels = list({"pos": UNIVERSAL_TAGS, "upos": UD_UPOS_TAGS}.get(task, NAME_TAGS))
    out = {}
    for split, ds in raw.items():
        names = _class_names(ds, "upos") or []
        out[split] = ds.map(convert, batched=True, fn_kwargs={"names": names}, remove_columns=ds.column_names,
                            features=features_for("token", labels))
    return datasets.DatasetDict(out), labels


def _wikiann(raw: datasets.DatasetDict) -> tuple[datasets.DatasetDict, list[str]]:
    labels = _class_names(raw["train"], "ner_tags") if "train" in raw else None
    if labels is None:
        labels = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]
    out = {}
    for split, ds in raw.items():
        ds = ds.select_columns(["tokens", "ner_tags"]).rename_column("ner_tags", "tags")
        out[split] = ds.cast(features_for("token", labels))
    return datasets.DatasetDict(out), labels


def _massive(raw: datasets.DatasetDict, locale: str) -> tuple[datasets.DatasetDict, list[str]]:
    labels = list(SLOT_TAGS)
    out = {}
    for split, ds in raw.items():
        if "annot_utt" not in ds.column_names:
            raise ValueError(f"{MASSIVE} ({locale}) {split}: no annot_utt column (columns: "
                             f"{', '.join(ds.column_names)}); is this a copy of MASSIVE?")
        out[split] = ds.map(convert_batch, batched=True, fn_kwargs={"locale": locale, "split": split},
                            remove_columns=ds.column_names, features=features_for("token", labels))
    return datasets.DatasetDict(out), labels


def _ontonotes(raw: datasets.DatasetDict, task: str, config: str | None
               ) -> tuple[datasets.DatasetDict, list[str]]:
    """OntoNotes documents as ``task``'s examples (:func:`~headprune_core.data.ontonotes.split_examples`); POS and
    NER keep the data set's class names, DEP, CON and SRL list every tag of the three splits."""
    got = {}
    names: dict[str, list[str] | None] = {}
    for split, ds in raw.items():
        if "sentences" not in ds.column_names:
            raise ValueError(f"{ONTONOTES} ({config}) {split}: no sentences column (columns: "
                             f"{', '.join(ds.column_names)}); is this a copy of CoNLL-2012 OntoNotes?")
        sentence = ds.features["sentences"]
        sentence = getattr(sentence, "feature", sentence[0] if isinstance(sentence, list) else sentence)
        for column in ("pos_tags", "named_entities"):
            feat = sentence.get(column)
            feat = getattr(feat, "feature", feat)
            names.setdefault(column, list(feat.names) if isinstance(feat, datasets.ClassLabel) else None)
        words, tags, _ = split_examples(ds, task, names, f"{ONTONOTES} ({config}) {split}")
        got[split] = (words, tags)
    column = {"onto-pos": "pos_tags", "onto-ner": "named_entities"}.get(task)
    labels = names.get(column) if column else None
    if labels is None:  # the tag inventory, not a learned quantity: every split's
        labels = sorted({t for _, tags in got.values() for sent in tags for t in sent})
    index = {t: i for i, t in enumerate(labels)}
    out = {split: datasets.Dataset.from_dict({"tokens": words, "tags": [[index[t] for t in s] for s in tags]},
                                             features=features_for("token", labels))
           for split, (words, tags) in got.items()}
    return datasets.DatasetDict(out), labels


def _pairs(raw: datasets.DatasetDict, first: str, second: str | None, labels: list[str] | None
           ) -> tuple[datasets.DatasetDict, list[str]]:
    any_split = next(iter(raw.values()))
    labels = _class_names(any_split, "label") or labels or sorted({str(v) for v in any_split["label"]})
    out = {}
    for split, ds in raw.items():
        cols = [first] + ([second] if second else []) + ["label"]
        ds = ds.select_columns(cols).rename_column(first, "text")
        if second:
            ds = ds.rename_column(second, "text_pair")
        ds = ds.filter(lambda b: [l >= 0 for l in b["label"]], batched=True)  # hidden test labels are -1
        out[split] = ds.cast(features_for("sentence", labels, pair=second is not None))
    return datasets.DatasetDict(out), labels


def glue_validation_size(train: int) -> int:
    """How many of GLUE's ``train`` rows become our validation split: 10%, at most :data:`GLUE_VALIDATION_MAX`."""
    return min(int(round(0.1 * train)), GLUE_VALIDATION_MAX)


def _glue_splits(dd: datasets.DatasetDict, task: str) -> datasets.DatasetDict:
    official = "validation_matched" if task == "mnli" else "validation"
    train = dd["train"]
    n_val = glue_validation_size(len(train))
    perm = np.random.default_rng(SPLIT_SEED).permutation(len(train))
    return datasets.DatasetDict({"train": train.select(sorted(perm[n_val:].tolist())),
                                 "validation": train.select(sorted(perm[:n_val].tolist())),
                                 "test": dd[official]})


def load_hub(task: str, lang: str, *, data_files: Mapping[str, str | Path] | None = None,
             treebank: str | None = None, path: str | None = None, config: str | None = None,
             **load_kw) -> TaskData:
    """Load a Hub task (see the module table); ``data_files`` reads a local copy in the Hub layout.

    ``path`` / ``config`` replace the task's own Hub data set and config (e.g. a local copy of it, or WikiANN's
    ``sw`` for a language code the registry does not list)."""
    spec = hub_spec(task, lang, treebank=treebank or (config if task in UD_TASKS else None))
    if path is not None or config is not None:
        spec = HubSpec.of(path or spec.path, config or spec.config)
    raw = _load_raw(spec, data_files, **load_kw)
    info = get_task(task)
    if task == "ner":
        dd, labels = _wikiann(raw)
    elif task in UD_TASKS:
        dd, labels = _ud(raw, task)
    elif task in GLUE_COLUMNS:
        dd, labels = _pairs(raw, *GLUE_COLUMNS[task], None)
        dd = _glue_splits(dd, task)
    elif task == "xnli":
        dd, labels = _pairs(raw, "premise", "hypothesis", list(info.labels))
    elif task == "slots":
        dd, labels = _massive(raw, spec.config or locale_of(lang))
    elif task in ONTONOTES_TASKS:
        dd, labels = _ontonotes(raw, task, spec.config)
    else:
        dd, labels = _pairs(raw, "sentence1", "sentence2", None)
    dd = datasets.DatasetDict({s: dd[s] for s in ("train", "validation", "test") if s in dd})
    check_splits(dd, f"{spec.path} ({spec.config})")
    mirrored = mirror_folder(spec) if not data_files and not _is_local(spec.path) else None
    meta = {"source_kind": "hub", "hub_path": spec.path, "hub_config": spec.config, "hub_revision": spec.revision,
            "local_copy": ({k: str(v) for k, v in data_files.items()} if data_files
                           else str(mirrored) if mirrored else None),
            "counts": {s: len(d) for s, d in dd.items()}}
    return TaskData(dd, labels, info.kind, task, lang, meta)


def load_hub_generic(path: str, config: str | None, task: str, lang: str, *, columns: tuple[str, ...] = (),
                     labels: list[str] | None = None, **load_kw) -> TaskData:
    """Any Hub data set (or a local copy) with word/tag or text/label columns, as ``task`` in ``lang``.

    Columns are found by name (``tokens`` + ``ner_tags``/``pos_tags``/``upos``/``tags``; ``text``/``sentence``
    + ``label``) or given; ClassLabel names become the label names; ``dev`` counts as validation; a missing
    validation or test split is carved from train (seed 13, 10% each)."""

    spec = HubSpec.of(path, config)
    raw = _load_raw(spec, None, **load_kw)
    raw = datasets.DatasetDict({("validation" if k in ("dev", "valid") else k): v for k, v in raw.items()})
    if "train" not in raw:
        raise ValueError(f"{path} ({config}) has no train split (it has: {', '.join(raw)})")
    by_split = {}
    for split, ds in raw.items():
        if split not in ("train", "validation", "test"):
            continue
        first = ds[0] if len(ds) else None
        cols = tuple(columns) or (find_columns(list(first), first) if first is not None else ())
        names = {c: n for c in cols if (n := _class_names(ds, c))}
        by_split[split] = records_in_batches(ds.iter(batch_size=ROW_BATCH), columns=cols, path=f"{path}[{split}]",
                                             names=names)
        if labels is None and cols and names.get(cols[-1]):
            labels = list(names[cols[-1]])  # every class of the ClassLabel, seen in this split or not
    missing = [s for s in ("validation", "test") if s not in by_split]
    if missing:  # carve the missing splits from train, 10% each
        train = by_split["train"]
        perm = np.random.default_rng(SPLIT_SEED).permutation(len(train))
        n = int(round(0.1 * len(train)))
        for j, s in enumerate(missing):
            by_split[s] = [train[i] for i in sorted(perm[j * n:(j + 1) * n])]
        by_split["train"] = [train[i] for i in sorted(perm[len(missing) * n:])]
    info = TASKS.get(task)
    data = from_records(by_split, info, task, lang, kind=None, labels=labels,
                         meta={"source_kind": "hub", "hub_path": path, "hub_config": config,
                               "columns": list(columns), "carved": missing})
    return data
