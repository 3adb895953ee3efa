"""A small but real results cache for the dashboard's tests, built through the real pipeline.

``build_fixture_cache(root)`` writes, under ``root`` (used as ``HEADPRUNE_CACHE``):

* ``models/tiny-bert/``: a randomly initialised 3-layer x 4-head BERT saved with ``save_pretrained``, and a real
  word-level tokenizer built with the ``tokenizers`` library, saved as a ``PreTrainedTokenizerFast``;
* ``corpora/{pos,name}/{en,de,es,fr}/``: tiny generated corpora written by the data package's own writer, so
  they are in exactly the format ``prepare`` writes. Tags depend on context (an ambiguous word is a NOUN after a
  determiner and a VERB after a pronoun), so switching attention heads off changes the metric;
* ``plans/fixture.json``: the study plan (``en``, ``de``, ``es``; ``fr`` is prepared but left out, to test a
  missing language);
* ``runs/``: the plan run end to end with :func:`headprune_core.plans.plan.run_plan` (fine-tune, score, evaluate,
  curves), unless ``with_runs=False`` (an "empty" cache: data and model, no results).

``python -m tests.helpers.fixture_cache DIR`` builds one for manual runs: ``HEADPRUNE_CACHE=DIR streamlit run app.py``.
"""

from __future__ import annotations

import json
import os
import random
import sys
from dataclasses import asdict
from pathlib import Path

PLAN_NAME = "fixture"
LANGS = ("en", "de", "es")  # in the plan
EXTRA_LANG = "fr"  # corpus prepared, not in the plan: a "missing language"
SIZES = {"en": 300, "de": 120, "es": 200, "fr": 150}

# per language: determiners, pronouns, nouns, verbs, adjectives, ambiguous noun/verb words, names, final mark
LEXICON = {
    "en": dict(det=["the", "a", "this"], pron=["he", "she", "they", "we"],
               noun=["dog", "cat", "house", "car", "tree", "river"], verb=["sees", "likes", "finds", "wants"],
               adj=["big", "small", "red", "old"], amb=["book", "run", "walk", "park"],
               names=["Anna", "John", "Berlin", "Paris", "Maria", "New York"], adp=["in", "near"],
               adv=["today", "often", "now"]),
    "de": dict(det=["der", "die", "das", "ein"], pron=["er", "sie", "wir"],
               noun=["Hund", "Katze", "Haus", "Auto", "Baum"], verb=["sieht", "mag", "findet", "will"],
               adj=["groß", "klein", "rot", "alt"], amb=["lauf", "spiel", "ruf"],
               names=["Anna", "Jonas", "Berlin", "Hamburg", "Klara Weber"], adp=["in", "bei"],
               adv=["heute", "oft", "jetzt"]),
    "es": dict(det=["el", "la", "un", "una"], pron=["él", "ella", "nosotros"],
               noun=["perro", "gato", "casa", "coche", "árbol"], verb=["ve", "quiere", "busca", "tiene"],
               adj=["grande", "pequeño", "rojo", "viejo"], amb=["paseo", "canto", "baile"],
               names=["Ana", "Pablo", "Madrid", "Sevilla", "María López"], adp=["en", "con"],
               adv=["hoy", "ahora", "siempre"]),
    "fr": dict(det=["le", "la", "un", "une"], pron=["il", "elle", "nous"],
               noun=["chien", "chat", "maison", "voiture", "arbre"], verb=["voit", "aime", "trouve", "veut"],
               adj=["grand", "petit", "rouge", "vieux"], amb=["marche", "danse", "chante"],
               names=["Anne", "Paul", "Paris", "Lyon", "Marie Dubois"], adp=["dans", "avec"],
               adv=["souvent", "demain", "ici"]),
}
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _name(lex, rng) -> tuple[list[str], list[str]]:
    words = rng.choice(lex["names"]).split()
    return words, ["NOUN"] * len(words)


