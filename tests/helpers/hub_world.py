"""The Hugging Face Hub as a paper plan reads it, on local files: tiny random models of the paper's families saved
under the paper's model ids where ``huggingface_hub`` caches a download (``models--<id>/snapshots/<commit>/``,
``refs/main``), and data sets in the exact schemas of the Hub's (WikiANN, UD's, MASSIVE's and OntoNotes's parquet
exports, XNLI, GLUE) in a
mirror folder (``HEADPRUNE_HUB_MIRROR``). headprune then loads both through the same code that reads the Hub: only
the download is replaced.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import datasets
from datasets import ClassLabel, Features, List, Value

from tests.helpers.fixture_cache import word_level_tokenizer
from tests.helpers.hub_copy import write_hub_repo, write_parquet_export

WIKIANN_TAGS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]
UD_UPOS = ["NOUN", "PUNCT", "ADP", "NUM", "SYM", "SCONJ", "ADJ", "PART", "DET", "CCONJ", "PROPN", "PRON", "X",
           "_", "ADV", "INTJ", "VERB", "AUX"]  # the UD builder's ClassLabel order ("_": a multi-word token)
NLI = ["entailment", "neutral", "contradiction"]
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "tau", "Anna", "Berlin", "runs", "sees",
         "the", "a", "in", "big", "red", "."]


def write_hub_model(hf_cache: Path, repo_id: str, family: str, *, seed: int = 0) -> Path:
    """A random 6-layer (layer thirds and layer pairs need 5 or more), 4-head model of ``family`` (``bert`` or
    ``xlm-roberta``) with a word-level fast tokenizer, cached as a download of ``repo_id`` (its commit a hash of the
    id); returns the snapshot folder."""
    import torch
    from transformers import BertConfig, BertModel, XLMRobertaConfig, XLMRobertaModel

    tok = word_level_tokenizer(WORDS + [w.lower() for w in WORDS if w != w.lower()])
    common = dict(vocab_size=len(tok), hidden_size=32, num_hidden_layers=6, num_attention_heads=4,
                  intermediate_size=64, max_position_embeddings=72, pad_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    if family == "bert":
        model = BertModel(BertConfig(**common), add_pooling_layer=False)
    elif family == "xlm-roberta":
        model = XLMRobertaModel(XLMRobertaConfig(**common, type_vocab_size=1), add_pooling_layer=False)
    else:
        raise ValueError(f"no tiny {family} model")
    commit = hashlib.sha1(repo_id.encode()).hexdigest()
    repo = Path(hf_cache) / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(snapshot)
    tok.save_pretrained(snapshot)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snapshot


def _sentences(rng: random.Random, n: int, length: tuple[int, int] = (3, 7)) -> list[list[str]]:
    return [[rng.choice(WORDS) for _ in range(rng.randint(*length))] + ["."] for _ in range(n)]


def wikiann(rng: random.Random, lang: str, n: int) -> datasets.Dataset:
    """Rows in WikiANN's schema (tokens, ner_tags as a ClassLabel, langs, spans)."""
    feats = Features({"tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=WIKIANN_TAGS)),
                      "langs": List(Value("string")), "spans": List(Value("string"))})
    rows = []
    for words in _sentences(rng, n):
        tags = [1 if w == "Anna" else 5 if w == "Berlin" else 0 for w in words]
        rows.append({"tokens": words, "ner_tags": tags, "langs": [lang] * len(words),
                     "spans": [f"{'PER' if t == 1 else 'LOC'}: {w}" for w, t in zip(words, tags) if t]})
    return datasets.Dataset.from_dict({k: [r[k] for r in rows] for k in feats}, features=feats)


