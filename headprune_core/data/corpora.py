"""The embedded default corpora: fetched from registry packages at set-up and converted into ``cache/corpora``.

``prepare_corpora()`` writes, for every (task, language), ``cache/corpora/<task>/<lang>/{train,validation,
test}.jsonl`` and ``meta.json`` (labels, counts per split, X share, unknown native tags, source, licence, notes).
Each folder is written into a temporary folder and renamed into place, so a crash leaves nothing half-written;
a folder already there (same format version) is skipped, so a second run fetches and writes nothing. A source
that cannot be fetched (no apt-get, no network) is reported as missing, with the reason, and the rest goes on.

Sources (see DESIGN.md, "The embedded default corpora"):
- Debian ``python3-pattern``: ``tagged-*.txt`` (POS + NAME for en de es fr it nl) and the sentence-task CSVs.
- PyPI ``dante-corpora==2.0.5``: Porttinari CoNLL-U (pt), DANTEStocks emotion, DANTEShots stance.
- PyPI ``turkish-treebanks==1.0.0``: ``wiki.conllu`` + ``web.conllu`` (tr), inflectional groups merged.

Splits: every corpus is shuffled with ``numpy.random.default_rng(13)`` and cut 80/10/10 (validation and test
get ``round(0.1 n)`` each, train the rest); each split keeps corpus order. POS and NAME of a language share
their sentences and splits. Sentence tasks are de-duplicated first (exact text after whitespace
normalisation; a text given conflicting labels is dropped), so no text sits in two splits.

>>> # report = prepare_corpora(); print(report.summary())
"""

from __future__ import annotations

import csv
import html
import json
import logging
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from headprune_core.base import fetch
from headprune_core.base.cache import cache_root
from headprune_core.base.choices import SPLITS
from headprune_core.base.files import atomic_dir, scratch_path
from headprune_core.base.progress import TqdmProgress
from headprune_core.base.progress import report as report_progress
from headprune_core.data.formats import conllu_words, iter_conllu
from headprune_core.data.registry import TASKS
from headprune_core.data.tagsets import NAME_TAGS, UNIVERSAL_TAGS, TagMapper, bio_names, is_proper

log = logging.getLogger(__name__)

CORPUS_FORMAT = 1
SPLIT_SEED = 13
SPLIT_RATIOS = (0.8, 0.1, 0.1)
PREPARE_HINT = "run `python -m headprune_core prepare` (or headprune_core.data.prepare_corpora())"

PATTERN_DEB = "python3-pattern"
PATTERN_DIR = "usr/share/doc/python3-pattern/test/corpora"
DANTE = ("dante-corpora", "2.0.5")
TURKISH = ("turkish-treebanks", "1.0.0")

# (language, file, native tagset, notes)
PATTERN_TAGGED = (
    ("en", "tagged-en-wsj.txt", "penn", ["Penn Treebank WSJ sample; a line may hold more than one sentence"]),
    ("de", "tagged-de-tiger.txt", "stts",
     ["de-tiger has only 250 sentences: validation and test hold 25 each, so German scores are noisy"]),
    ("es", "tagged-es-wikicorpus.txt", "parole", ["WikiCorpus (FreeLing Parole tags); W (dates) -> NOUN"]),
    ("fr", "tagged-fr-wikinews.txt", "penn-fr",
     ["WikiNews, looks machine-tagged; no number tag (numbers are JJ/DT, so NUM hardly occurs); FW -> X"]),
    ("it", "tagged-it-wacky.txt", "penn-it", ["WaCKy, looks machine-tagged; FC and quote tags patched"]),
    ("nl", "tagged-nl-twnc.txt", "wotan", ["Twente News Corpus, Wotan tags (head of the tag looked up)"]),
)
# (task, file, label column index, text column index, label values -> label names)
PATTERN_CSV = (
    ("polarity-en", "polarity-en-pang&lee2.csv", 0, 1, {"-1": "negative", "1": "positive"}),
    ("reviews-en", "polarity-en-pang&lee1.csv", 0, 1, {"-1": "negative", "1": "positive"}),
    ("uncertainty-en", "uncertainty-conll2010.csv", 0, 1, {"-1": "uncertain", "1": "certain"}),
    ("polarity-de", "polarity-de-amazon.csv", 0, 1, {"-1": "negative", "1": "positive"}),
    ("polarity-fr", "polarity-fr-amazon.csv", 1, 0, {"-1": "negative", "1": "positive"}),
    ("polarity-nl", "polarity-nl-bol.com.csv", 0, 1, {"-1": "negative", "1": "positive"}),
)
EMOTIONS = {"TRU": "trust", "DIS": "disgust", "JOY": "joy", "SAD": "sadness", "ANT": "anticipation",
            "SUR": "surprise", "ANG": "anger", "FEA": "fear", "NEUTRAL": "neutral"}