def _place(lex, rng) -> tuple[list[str], list[str]]:
    """After a preposition an ambiguous word is a place name: only the context tells it from a noun/verb."""
    return ([rng.choice(lex["amb"])], ["NOUN"]) if rng.random() < 0.5 else _name(lex, rng)


def make_sentence(lex: dict, rng: random.Random) -> tuple[list[str], list[str], list[bool]]:
    """One sentence: words, universal POS tags, proper-noun flags."""
    pick = rng.choice
    kind = rng.randrange(5)
    words: list[str] = []
    tags: list[str] = []
    proper: list[bool] = []

    def add(ws, ts, prop=False):
        words.extend(ws)
        tags.extend(ts)
        proper.extend([prop] * len(ws))

    for _ in range(rng.randrange(3)):  # a variable prefix, so position alone cannot tell the tags
        add([pick(lex["adv"])], ["ADV"])
    if kind == 0:  # PRON AMB(verb) DET ADJ NOUN
        add([pick(lex["pron"])], ["PRON"]); add([pick(lex["amb"])], ["VERB"])
        add([pick(lex["det"])], ["DET"]); add([pick(lex["adj"])], ["ADJ"]); add([pick(lex["noun"])], ["NOUN"])
    elif kind == 1:  # DET AMB(noun) VERB NAME
        add([pick(lex["det"])], ["DET"]); add([pick(lex["amb"])], ["NOUN"]); add([pick(lex["verb"])], ["VERB"])
        add(*_name(lex, rng), prop=True)
    elif kind == 2:  # NAME VERB DET AMB(noun) ADP NAME
        add(*_name(lex, rng), prop=True); add([pick(lex["verb"])], ["VERB"])
        add([pick(lex["det"])], ["DET"]); add([pick(lex["amb"])], ["NOUN"])
        add([pick(lex["adp"])], ["ADP"]); add(*_place(lex, rng), prop=True)
    elif kind == 3:  # PRON VERB DET NOUN ADP DET AMB(noun)
        add([pick(lex["pron"])], ["PRON"]); add([pick(lex["verb"])], ["VERB"])
        add([pick(lex["det"])], ["DET"]); add([pick(lex["noun"])], ["NOUN"])
        add([pick(lex["adp"])], ["ADP"]); add([pick(lex["det"])], ["DET"]); add([pick(lex["amb"])], ["NOUN"])
    else:  # NAME AMB(verb) ADP NAME
        add(*_name(lex, rng), prop=True); add([pick(lex["amb"])], ["VERB"])
        add([pick(lex["adp"])], ["ADP"]); add(*_place(lex, rng), prop=True)
    add(["."], ["PUNCT"])
    return words, tags, proper


def write_corpora(langs=(*LANGS, EXTRA_LANG), *, seed: int = 7) -> None:
    """Generated POS and NAME corpora for ``langs``, written with the data package's own writer."""
    from headprune_core.data.corpora import CorpusOutput, write_output
    from headprune_core.data.tagsets import NAME_TAGS, UNIVERSAL_TAGS, bio_names

    for lang in langs:
        rng = random.Random(f"{seed}-{lang}")
        sents = [make_sentence(LEXICON[lang], rng) for _ in range(SIZES[lang])]
        notes = ["synthetic test fixture (generated), not real data"]
        if lang == "de":
            notes.append("small on purpose, like de-tiger (only 250 sentences): German scores are noisy")
        meta = {"kind": "token", "source": "headprune test fixture (generated)", "licence": "CC0",
                "notes": notes, "native_tagset": "upos", "x_share": 0.0, "unknown_tags": {}}
        write_output(CorpusOutput("pos", lang, [{"tokens": w, "tags": t} for w, t, _ in sents],
                       {**meta, "labels": list(UNIVERSAL_TAGS)}))
        write_output(CorpusOutput("name", lang, [{"tokens": w, "tags": bio_names(p)} for w, _, p in sents],
                       {**meta, "labels": list(NAME_TAGS),
                        "notes": notes + ["NAME spans are runs of gold proper-noun tags: a proxy for NER"]}))


