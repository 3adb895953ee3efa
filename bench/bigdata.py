"""A big corpus: peak resident memory of registering and scoring a 500,000-sentence local parquet table.

A generated token corpus (5-25 words a sentence from a 5,000-word vocabulary, 12 universal tags, a Hub ClassLabel
in the file's metadata, one file split 80/10/10) is registered with ``data add``, then its heads are scored after
a 100-sentence fine-tune (20 with ``--quick``); the same score on the embedded English POS corpus (a few hundred
sentences) is the baseline, so "beyond the model" is the difference of the two peaks. Each command's own peak
(VmHWM) is measured by :mod:`bench.peak` in a fresh process, on a cache whose model and corpora are links to this
checkout's.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path

from bench.demo import linked_cache, run_measured
from bench.report import Goal, Section

SENTENCES = 500_000
QUICK_SENTENCES = 20_000
LIMIT_MB = 2048
TAGS = ["ADJ", "ADP", "ADV", "CONJ", "DET", "NOUN", "NUM", "PRON", "PRT", "PUNCT", "VERB", "X"]
SCORE = ["--sentences", "100", "--max-train", "100", "--epochs", "1"]
QUICK_SCORE = ["--sentences", "20", "--max-train", "20", "--epochs", "1"]  # --quick: the code path, not the size


def make_table(sentences: int, *, seed: int = 0):
    """A token corpus of ``sentences`` rows (columns ``tokens`` and ``pos_tags``) as an Arrow table whose metadata
    holds the Hub's features (a ClassLabel of the tags), as ``datasets`` writes it."""
    import pyarrow as pa

    rng = random.Random(seed)
    words = [f"w{i}" for i in range(5000)]
    tokens, tags = [], []
    for _ in range(sentences):
        n = rng.randint(5, 25)
        tokens.append([rng.choice(words) for _ in range(n)])
        tags.append([rng.randrange(len(TAGS)) for _ in range(n)])
    features = {"tokens": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "Sequence"},
                "pos_tags": {"feature": {"names": TAGS, "_type": "ClassLabel"}, "_type": "Sequence"}}
    return pa.table({"tokens": tokens, "pos_tags": tags}).replace_schema_metadata(
        {b"huggingface": json.dumps({"info": {"features": features}}).encode()})


def write_table(path: Path, sentences: int, *, seed: int = 0) -> int:
    """One parquet file of :func:`make_table`'s corpus; returns its bytes."""
    import pyarrow.parquet as pq

    pq.write_table(make_table(sentences, seed=seed), path)
    return path.stat().st_size


def write_hub_copy(root: Path, sentences: int, *, seed: int = 0) -> int:
    """The same corpus as a local copy of a Hub data set: ``default/{train,validation,test}-00000-of-00001.parquet``
    (80/10/10) and a README whose YAML header lists the splits, as the Hub serves a repository; returns its bytes."""
    import pyarrow.parquet as pq

    table = make_table(sentences, seed=seed)
    n_dev = n_test = sentences // 10
    parts = {"train": table.slice(0, sentences - n_dev - n_test),
             "validation": table.slice(sentences - n_dev - n_test, n_dev),
             "test": table.slice(sentences - n_test, n_test)}
    (root / "default").mkdir(parents=True, exist_ok=True)
    lines = ["---", "configs:", "- config_name: default", "  data_files:"]
    for split, part in parts.items():
        pq.write_table(part, root / "default" / f"{split}-00000-of-00001.parquet")
        lines += [f"  - split: {split}", f"    path: default/{split}-*"]
    (root / "README.md").write_text("\n".join([*lines, "---", "", "A generated corpus (headprune bench).", ""]))
    return sum(f.stat().st_size for f in (root / "default").iterdir())


def run(*, quick: bool = False, model: str = "me5-small", device: str = "auto") -> Section:
    work = Path(tempfile.mkdtemp(prefix="headprune-bench-big-"))
    cache = linked_cache(work / "cache")
    env = {**os.environ, "HEADPRUNE_CACHE": str(cache), "TOKENIZERS_PARALLELISM": "false",
           "HF_DATASETS_CACHE": str(work / "hf-datasets")}  # the Hub copy's Arrow files, removed with the rest
    log = work / "bigdata.log"
    n = QUICK_SENTENCES if quick else SENTENCES
    score = QUICK_SCORE if quick else SCORE
    table = work / "big.parquet"
    size = write_table(table, n)
    hub = work / "big-hub"
    write_hub_copy(hub, n)
    steps = [
        (f"register {n:,} sentences", ["headprune_core", "data", "add", "big", "--lang", "xx", str(table)]),
        ("register them from a Hub-format copy", ["headprune_core", "data", "add", "bighub", "--lang", "xx",
                                                 f"hub:{hub}:default"]),
        ("fine-tune and score them", ["headprune_core", "score", "--model", model, "--device", device, "--task",
                                      "big", "--lang", "xx", "--train-langs", "xx", *score]),
        ("the same on embedded pos/en", ["headprune_core", "score", "--model", model, "--device", device, "--task",
                                         "pos", "--lang", "en", *score]),
        ("score them again (cached: loading only)", ["headprune_core", "score", "--model", model, "--device",
                                                     device, "--task", "big", "--lang", "xx", "--train-langs", "xx",
                                                     *score]),
    ]
    measured = {name: run_measured(args, env, log) for name, args in steps}
    def shown(a: str) -> str:  # files by their names, not this run's temporary folder
        return Path(a).name if a.startswith("/") else a.replace(f"{work}/", "")

    rows = [[name, f"`python -m {' '.join(shown(a) for a in args)}`",
             round(measured[name]["seconds"], 1), round(measured[name]["peak_mb"])] for name, args in steps]
    register, register_hub = (measured[steps[i][0]]["peak_mb"] for i in (0, 1))
    beyond = measured[steps[2][0]]["peak_mb"] - measured[steps[3][0]]["peak_mb"]
    goals = [Goal(f"register a {n:,}-sentence parquet", f"<= {LIMIT_MB} MiB", f"{register:.0f} MiB",
                  register <= LIMIT_MB if not quick else None),
             Goal(f"register a {n:,}-sentence Hub-format copy", f"<= {LIMIT_MB} MiB", f"{register_hub:.0f} MiB",
                  register_hub <= LIMIT_MB if not quick else None),
             Goal("fine-tune and score it, beyond the same run on a small corpus", f"<= {LIMIT_MB} MiB",
                  f"{beyond:+.0f} MiB", beyond <= LIMIT_MB if not quick else None)]
    notes = [f"The table: {n:,} sentences of 5-25 words, {size / 1e6:.1f} MB of parquet; one file, split 80/10/10. "
             "The Hub-format copy holds the same rows as three split files in the Hub's layout (read by "
             "datasets.load_dataset, offline).",
             "Each peak is the command's own VmHWM (bench.peak); the model and training dominate the score runs."]
    return Section("bigdata", f"A big corpus: register and score {n:,} sentences",
                   ["step", "command", "wall s", "peak MiB"], rows, goals, notes)