STANCES = {"1.0": "favour", "2.0": "neutral", "3.0": "against"}


@dataclass
class PrepareReport:
    """What ``prepare_corpora`` did: (task, lang) written, already there, or missing with the reason."""

    root: Path
    done: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str, str]] = field(default_factory=list)
    missing: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def nothing_to_do(self) -> bool:
        return not self.done and not self.missing

    def summary(self) -> str:
        lines = [f"corpora in {self.root}: {len(self.done)} written, {len(self.skipped)} already prepared, "
                 f"{len(self.missing)} missing"]
        if self.nothing_to_do:
            lines.append("nothing to do: every embedded corpus is already prepared (force=True rebuilds)")
        lines += [f"  missing {t}/{l}: {why}" for t, l, why in self.missing]
        return "\n".join(lines)


@dataclass
class CorpusOutput:
    """One prepared corpus: a task in a language, its records (every split together) and its metadata."""

    task: str
    lang: str
    records: list[dict]
    meta: dict


@dataclass
class CorpusSource:
    """A package that holds corpora: the (task, language) pairs it gives, and ``build(download_dir, work_dir)``
    yielding a :class:`CorpusOutput` per pair (or ``(task, lang, why)`` for one it cannot give)."""

    name: str
    outputs: list[tuple[str, str]]
    build: Callable[[Path, Path], Iterator[CorpusOutput | tuple[str, str, str]]]


# ----------------------------------------------------------------------------------------------- splitting

def split_indices(n: int, *, seed: int = SPLIT_SEED) -> dict[str, list[int]]:
    """The fixed 80/10/10 split of ``n`` items: seeded permutation, each split in corpus order."""
    perm = np.random.default_rng(seed).permutation(n)
    n_val = n_test = int(round(n * SPLIT_RATIOS[1]))
    n_train = n - n_val - n_test
    parts = (perm[:n_train], perm[n_train:n_train + n_val], perm[n_train + n_val:])
    return {s: sorted(int(i) for i in p) for s, p in zip(SPLITS, parts)}


def _normalise_text(text: str) -> str:
    return " ".join(html.unescape(text.replace("\\n", "\n")).split())


def dedupe(pairs: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], dict]:
    """Drop empty texts and repeated texts (keep the first); drop every copy of a text with two labels."""
    labels: dict[str, set[str]] = {}
    for text, label in pairs:
        labels.setdefault(text, set()).add(label)
    seen, out = set(), []
    for text, label in pairs:
        if not text or text in seen or len(labels[text]) > 1:
            continue
        seen.add(text)
        out.append((text, label))
    conflicting = sum(1 for v in labels.values() if len(v) > 1)
    return out, {"input": len(pairs), "kept": len(out), "conflicting_texts": conflicting}


# ----------------------------------------------------------------------------------------------- outputs

