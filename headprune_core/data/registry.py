"""The task registry: every task the app knows, its kind, languages, labels and where its data comes from.

Embedded tasks are converted at set-up from registry packages (see ``corpora``); Hub tasks load through
``datasets.load_dataset`` (see ``hub``); any task name may also be read from local files (see ``loading``).

>>> get_task("pos").languages
('en', 'de', 'es', 'fr', 'it', 'nl', 'pt', 'tr')
>>> get_task("xx")
Traceback (most recent call last):
...
headprune_core.data.registry.UnknownName: unknown task 'xx'; known: pos, name, polarity-en, ...
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from headprune_core.base.cache import cache_root
from headprune_core.base.choices import SPLITS
from headprune_core.data.massive import LOCALES, SLOT_TAGS
from headprune_core.data.tagsets import NAME_TAGS, UD_UPOS_TAGS, UNIVERSAL_TAGS

Kind = Literal["token", "sentence"]
Source = Literal["embedded", "hub", "local", "registered"]
SOURCES: tuple[str, ...] = ("embedded", "hub", "local", "registered")

POS_LANGUAGES = ("en", "de", "es", "fr", "it", "nl", "pt", "tr")
XNLI_LANGUAGES = ("ar", "bg", "de", "el", "en", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur", "vi", "zh")
PAWSX_LANGUAGES = ("de", "en", "es", "fr", "ja", "ko", "zh")
POLARITY = ("negative", "positive")


class UnknownName(KeyError, ValueError):
    """An unknown task, language or source; the message lists the known ones (printed without quotes)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class TaskInfo:
    """What a task is; ``labels`` is empty where the labels come from the data (Hub ClassLabel names)."""

    name: str
    kind: Kind
    languages: tuple[str, ...]
    description: str
    source: str
    labels: tuple[str, ...] = ()
    sources: tuple[str, ...] = ("embedded", "local")
    licence: str = ""


_PATTERN = "Debian python3-pattern test corpora"
_PATTERN_LICENCE = "for personal use only (pattern README); fetched at set-up, never copied into the repo"