def universal_dependencies(rng: random.Random, treebank: str, n: int) -> datasets.Dataset:
    """Rows in the UD builder's schema (idx, text, tokens, lemmas, upos as a ClassLabel with "_", xpos, feats,
    head, deprel, deps, misc)."""
    feats = Features({"idx": Value("string"), "text": Value("string"), "tokens": List(Value("string")),
                      "lemmas": List(Value("string")), "upos": List(ClassLabel(names=UD_UPOS)),
                      "xpos": List(Value("string")), "feats": List(Value("string")), "head": List(Value("string")),
                      "deprel": List(Value("string")), "deps": List(Value("string")), "misc": List(Value("string"))})
    pos = {"the": "DET", "a": "DET", "in": "ADP", "big": "ADJ", "red": "ADJ", "runs": "VERB", "sees": "VERB",
           "Anna": "PROPN", "Berlin": "PROPN", ".": "PUNCT"}
    rows = []
    for i, words in enumerate(_sentences(rng, n)):
        m = len(words)
        rows.append({"idx": f"{treebank}-{i}", "text": " ".join(words), "tokens": words, "lemmas": words,
                     "upos": [UD_UPOS.index(pos.get(w, "NOUN")) for w in words], "xpos": ["_"] * m,
                     "feats": ["_"] * m, "head": ["0"] * m, "deprel": ["dep"] * m, "deps": ["_"] * m,
                     "misc": ["_"] * m})
    return datasets.Dataset.from_dict({k: [r[k] for r in rows] for k in feats}, features=feats)


def pairs(rng: random.Random, first: str, second: str | None, n: int, labels: list[str] | None = None,
          idx: bool = False) -> datasets.Dataset:
    """Sentence (pair) rows in XNLI's or a GLUE task's schema: the text columns, a ClassLabel ``label``
    (``labels``; two classes by default), and GLUE's ``idx``."""
    labels = labels or ["not_equivalent", "equivalent"]
    spec = {first: Value("string"), **({second: Value("string")} if second else {}),
            "label": ClassLabel(names=labels), **({"idx": Value("int32")} if idx else {})}
    rows = []
    for i, words in enumerate(_sentences(rng, n)):
        label = i % len(labels)
        row = {first: " ".join(words), "label": label, "idx": i}
        if second:
            row[second] = " ".join(words[:2] + (["red"] if label else ["."]))
        rows.append(row)
    feats = Features(spec)
    return datasets.Dataset.from_dict({k: [r[k] for r in rows] for k in feats}, features=feats)


def massive(rng: random.Random, locale: str, partition: str, n: int) -> datasets.Dataset:
    """Rows in MASSIVE 1.0's schema (id, locale, partition, scenario and intent as ClassLabels, utt, annot_utt with
    its ``[type : words]`` slots, worker_id, slot_method, judgments); Japanese and Chinese without spaces."""
    slot = {"Anna": "person", "Berlin": "place_name", "big": "date"}
    feats = Features({"id": Value("string"), "locale": Value("string"), "partition": Value("string"),
                      "scenario": ClassLabel(names=["alarm", "calendar"]),
                      "intent": ClassLabel(names=["alarm_set", "calendar_query"]), "utt": Value("string"),
                      "annot_utt": Value("string"), "worker_id": Value("string"),
                      "slot_method": List({"slot": Value("string"), "method": Value("string")}),
                      "judgments": List({"worker_id": Value("string"), "intent_score": Value("int8"),
                                         "slots_score": Value("int8"), "grammar_score": Value("int8"),
                                         "spelling_score": Value("int8"),
                                         "language_identification": Value("string")})})
    glue = "" if locale.startswith(("ja-", "zh-")) else " "
    rows = []
    for i, words in enumerate(_sentences(rng, n)):
        marked = [f"[{slot[w]} : {w}]" if w in slot else w for w in words]
        rows.append({"id": str(i), "locale": locale, "partition": partition, "scenario": i % 2, "intent": i % 2,
                     "utt": glue.join(words), "annot_utt": glue.join(marked), "worker_id": "7",
                     "slot_method": [{"slot": slot[w], "method": "translation"} for w in words if w in slot],
                     "judgments": [{"worker_id": "8", "intent_score": 1, "slots_score": 1, "grammar_score": 4,
                                    "spelling_score": 2, "language_identification": "target"}]})
    return datasets.Dataset.from_dict({k: [r[k] for r in rows] for k in feats}, features=feats)


ONTONOTES_POS = ["XX", "``", "$", "''", ",", "-LRB-", "-RRB-", ".", ":", "ADD", "AFX", "CC", "CD", "DT", "EX", "FW",
                 "HYPH", "IN", "JJ", "JJR", "JJS", "LS", "MD", "NFP", "NN", "NNP", "NNPS", "NNS", "PDT", "POS", "PRP",
                 "PRP$", "RB", "RBR", "RBS", "RP", "SYM", "TO", "UH", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "WDT",
                 "WP", "WP$", "WRB"]  # english_v4's ClassLabel, in the builder's order