def token_outputs(lang: str, sents: list[tuple[list[str], list[str], list[bool]]], mapper: TagMapper,
                   meta: dict) -> list[CorpusOutput]:
    """POS and NAME outputs of one language from (words, native tags, proper-noun flags)."""
    pos, name = [], []
    for words, native, proper in sents:
        pos.append({"tokens": words, "tags": [mapper.map(t) for t in native], "native": native})
        name.append({"tokens": words, "tags": bio_names(proper)})
    common = {**meta, "kind": "token", "x_share": round(mapper.x_share(), 6),
              "unknown_tags": dict(mapper.unknown.most_common()), "native_tagset": mapper.tagset}
    if mapper.unknown:
        common["notes"] = common.get("notes", []) + [
            f"{sum(mapper.unknown.values())} tokens with tags missing from the {mapper.tagset} table mapped to "
            f"X: {dict(mapper.unknown.most_common(10))}"]
    return [CorpusOutput("pos", lang, pos, {**common, "labels": list(UNIVERSAL_TAGS)}),
            CorpusOutput("name", lang, name, {**common, "labels": list(NAME_TAGS),
                                         "notes": common.get("notes", []) + [
                                             "NAME spans are runs of gold proper-noun tags: a proxy for NER"]})]


def sentence_output(task: str, lang: str, pairs: list[tuple[str, str]], meta: dict) -> CorpusOutput:
    """A sentence task's output from (text, label) pairs, de-duplicated (the notes say how many were dropped)."""
    pairs, stats = dedupe(pairs)
    notes = list(meta.pop("notes", []))
    if stats["kept"] != stats["input"]:
        notes.append(f"{stats['input'] - stats['kept']} of {stats['input']} examples dropped as empty or "
                     f"duplicate texts ({stats['conflicting_texts']} texts had conflicting labels)")
    records = [{"text": t, "label": l} for t, l in pairs]
    return CorpusOutput(task, lang, records, {**meta, "kind": "sentence", "labels": list(TASKS[task].labels),
                                         "dedupe": stats, "notes": notes})


# ----------------------------------------------------------------------------------------------- pattern

def read_tagged(path: Path, tagset: str) -> list[tuple[list[str], list[str], list[bool]]]:
    """Pattern's ``word/TAG`` lines: split each token on its LAST '/', decode ``&slash;`` in the word."""
    out = []
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        if not line.strip():
            continue
        words, tags = [], []
        for tok in line.split():
            word, sep, tag = tok.rpartition("/")
            if not sep or not word or not tag:  # never seen in the shipped files; keep the token, tag it X
                word, tag = tok, "?"
            words.append(word.replace("&slash;", "/"))
            tags.append(tag)
        out.append((words, tags, [is_proper(tagset, t) for t in tags]))  # type: ignore[arg-type]
    return out


def _build_pattern(downloads: Path, work: Path) -> Iterator[CorpusOutput | tuple[str, str, str]]:
    deb = fetch.apt_download(PATTERN_DEB, downloads)
    base = fetch.deb_extract(deb, work / "pattern") / PATTERN_DIR
    source = f"Debian {deb.name}"
    licence = "pattern test corpora: for personal use only (pattern README); never copied into the repo"
    for lang, filename, tagset, notes in PATTERN_TAGGED:
        try:
            sents = read_tagged(base / filename, tagset)
            meta = {"source": f"{source}: {PATTERN_DIR}/{filename}", "licence": licence, "notes": list(notes)}
            yield from token_outputs(lang, sents, TagMapper(tagset), meta)  # type: ignore[arg-type]
        except Exception as err:  # one bad file must not stop the others
            log.exception("could not convert %s", filename)
            for task in ("pos", "name"):
                yield (task, lang, f"{filename}: {type(err).__name__}: {err}")
    for task, filename, li, ti, values in PATTERN_CSV:
        lang = TASKS[task].languages[0]
        try:
            pairs = []
            with open(base / filename, encoding="utf-8-sig", newline="") as f:
                for no, row in enumerate(csv.reader(f), 1):
                    if len(row) != 2 or row[li].strip() not in values:
                        raise ValueError(f"{filename}: row {no}: expected label,text with label in "
                                         f"{sorted(values)}, got {row[:2]!r}"[:300])
                    pairs.append((_normalise_text(row[ti]), values[row[li].strip()]))
            notes = ["pattern's README swaps pang&lee1/2: lee2 holds the sentences, lee1 the reviews"] \
                if "pang" in filename else []
            if task == "polarity-fr":
                notes.append("the French CSV puts the text first")
            yield sentence_output(task, lang, pairs, {"source": f"{source}: {PATTERN_DIR}/{filename}",
                                                       "licence": licence, "notes": notes})
        except Exception as err:
            log.exception("could not convert %s", filename)
            yield (task, lang, f"{filename}: {type(err).__name__}: {err}")