def word_level_tokenizer(words: list[str]):
    """A real word-level fast tokenizer over ``words`` (and [PAD] [UNK] [CLS] [SEP] [MASK]), BERT's templates."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIALS + list(dict.fromkeys(words)))}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.normalizer = normalizers.NFC()
    backend.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                     pre_tokenizers.Punctuation()])
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=64, pad_token="[PAD]",
                                   unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def write_model(folder: Path, *, layers: int = 3, heads: int = 4, hidden: int = 32, seed: int = 0) -> Path:
    """A random tiny BERT and a real word-level fast tokenizer over the fixture vocabulary."""
    import torch
    from transformers import BertConfig, BertModel

    tok = word_level_tokenizer(sorted({w for lex in LEXICON.values() for group in lex.values() for item in group
                                       for w in item.split()} | {".", ","}))
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=2 * hidden, max_position_embeddings=64,
                        pad_token_id=tok.pad_token_id)
    folder.mkdir(parents=True, exist_ok=True)
    BertModel(config, add_pooling_layer=False).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def fixture_plan(model_path: str):
    from headprune_core.plans.plan import StudyPlan
    return StudyPlan(
        name=PLAN_NAME,
        description="Test fixture: a tiny random BERT (3 layers x 4 heads) fine-tuned on generated POS and NAME "
                    "data (en), scored, evaluated and pruned in en, de, es.",
        model=model_path, tasks=("pos", "name"), langs=LANGS, source_langs=("en",), settings=("cross",),
        method="gate_grad", strategies=("importance",), random_seeds=(0, 1), curve_step=2,
        score_sentences=30, eval_sentences=30,
        train={"max_train_sentences": 240, "epochs": 10.0, "lr": 3e-3, "batch_size": 16,
               "freeze_embeddings": False})


def write_small_plan(path: Path, model_path: str) -> Path:
    """A plan file ``p``: POS in en and de on the tiny model, 40 training sentences (nothing computed for it yet:
    what reads its findings sees every card missing)."""
    path.write_text(json.dumps({"name": "p", "description": "A tiny plan.", "model": model_path, "tasks": ["pos"],
                                "langs": ["en", "de"], "train": {"max_train_sentences": 40, "epochs": 1.0}}))
    return path


def build_fixture_cache(root: str | Path, *, with_runs: bool = True) -> dict:
    """Build the fixture cache under ``root``; returns {root, model, plan_file, plan, seconds}."""
    import time

    from headprune_core.plans.plan import run_plan
    from headprune_core.runs.store import Store
    from headprune_core.runs.study import Study

    root = Path(root).resolve()
    start = time.perf_counter()
    old = os.environ.get("HEADPRUNE_CACHE")
    os.environ["HEADPRUNE_CACHE"] = str(root)
    try:
        model = write_model(root / "models" / "tiny-bert")
        write_corpora()
        plan = fixture_plan(str(model))
        (root / "plans").mkdir(parents=True, exist_ok=True)
        plan_file = root / "plans" / f"{PLAN_NAME}.json"
        plan_file.write_text(json.dumps(asdict(plan), indent=2, ensure_ascii=False))
        if with_runs:
            study = Study(plan.model, store=Store(root / "runs"), device="cpu", progress=False)
            run_plan(study, plan)
    finally:
        if old is None:
            os.environ.pop("HEADPRUNE_CACHE", None)
        else:
            os.environ["HEADPRUNE_CACHE"] = old
    return {"root": root, "model": str(model), "plan_file": plan_file, "plan": plan,
            "seconds": time.perf_counter() - start}


if __name__ == "__main__":
    out = build_fixture_cache(sys.argv[1] if len(sys.argv) > 1 else "artifacts/fixture-cache",
                              with_runs="--empty" not in sys.argv)
    print(f"fixture cache in {out['root']} ({out['seconds']:.1f} s)")
