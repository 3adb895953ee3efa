"""A user's own data, generated: the fixture's context-dependent POS sentences (and a sentence task) written
in every local format headprune reads (CoNLL, CoNLL-U, JSONL, CSV, parquet), as one file or three, and a
fine-tuned token-classification checkpoint saved the way transformers saves one."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

from tests.helpers.fixture_cache import LEXICON, make_sentence

SIZES = {"train": 120, "validation": 24, "test": 24}


def token_sentences(n: int, *, seed: int = 3, lang: str = "en") -> list[tuple[list[str], list[str]]]:
    rng = random.Random(f"own-{seed}-{lang}")
    return [(w, t) for w, t, _ in (make_sentence(LEXICON[lang], rng) for _ in range(n))]


def text_examples(n: int, *, seed: int = 3) -> list[tuple[str, str]]:
    """Sentences labelled by whether they hold a name (``name`` / ``none``): a task the text decides."""
    out = []
    for words, _tags in token_sentences(n, seed=seed):
        out.append((" ".join(words), "name" if any(w[0].isupper() for w in words[1:]) else "none"))
    return out


def write_tokens(path: Path, sents, fmt: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "conll":
        path.write_text("".join("".join(f"{w}\t{t}\n" for w, t in zip(ws, ts)) + "\n" for ws, ts in sents),
                        encoding="utf-8")
    elif fmt == "conllu":
        blocks = []
        for i, (ws, ts) in enumerate(sents):
            rows = [f"# sent_id = s{i}", f"# text = {' '.join(ws)}"]
            rows += [f"{j}\t{w}\t{w.lower()}\t{t}\t_\t_\t0\tdep\t_\t_" for j, (w, t) in enumerate(zip(ws, ts), 1)]
            blocks.append("\n".join(rows) + "\n")
        path.write_text("\n".join(blocks) + "\n", encoding="utf-8")
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps({"tokens": ws, "tags": ts}) + "\n" for ws, ts in sents), encoding="utf-8")
    elif fmt == "parquet":
        import datasets
        datasets.Dataset.from_dict({"tokens": [ws for ws, _ in sents], "tags": [ts for _, ts in sents]}).to_parquet(
            str(path))
    else:
        raise ValueError(fmt)
    return path


def write_texts(path: Path, rows, fmt: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["label", "text"])
            w.writerows([(lab, text) for text, lab in rows])
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps({"text": t, "label": lab}) + "\n" for t, lab in rows), encoding="utf-8")
    elif fmt == "parquet":
        import datasets
        datasets.Dataset.from_dict({"text": [t for t, _ in rows], "label": [lab for _, lab in rows]}).to_parquet(
            str(path))
    else:
        raise ValueError(fmt)
    return path


SUFFIX = {"conll": ".conll", "conllu": ".conllu", "jsonl": ".jsonl", "parquet": ".parquet", "csv": ".csv"}


def token_files(folder: Path, fmt: str, *, three: bool = True, lang: str = "en") -> list[Path]:
    """Three split files (train, dev, test) or one file of the generated POS sentences in ``fmt``."""
    if not three:
        return [write_tokens(folder / f"all{SUFFIX[fmt]}", token_sentences(sum(SIZES.values()), lang=lang), fmt)]
    return [write_tokens(folder / f"{split}{SUFFIX[fmt]}", token_sentences(n, seed=i, lang=lang), fmt)
            for i, (split, n) in enumerate(SIZES.items())]


def text_files(folder: Path, fmt: str, *, three: bool = True) -> list[Path]:
    if not three:
        return [write_texts(folder / f"all{SUFFIX[fmt]}", text_examples(sum(SIZES.values())), fmt)]
    return [write_texts(folder / f"{split}{SUFFIX[fmt]}", text_examples(n, seed=i), fmt)
            for i, (split, n) in enumerate(SIZES.items())]


def write_checkpoint(folder: Path, base_model: str, labels: list[str], *, seed: int = 1) -> Path:
    """A (random) ``BertForTokenClassification`` with ``id2label``, saved as transformers saves fine-tuned
    checkpoints (safetensors, config with architectures and id2label, the tokenizer)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForTokenClassification

    config = BertConfig.from_pretrained(base_model)
    config.id2label = dict(enumerate(labels))
    config.label2id = {lab: i for i, lab in enumerate(labels)}
    torch.manual_seed(seed)
    BertForTokenClassification(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(base_model).save_pretrained(folder)
    return folder