# ----------------------------------------------------------------------------------------------- dante

def _build_dante(downloads: Path, work: Path) -> Iterator[CorpusOutput | tuple[str, str, str]]:
    wheel = fetch.pip_download(*DANTE, downloads)
    source = f"PyPI {wheel.name}"
    licence = "MIT (dante-corpora)"
    data = work / "dante"
    try:
        path = fetch.unzip_members(wheel, "dante/data/porttinari/annotated.conllu", data)
        sents = []
        for rows in iter_conllu(path):
            rec = conllu_words(rows, column=3, path=str(path), mwt="surface")
            sents.append((rec.tokens, rec.tags, [is_proper("upos", t) for t in rec.tags]))
        meta = {"source": f"{source}: dante/data/porttinari/annotated.conllu", "licence": licence,
                "notes": ["Porttinari (news, UD tags); multi-word tokens (da = de + a) kept as one surface word "
                          "tagged like their first part (ADP+DET -> ADP)"]}
        yield from token_outputs("pt", sents, TagMapper("upos"), meta)
    except fetch.FetchError:
        raise
    except Exception as err:
        log.exception("could not convert Porttinari")
        yield ("pos", "pt", f"porttinari: {type(err).__name__}: {err}")
        yield ("name", "pt", f"porttinari: {type(err).__name__}: {err}")

    def texts(corpus: str) -> dict[str, str]:
        path = fetch.unzip_members(wheel, f"dante/data/{corpus}/base.csv", data)
        with open(path, encoding="utf-8-sig", newline="") as f:
            return {r["Tweet_ID"]: _normalise_text(r["Content"]) for r in csv.DictReader(f)}

    try:
        content = texts("dantestocks")
        path = fetch.unzip_members(wheel, "dante/data/dantestocks/emotion.csv", data)
        pairs, multi, none = [], 0, 0
        with open(path, encoding="utf-8-sig", newline="") as f:
            for r in csv.DictReader(f):
                marked = [name for col, name in EMOTIONS.items() if r[col].strip() == "1"]
                if len(marked) == 1:
                    pairs.append((content[r["Tweet_ID"]], marked[0]))
                elif marked:
                    multi += 1
                else:
                    none += 1
        yield sentence_output("emotion-pt", "pt", pairs, {
            "source": f"{source}: dante/data/dantestocks/emotion.csv + base.csv", "licence": licence,
            "notes": [f"single-label: kept the {len(pairs)} tweets with exactly one of the 9 columns = 1; dropped "
                      f"{multi} with several and {none} with none (the -1/-2 codes are undocumented)"]})
    except Exception as err:
        log.exception("could not convert DANTEStocks emotion")
        yield ("emotion-pt", "pt", f"dantestocks: {type(err).__name__}: {err}")

    try:
        content = texts("danteshots")
        path = fetch.unzip_members(wheel, "dante/data/danteshots/stance.csv", data)
        pairs, dropped = [], 0
        with open(path, encoding="utf-8-sig", newline="") as f:
            for r in csv.DictReader(f):
                stance = STANCES.get(r["Positions_Vac"].strip())
                if r["Post_Vaccine"].strip() == "1" and stance:
                    pairs.append((content[r["Tweet_ID"]], stance))
                else:
                    dropped += 1
        yield sentence_output("stance-pt", "pt", pairs, {
            "source": f"{source}: dante/data/danteshots/stance.csv + base.csv", "licence": licence,
            "notes": [f"Positions_Vac 1/2/3 read as favour/neutral/against (checked on examples; undocumented); "
                      f"dropped {dropped} tweets not about vaccines or without a position"]})
    except Exception as err:
        log.exception("could not convert DANTEShots stance")
        yield ("stance-pt", "pt", f"danteshots: {type(err).__name__}: {err}")


# ----------------------------------------------------------------------------------------------- turkish