ONTONOTES_NER = ["O", *(f"{p}-{t}" for t in ("PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "DATE", "TIME",
                                              "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL", "EVENT",
                                              "WORK_OF_ART", "LAW", "LANGUAGE") for p in ("B", "I"))]
_ONTO_POS = {"the": "DT", "a": "DT", "in": "IN", "big": "JJ", "red": "JJ", "runs": "VBZ", "sees": "VBZ",
             "Anna": "NNP", "Berlin": "NNP", ".": "."}


def ontonotes_features(pos_names: list[str] | None = ONTONOTES_POS) -> Features:
    """The CoNLL-2012 OntoNotes builder's features: a document id and its sentences (Arabic's POS are strings)."""
    pos = ClassLabel(names=pos_names) if pos_names else Value("string")
    return Features({"document_id": Value("string"), "sentences": List({
        "part_id": Value("int32"), "words": List(Value("string")), "pos_tags": List(pos),
        "parse_tree": Value("string"), "predicate_lemmas": List(Value("string")),
        "predicate_framenet_ids": List(Value("string")), "word_senses": List(Value("float32")),
        "speaker": Value("string"), "named_entities": List(ClassLabel(names=ONTONOTES_NER)),
        "srl_frames": List({"verb": Value("string"), "frames": List(Value("string"))}),
        "coref_spans": List(List(Value("int32"), length=3))})})