TASKS: dict[str, TaskInfo] = {t.name: t for t in (
    TaskInfo("pos", "token", POS_LANGUAGES,
             "Part-of-speech tagging with the 12 universal tags (Petrov et al. 2012); one label list for every "
             "language, so zero-shot transfer is well defined",
             f"{_PATTERN} (en de es fr it nl), dante-corpora Porttinari (pt), turkish-treebanks IMST-style (tr);"
             " Hub: universal_dependencies", UNIVERSAL_TAGS, ("embedded", "hub", "local"),
             "pattern corpora personal use; dante-corpora MIT; turkish-treebanks Apache-2.0"),
    TaskInfo("name", "token", POS_LANGUAGES,
             "Proper-name spans (BIO 'NAME') derived from gold proper-noun tags (NNP/NNPS, NE, NP, N(eigen), "
             "PROPN, Turkish NNP): a PROXY for named-entity recognition, not real NER (no entity types, names "
             "that are not proper nouns are missed, adjacent names merge)",
             "same sentences and splits as 'pos'; Hub: universal_dependencies PROPN runs", NAME_TAGS,
             ("embedded", "hub", "local"),
             "pattern corpora personal use; dante-corpora MIT; turkish-treebanks Apache-2.0"),
    TaskInfo("polarity-en", "sentence", ("en",),
             "English sentence polarity (Pang & Lee sentence polarity v1.0, movie snippets)",
             f"{_PATTERN}: polarity-en-pang&lee2.csv (holds the 4,000 sentences; pattern's README swaps lee1/lee2)",
             POLARITY, licence=_PATTERN_LICENCE),
    TaskInfo("reviews-en", "sentence", ("en",),
             "English movie-review polarity (Pang & Lee polarity v2.0, whole reviews: long, mostly truncated "
             "at 128 tokens)",
             f"{_PATTERN}: polarity-en-pang&lee1.csv (holds the 1,500 reviews)", POLARITY,
             licence=_PATTERN_LICENCE),
    TaskInfo("uncertainty-en", "sentence", ("en",),
             "English hedge detection (CoNLL-2010 biomedical sentences): certain vs uncertain",
             f"{_PATTERN}: uncertainty-conll2010.csv", ("uncertain", "certain"), licence=_PATTERN_LICENCE),
    TaskInfo("polarity-de", "sentence", ("de",), "German book-review polarity (Amazon.de; only 200 reviews)",
             f"{_PATTERN}: polarity-de-amazon.csv", POLARITY, licence=_PATTERN_LICENCE),
    TaskInfo("polarity-fr", "sentence", ("fr",), "French book-review polarity (Amazon.fr)",
             f"{_PATTERN}: polarity-fr-amazon.csv", POLARITY, licence=_PATTERN_LICENCE),
    TaskInfo("polarity-nl", "sentence", ("nl",), "Dutch book-review polarity (bol.com)",
             f"{_PATTERN}: polarity-nl-bol.com.csv", POLARITY, licence=_PATTERN_LICENCE),
    TaskInfo("emotion-pt", "sentence", ("pt",),
             "Portuguese emotion of stock-market tweets (DANTEStocks, Plutchik emotions + neutral); only "
             "tweets with exactly one emotion marked are kept",
             "dante-corpora 2.0.5: dantestocks/emotion.csv + base.csv",
             ("trust", "disgust", "joy", "sadness", "anticipation", "surprise", "anger", "fear", "neutral"),
             licence="MIT"),
    TaskInfo("stance-pt", "sentence", ("pt",),
             "Portuguese stance of politicians' tweets towards COVID-19 vaccination (DANTEShots); tweets not "
             "about vaccines are dropped",
             "dante-corpora 2.0.5: danteshots/stance.csv + base.csv", ("favour", "neutral", "against"),
             licence="MIT"),
    # Hub-only tasks (need network or a local copy laid out like the Hub data).
    TaskInfo("upos", "token", ("*",),
             "Part-of-speech tagging with UD's own 17 tags (v2), as Ma et al. 2021 tag UD v2.7 (the embedded "
             "'pos' maps them onto 12)", "Hub: universal_dependencies (config = treebank; parquet export)",
             UD_UPOS_TAGS, ("hub", "local"), "per treebank (most CC BY-SA 4.0)"),
    TaskInfo("ner", "token", ("*",), "Named-entity recognition (WikiANN: PER, ORG, LOC; 176 languages)",
             "Hub: unimelb-nlp/wikiann (config = language)", (), ("hub", "local")),
    *(TaskInfo(name, "sentence", ("en",), desc, f"Hub: nyu-mll/glue ({name})", (), ("hub",))
      for name, desc in (("sst2", "GLUE SST-2 sentence sentiment"), ("cola", "GLUE CoLA acceptability"),
                         ("mrpc", "GLUE MRPC paraphrase (pairs)"), ("qqp", "GLUE QQP duplicate questions (pairs)"),
                         ("mnli", "GLUE MNLI inference (pairs; test = validation_matched)"),
                         ("qnli", "GLUE QNLI question answering inference (pairs)"),
                         ("rte", "GLUE RTE inference (pairs)"), ("wnli", "GLUE WNLI inference (pairs)"))),
    TaskInfo("slots", "token", tuple(LOCALES),
             "Slot filling (MASSIVE, 55 slot types as BIO spans; Amazon's virtual-assistant requests in 52 locales): "
             "the open stand-in for MultiATIS++, which Ma et al. 2021 used and the Hub does not hold",
             "Hub: AmazonScience/massive (config = locale, e.g. en-US; parquet export)", SLOT_TAGS, ("hub", "local"),
             "CC BY 4.0"),
    *(TaskInfo(name, "token", ("en",) if name == "onto-dep" else ("en", "zh", "ar"),  # English head rules
               f"{desc} on OntoNotes 5 (CoNLL-2012), one of He & Choi 2021's "
               "five tasks", "Hub: ontonotes/conll2012_ontonotesv5 (config english_v4, chinese_v4 or arabic_v4; "
               "parquet export)", (), ("hub", "local"),
               "OntoNotes 5.0 is LDC2013T19 (LDC's licence); the Hub copy's card says CC BY-NC-ND 4.0")
      for name, desc in (("onto-pos", "Part-of-speech tagging (Penn Treebank tags)"),
                         ("onto-ner", "Named-entity recognition (18 types, BIO)"),
                         ("onto-dep", "Unlabelled dependency parsing as tags (each word's head offset, from the "
                                      "constituency trees by Collins's head rules for English; accuracy is UAS)"),
                         ("onto-con", "Constituency parsing as tags (Gomez-Rodriguez and Vilares's relative "
                                      "encoding; scored as tag accuracy)"),
                         ("onto-srl", "Semantic role labelling, one example a predicate (given, marked [V]); "
                                      "argument F1"))),
    TaskInfo("xnli", "sentence", XNLI_LANGUAGES, "Cross-lingual natural language inference (pairs)",
             "Hub: facebook/xnli (config = language)", ("entailment", "neutral", "contradiction"), ("hub",)),
    TaskInfo("paws-x", "sentence", PAWSX_LANGUAGES, "Cross-lingual paraphrase adversaries (pairs)",
             "Hub: google-research-datasets/paws-x (config = language)", (), ("hub",)),
)}