def turkish_words(rows: list[tuple[int, list[str]]]) -> tuple[list[str], list[str], list[bool]]:
    """Merge inflectional groups (deprel ``ig``, head = next token) back into surface words.

    The word's form is the concatenation of its groups; its tag is the tag of the LAST group, the one that
    carries the word's inflection and its relation in the tree (katıl+dığı -> ADJ, gel+in+diğinde -> NOUN);
    it is a proper noun when any group has XPOS NNP.
    """
    words, tags, proper = [], [], []
    form, is_nnp = "", False
    for _, cols in rows:
        form += cols[1]
        is_nnp = is_nnp or cols[4] == "NNP"
        if cols[7] == "ig":
            continue
        words.append(form)
        tags.append(cols[3])
        proper.append(is_nnp)
        form, is_nnp = "", False
    if form:  # a trailing group with no word to attach to (never seen): keep it as a word
        words.append(form)
        tags.append(rows[-1][1][3])
        proper.append(is_nnp)
    return words, tags, proper


def _build_turkish(downloads: Path, work: Path) -> Iterator[CorpusOutput | tuple[str, str, str]]:
    wheel = fetch.pip_download(*TURKISH, downloads)
    try:
        sents, counts = [], {}
        for name in ("wiki.conllu", "web.conllu"):
            path = fetch.unzip_members(wheel, f"data/{name}", work / "turkish")
            before = len(sents)
            sents += [turkish_words(rows) for rows in iter_conllu(path)]
            counts[name] = len(sents) - before
        meta = {"source": f"PyPI {wheel.name}: data/wiki.conllu + data/web.conllu", "licence": "Apache-2.0",
                "notes": [f"wiki {counts['wiki.conllu']} + web {counts['web.conllu']} sentences, pooled before "
                          "splitting", "inflectional groups (deprel ig) merged into surface words, tagged like "
                          "their last group", "older universal tags (CONJ, PRT; ONOM and AFFIX -> X); NOUN is "
                          "about half of all words"]}
        yield from token_outputs("tr", sents, TagMapper("tr-universal"), meta)
    except fetch.FetchError:
        raise
    except Exception as err:
        log.exception("could not convert the Turkish treebanks")
        for task in ("pos", "name"):
            yield (task, "tr", f"turkish-treebanks: {type(err).__name__}: {err}")


SOURCES: tuple[CorpusSource, ...] = (
    CorpusSource("python3-pattern (Debian)",
            [(t, l) for l, *_ in PATTERN_TAGGED for t in ("pos", "name")]
            + [(t, TASKS[t].languages[0]) for t, *_ in PATTERN_CSV], _build_pattern),
    CorpusSource("dante-corpora (PyPI)", [("pos", "pt"), ("name", "pt"), ("emotion-pt", "pt"), ("stance-pt", "pt")],
            _build_dante),
    CorpusSource("turkish-treebanks (PyPI)", [("pos", "tr"), ("name", "tr")], _build_turkish),
)


def embedded_pairs() -> list[tuple[str, str]]:
    """Every (task, language) the embedded corpora provide."""
    return [p for s in SOURCES for p in s.outputs]


# ----------------------------------------------------------------------------------------------- writing

def corpora_root() -> Path:
    return cache_root() / "corpora"


def corpus_dir(task: str, lang: str) -> Path:
    return corpora_root() / task / lang


def is_prepared(task: str, lang: str) -> bool:
    folder = corpus_dir(task, lang)
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        return False
    return meta.get("format") == CORPUS_FORMAT and all((folder / f"{s}.jsonl").is_file() for s in SPLITS)