def ontonotes_sentence(words: list[str], part: int = 0) -> dict:
    """One sentence in the builder's schema: subject noun phrase, a verb phrase headed by its first word, a full
    stop; its tree as the Hub prints one (no space between brackets); one predicate (the verb) with ARG0/ARG1."""
    body = words[:-1]
    k = max(1, len(body) // 2)
    subject, verb, rest = body[:k], body[k] if k < len(body) else None, body[k + 1:]
    tags = [_ONTO_POS.get(w, "NN") for w in words]
    leaf = lambda i: f"({tags[i]} {words[i]})"  # noqa: E731
    np_subject = "(NP" + " ".join(leaf(i) for i in range(len(subject))) + ")"
    vp = ""
    if verb is not None:
        obj = "(NP" + " ".join(leaf(i) for i in range(k + 1, k + 1 + len(rest))) + ")" if rest else ""
        vp = f"(VP {leaf(k)}{obj})"
    tree = f"(TOP(S{np_subject}{vp} {leaf(len(words) - 1)}))"
    frames = []
    if verb is not None:
        bio = lambda n, t: [f"B-{t}"] + [f"I-{t}"] * (n - 1) if n else []  # noqa: E731
        frames.append({"verb": verb, "frames": bio(len(subject), "ARG0") + ["B-V"] + bio(len(rest), "ARG1") + ["O"]})
    ner = [ONTONOTES_NER.index("B-PERSON") if w == "Anna" else ONTONOTES_NER.index("B-GPE") if w == "Berlin" else 0
           for w in words]
    return {"part_id": part, "words": words, "pos_tags": [ONTONOTES_POS.index(t) for t in tags], "parse_tree": tree,
            "predicate_lemmas": [verb if i == k and verb else None for i in range(len(words))],
            "predicate_framenet_ids": [("01" if i == k and verb else None) for i in range(len(words))],
            "word_senses": [None] * len(words), "speaker": None, "named_entities": ner, "srl_frames": frames,
            "coref_spans": []}


def ontonotes(rng: random.Random, n: int) -> datasets.Dataset:
    """``n`` sentences as CoNLL-2012 OntoNotes rows (documents of up to 3 sentences, english_v4's schema)."""
    sentences = [ontonotes_sentence(words) for words in _sentences(rng, n)]
    docs = [{"document_id": f"nw/wsj/00/wsj_{i:04d}", "sentences": sentences[i:i + 3]} for i in range(0, n, 3)]
    feats = ontonotes_features()
    return datasets.Dataset.from_dict({k: [d[k] for d in docs] for k in feats}, features=feats)


def write_mirror(root: Path, specs, n: int = 8, seed: int = 0) -> Path:
    """A mirror folder holding, for each Hub spec (``data.hub.HubSpec``) in ``specs``, that data set's config in
    the Hub's layout and schema, ``n`` rows a split (GLUE: its own split names)."""
    from headprune_core.data.hub import GLUE_COLUMNS
    rng = random.Random(seed)
    by_path: dict[str, dict] = {}
    for spec in dict.fromkeys(specs):
        if spec.path == "unimelb-nlp/wikiann":
            splits = {s: wikiann(rng, spec.config, n) for s in ("train", "validation", "test")}
        elif spec.path == "universal-dependencies/universal_dependencies":
            splits = {s: universal_dependencies(rng, spec.config, n) for s in ("train", "validation", "test")}
        elif spec.path == "AmazonScience/massive":
            splits = {s: massive(rng, spec.config, {"validation": "dev"}.get(s, s), n)
                      for s in ("train", "validation", "test")}
        elif spec.path == "ontonotes/conll2012_ontonotesv5":
            splits = {s: ontonotes(rng, n) for s in ("train", "validation", "test")}
        elif spec.path == "facebook/xnli":
            splits = {s: pairs(rng, "premise", "hypothesis", n, NLI) for s in ("train", "validation", "test")}
        elif spec.path == "nyu-mll/glue":
            first, second = GLUE_COLUMNS[spec.config]
            labels = NLI if spec.config == "mnli" else None
            names = (("train", "validation_matched", "validation_mismatched", "test_matched")
                     if spec.config == "mnli" else ("train", "validation", "test"))
            splits = {s: pairs(rng, first, second, 3 * n if s == "train" else n, labels, idx=True) for s in names}
        else:
            raise ValueError(f"no Hub schema for {spec.path} in the tests")
        by_path.setdefault(spec.path, {})[spec.config] = (spec, splits)
    for path, configs in by_path.items():
        folder = Path(root) / path
        if any(spec.by_dir for spec, _ in configs.values()):
            write_parquet_export(folder, {c: splits for c, (_, splits) in configs.items()})
        else:
            write_hub_repo(folder, {c: splits for c, (_, splits) in configs.items()})
    return Path(root)


def hub_world(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """An empty Hugging Face cache and mirror under ``tmp_path``, the Hub itself unreachable: (hf cache, mirror)."""
    import huggingface_hub.constants
    hf_cache, mirror = tmp_path / "hf", tmp_path / "mirror"
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hf_cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HEADPRUNE_HUB_MIRROR", str(mirror))
    monkeypatch.setenv("HEADPRUNE_CACHE", str(tmp_path / "cache"))
    return hf_cache, mirror


def provide(spec, hf_cache: Path, mirror: Path, *, rows: int = 8) -> None:
    """Tiny models under every model id of sweep ``spec`` (its recorded family) and mirror copies of every Hub data
    set its grid points and their GradTS checks read (``rows`` a split)."""
    from headprune_core.data.refs import hub_spec_of
    from headprune_core.encoders.known import known_config
    for model in spec.models:
        write_hub_model(hf_cache, model, known_config(model)["model_type"])
    from headprune_core.data.refs import ref_for
    from headprune_core.runs.config import split_unit
    specs = [hub_spec_of(p.sources[t], t, lang) for p in spec.plans() for t in p.tasks for lang in p.task_langs(t)]
    specs += [hub_spec_of(ref_for(g.sources, t, lang), t, lang) for p in spec.plans() for g in p.gradts_plans()
              for t, lang in map(split_unit, g.units)]  # a GradTS check's own units
    write_mirror(mirror, specs, n=rows)


def run_offline(spec, store, markers: Path) -> int:
    """Every job of sweep ``spec``, as a sweep's worker computes it (plans/sweep_ray.run_job), in this process, in
    the order the graph releases them, recording the sweep's progress as its driver does (cache/sweeps: what the
    views read the sweep as run from); the number of jobs run."""
    from headprune_core.plans.sweep import build_graph
    from headprune_core.plans.sweep_ray import job_payload, run_job
    from headprune_core.plans.sweep_record import SweepRecord
    graph = build_graph(spec, store=store, device="cpu")
    record = SweepRecord(graph, "offline")
    done = 0
    while ready := graph.ready():
        for node in ready:
            run_job({**job_payload(graph, node, record), "markers": str(markers)})  # as the driver sends it
            node.state = "done"
            done += 1
    record.state = "done"
    record.write(force=True)
    return done