EMBEDDED_TASKS: tuple[str, ...] = tuple(n for n, t in TASKS.items() if "embedded" in t.sources)


def user_tasks() -> dict[str, TaskInfo]:
    """Corpora the user registered (``python -m headprune_core data add``), read from the cache folder."""
    out = {}
    for name, by_lang in registered().items():
        first = next(iter(by_lang.values()))
        out[name] = TaskInfo(name, first["kind"], tuple(sorted(by_lang)),
                             first.get("description") or f"user data {name}",
                             "; ".join(f"{lang}: {m.get('origin')}" for lang, m in sorted(by_lang.items())),
                             tuple(first["labels"]), ("registered",), "the user's own data")
    return out


def all_tasks() -> dict[str, TaskInfo]:
    """Built-in tasks, then the user's registered corpora."""
    return {**TASKS, **{n: t for n, t in user_tasks().items() if n not in TASKS}}


def list_tasks(*, source: str | None = None, kind: str | None = None) -> list[TaskInfo]:
    """All tasks (built-in and registered user data), optionally only those with a given source or kind."""
    return [t for t in all_tasks().values()
            if (source is None or source in t.sources) and (kind is None or t.kind == kind)]


def get_task(name: str) -> TaskInfo:
    """The task called ``name`` (built-in or registered user data); an unknown name raises ``KeyError``
    listing the known ones."""
    if name in TASKS:
        return TASKS[name]
    tasks = all_tasks()
    try:
        return tasks[name]
    except KeyError:
        raise UnknownName(f"unknown task {name!r}; known: {', '.join(tasks)} (your own corpus: "
                          "'python -m headprune_core data add NAME --lang xx FILES', or --data FILES)") from None


def check_language(task: TaskInfo, lang: str) -> None:
    """Raise ``UnknownName`` (a KeyError) listing the task's languages when ``lang`` is not one of them."""
    if "*" not in task.languages and lang not in task.languages:
        raise UnknownName(f"unknown language {lang!r} for task {task.name!r}; known: {', '.join(task.languages)}")


# --- corpora the user registered (python -m headprune_core data add; see headprune_core.data.user) ------------

USER_FORMAT = 1


def data_root() -> Path:
    return cache_root() / "data"


def user_dir(name: str, lang: str) -> Path:
    return data_root() / name / lang


def registered() -> dict[str, dict[str, dict]]:
    """Every registered corpus: ``{name: {lang: meta}}`` (unreadable folders are skipped)."""
    out: dict[str, dict[str, dict]] = {}
    root = data_root()
    if not root.is_dir():
        return out
    for meta_file in sorted(root.glob("*/*/meta.json")):
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if meta.get("user") == USER_FORMAT and all((meta_file.parent / f"{s}.jsonl").is_file() for s in SPLITS):
            out.setdefault(meta_file.parent.parent.name, {})[meta_file.parent.name] = meta
    return out