def write_output(out: CorpusOutput, final: Path | None = None, *, replace: bool = True,
           splits: dict[str, list[int]] | None = None) -> Path:
    """Write one (task, lang) folder atomically: temp folder, then rename over any old one (``replace``).

    ``splits`` gives the record indices of each split (default: the seeded 80/10/10 split)."""
    final = final or corpus_dir(out.task, out.lang)
    with atomic_dir(final, replace=replace) as tmp:
        idx = splits or split_indices(len(out.records))
        counts, tokens, label_counts = {}, {}, {s: Counter() for s in SPLITS}
        for split, ids in idx.items():
            with open(tmp / f"{split}.jsonl", "w", encoding="utf-8") as f:
                for i in ids:
                    rec = out.records[i]
                    f.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    if "tags" in rec:
                        label_counts[split].update(rec["tags"])
                    else:
                        label_counts[split][rec["label"]] += 1
            counts[split] = len(ids)
            if out.meta["kind"] == "token":
                tokens[split] = sum(len(out.records[i]["tokens"]) for i in ids)
        meta = {"format": CORPUS_FORMAT, "task": out.task, "lang": out.lang, **out.meta, "counts": counts,
                "label_counts": {s: dict(sorted(c.items())) for s, c in label_counts.items()},
                "split": {"seed": SPLIT_SEED, "ratios": list(SPLIT_RATIOS),
                          "method": "numpy default_rng(seed).permutation; validation/test round(0.1 n) each"}
                if splits is None else {"method": "as given"},
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        if tokens:
            meta["tokens"] = tokens
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
    return final


def write_corpus(task: str, lang: str, records: list[dict], meta: dict, *, folder: Path | None = None,
                 splits: dict[str, list[int]] | None = None) -> Path:
    """Write records (``{"tokens", "tags"}`` or ``{"text", "label"}`` with label NAMES) as an embedded corpus.

    ``meta`` needs ``kind`` ("token"/"sentence") and ``labels``; splits, counts and the format version are
    added. ``folder`` (default ``cache/corpora/<task>/<lang>``) is replaced atomically; ``splits`` gives each
    split's record indices (default: the seeded 80/10/10 split). Used by ``prepare_corpora``, by registered
    user corpora and by test fixtures that need a small prepared corpus.
    """
    if meta.get("kind") not in ("token", "sentence") or not meta.get("labels"):
        raise ValueError("meta needs kind ('token' or 'sentence') and labels")
    return write_output(CorpusOutput(task, lang, records, dict(meta)), folder, splits=splits)


def prepare_corpora(*, force: bool = False, progress: bool = True) -> PrepareReport:
    """Fetch and convert every embedded corpus into ``cache/corpora``; see the module docstring.

    Args:
        force: rebuild folders that are already prepared.
        progress: show tqdm progress bars.
    Returns:
        A ``PrepareReport``; ``report.missing`` says which (task, lang) could not be built and why.

    >>> # print(prepare_corpora().summary())
    """
    report = PrepareReport(corpora_root())
    downloads = cache_root() / "downloads"
    todo = []
    for src in SOURCES:
        pending = [p for p in src.outputs if force or not is_prepared(*p)]
        report.skipped += [(t, l, "already prepared") for t, l in src.outputs if (t, l) not in pending]
        if pending:
            todo.append((src, pending))
    total, done = sum(len(p) for _, p in todo), 0
    on_progress = TqdmProgress(unit="corpus") if progress and todo else None
    for src, pending in todo:
        report_progress(on_progress, f"preparing corpora ({src.name})", done, total)
        work = scratch_path(downloads, src.name)
        left = set(pending)
        try:
            for item in src.build(downloads, work):
                if isinstance(item, tuple):
                    task, lang, why = item
                    if (task, lang) in left:
                        report.missing.append((task, lang, why))
                        left.discard((task, lang))
                        done += 1
                        report_progress(on_progress, f"preparing corpora ({src.name})", done, total)
                    continue
                key = (item.task, item.lang)
                if key not in left:
                    continue
                if not item.records:
                    report.missing.append((*key, "the source holds no examples"))
                else:
                    write_output(item)
                    report.done.append(key)
                left.discard(key)
                done += 1
                report_progress(on_progress, f"preparing corpora ({src.name})", done, total)
        except fetch.FetchError as err:
            log.warning("%s: %s", src.name, err)
            reason = str(err)
        except Exception as err:  # never let one source stop the others
            log.exception("%s failed", src.name)
            reason = f"{type(err).__name__}: {err}"
        else:
            reason = "the source did not produce it"
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for key in sorted(left, key=pending.index):
            report.missing.append((*key, f"{src.name}: {reason}"))
            done += 1
            report_progress(on_progress, f"preparing corpora ({src.name})", done, total)
    if on_progress is not None:
        on_progress.close()
    return report
