"""Bad input, one table: every row is a malformed file, option, model, plan, cache entry or output path, and
the exact error it must get (class and full message; ``...`` at the end means "starts with"). CLI rows run
``python -m headprune_core`` in-process and expect exit status 2 and the message on stderr, before any work.

Also: inputs that look odd but are valid (CRLF, BOM, CR-only line ends) read exactly like clean files.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from headprune_core.base.files import check_name, safe_filename
from headprune_core.cli.main import main
from headprune_core.data import CorpusError, load_task
from headprune_core.data.formats import read_file
from headprune_core.encoders.heads import UnsupportedModelError
from headprune_core.encoders.models import ModelLoadError, config_head_shape, load_model
from headprune_core.methods.evaluate import load_mask
from headprune_core.multitask.plan import GradTSPlan
from headprune_core.plans.plan import StudyPlan
from headprune_core.runs.config import FinetuneConfig, ScoreConfig
from headprune_core.runs.store import Store

UPOS = "['ADJ', 'ADP', 'ADV', 'CONJ', 'DET', 'NOUN', 'NUM', 'PRON', 'PRT', 'PUNCT', 'VERB', 'X']"


@dataclass
class Ctx:
    d: Path  # a fresh folder for this row
    model: str  # the tiny model folder
    root: Path  # the tiny cache

    def write(self, name: str, content: str | bytes) -> Path:
        path = self.d / name
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return path

    def local(self, train: str, *, test: str = "a\tNOUN\n", suffix: str = ".conll", **kw):
        files = {"train": self.write(f"train{suffix}", train), "validation": self.write(f"dev{suffix}", test),
                 "test": self.write(f"test{suffix}", test)}
        return load_task(kw.pop("task", "pos"), "xx", source="local", files=files, **kw)


class CliFailed(Exception):
    """A CLI run that exited non-zero; the message is what it printed on stderr."""


def cli(ctx: Ctx, capsys, *args) -> None:
    try:
        code = main([str(a) for a in args])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err.strip()
    if code != 2:
        raise AssertionError(f"exit status {code}, expected 2; stderr: {err}")
    raise CliFailed(err.splitlines()[-1].removeprefix("python -m headprune_core ").strip())


def _plan(ctx: Ctx, data) -> StudyPlan:
    path = ctx.write("plan.json", data if isinstance(data, str) else json.dumps(data))
    return StudyPlan.from_file(path)


PLAN = {"name": "p", "description": "d", "tasks": ["pos"], "langs": ["en"]}
RUN = ["--max-train", "20", "--epochs", "1"]  # when a row would train, it trains little (it must not get there)


def _sweep_spec(ctx: Ctx, **fields) -> Path:
    return ctx.write("sweep.json", json.dumps({"name": "s", "models": [ctx.model], "tasks": ["pos"], "langs": ["en"],
                                               "train": {"max_train_sentences": 20, "epochs": 1.0}, **fields}))


def _free_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _corrupt_entry(ctx: Ctx, how: str) -> Store:
    ft = FinetuneConfig(model="m", tasks=("pos",), train_langs=("en",), model_fp="m" * 16, data_fp="d" * 16)
    cfg = ScoreConfig(finetune=ft, task="pos", lang="de", data_fp="s" * 16)
    store = Store(ctx.d / "runs")
    path = store.put(cfg, {"raw": np.arange(12.0).reshape(3, 4)})
    if how == "truncate":
        (path / "raw.npy").write_bytes((path / "raw.npy").read_bytes()[:40])
    else:
        saved = json.loads((path / "config.json").read_text())
        saved["config"]["lang"] = "fr"
        (path / "config.json").write_text(json.dumps(saved))
    assert store.get(cfg) is None  # a miss, logged (the message is checked by the row)
    return store


def _foreign_folder(ctx: Ctx) -> Path:
    out = ctx.d / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("my own work")
    return out


# (id, action(ctx, capsys), expected class, expected message with {d} = the row's folder, {m} = the model)
ROWS: list[tuple[str, Callable, type, str]] = [
    # --- corpus files ---------------------------------------------------------------------------------------------
    ("non-utf8", lambda c, _: read_file(c.write("a.conll", b"the\tDET\ncaf\xe9\tNOUN\n")), CorpusError,
     "{d}/a.conll:2: not UTF-8 text (byte 0xe9 at column 4); save the file as UTF-8"),
    ("nul-byte", lambda c, _: read_file(c.write("a.conll", b"the\tDET\n\x00\tNOUN\n")), CorpusError,
     "{d}/a.conll:2: NUL byte: a binary file or UTF-16 text, not UTF-8 text"),
    ("utf16", lambda c, _: read_file(c.write("a.conll", "the\tDET\n".encode("utf-16-le"))), CorpusError,
     "{d}/a.conll:1: NUL byte: a binary file or UTF-16 text, not UTF-8 text"),
    ("conll-no-tag", lambda c, _: read_file(c.write("a.conll", "the\tDET\ncat\n")), CorpusError,
     "{d}/a.conll:2: expected 'token<TAB>tag', got 'cat'"),
    ("conllu-columns", lambda c, _: read_file(c.write("a.conllu", "1\tthe\tthe\tDET\n")), CorpusError,
     "{d}/a.conllu:1: expected 10 tab-separated CoNLL-U fields, got 4: '1\\tthe\\tthe\\tDET'"),
    ("conllu-id", lambda c, _: read_file(c.write("a.conllu", "x\t" + "\t".join("_" * 9) + "\n")), CorpusError,
     "{d}/a.conllu:1: bad CoNLL-U ID 'x' (expected 3, 3-4 or 3.1)"),
    ("conllu-mwt", lambda c, _: read_file(c.write("a.conllu", "1-2\tdu\t" + "\t".join("_" * 8) + "\n")),
     CorpusError, "{d}/a.conllu:1: multi-word token 1-2 has no word 1"),
    ("jsonl-bad-json", lambda c, _: read_file(c.write("a.jsonl", '{"tokens": ["a"], "tags": ["X"]}\n{oops\n')),
     CorpusError, "{d}/a.jsonl:2: invalid JSON (Expecting property name enclosed in double quotes): '{oops'"),
    ("jsonl-not-object", lambda c, _: read_file(c.write("a.jsonl", "[1, 2]\n")), CorpusError,
     "{d}/a.jsonl:1: expected a JSON object, got list"),
    ("jsonl-lengths", lambda c, _: read_file(c.write("a.jsonl", '{"tokens": ["a", "b"], "tags": ["X"]}\n')),
     CorpusError, "{d}/a.jsonl:1: 'tokens' and 'tags' must be lists of equal length"),
    ("jsonl-empty-sentence", lambda c, _: read_file(c.write("a.jsonl", '{"tokens": [], "tags": []}\n')),
     CorpusError, "{d}/a.jsonl:1: empty sentence"),
    ("jsonl-mixed", lambda c, _: read_file(c.write("a.jsonl", '{"tokens": ["a"], "tags": ["X"]}\n'
                                                          '{"text": "a", "label": 1}\n')),
     CorpusError, "{d}/a.jsonl:2: a sentence record in a file of token records"),
    ("jsonl-keys", lambda c, _: read_file(c.write("a.jsonl", '{"words": ["a"]}\n')), CorpusError,
     "{d}/a.jsonl:1: expected keys 'tokens'+'tags' or 'text'+'label', got ['words']"),
    ("csv-columns", lambda c, _: read_file(c.write("a.csv", "label,text\npositive,good,very\n")), CorpusError,
     "{d}/a.csv:2: expected 2 fields (label,text), got 3: 'positive,good,very'"),
    ("empty-split", lambda c, _: c.local("a\tNOUN\n", test="\n\n"), CorpusError,
     "{d}/dev.conll: the 'validation' split is empty"),
    ("unknown-label", lambda c, _: c.local("a\tNOUN\nb\tFOO\n"), CorpusError,
     "{d}/train.conll:2: tag 'FOO' is not in the label list " + UPOS),
    ("label-index-range", lambda c, _: c.local('{"tokens": ["a"], "tags": [12]}\n',
                                               test='{"tokens": ["a"], "tags": [0]}\n', suffix=".jsonl"),
     CorpusError, "{d}/train.jsonl:1: tag index 12 out of range for 12 labels"),
    ("very-long-sentence", lambda c, _: read_file(c.write("a.conll", "w\tNOUN\n" * 6000)), CorpusError,
     "{d}/a.conll:1: a sentence of 6000 words (lines 1-6000); more than 5000 words means the blank lines "
     "between sentences are missing"),
    ("huge-word", lambda c, _: read_file(c.write("a.conll", "the\tDET\n" + "x" * 20_000_000 + "\tNOUN\n")),
     CorpusError, "{d}/a.conll:2: a word of 20,000,000 characters ('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                  "xxxxxx...'); a word has at most 1,000 (is this text without spaces, or not a token file?)"),
    ("huge-text", lambda c, _: read_file(c.write("a.csv", "label,text\npos," + "y" * 200_001 + "\n")),
     CorpusError, "{d}/a.csv:2: a field of more than 131,072 characters; a text has at most 100,000 (the model reads "
                  "only its first few hundred words)"),
    ("long-text", lambda c, _: read_file(c.write("a.jsonl", '{"text": "' + "y" * 100_001 + '", "label": "p"}\n')),
     CorpusError, "{d}/a.jsonl:1: a text of 100,001 characters; at most 100,000 (the model reads only its first few "
                  "hundred words)"),
    ("huge-integer-tag", lambda c, _: c.local('{"tokens": ["a", "b"], "tags": [0, 1000000000]}\n',
                                              test='{"tokens": ["a"], "tags": [0]}\n', suffix=".jsonl", task="x"),
     CorpusError, "{d}/train.jsonl:1: label index 1,000,000,000: integer labels are indices 0 to 9,999 (give the "
                  "label names with labels= / a label column of names)"),
    ("negative-integer-label", lambda c, _: c.local('{"text": "a", "label": -3}\n', test='{"text": "b", "label": 0}\n',
                                                    suffix=".jsonl", task="x"),
     CorpusError, "{d}/train.jsonl:1: label index -3: integer labels are indices 0 to 9,999 (give the label names "
                  "with labels= / a label column of names)"),
    ("too-many-labels", lambda c, _: c.local("".join(f'{{"text": "t", "label": "id{i}"}}\n' for i in range(10_001)),
                                             test='{"text": "b", "label": "id0"}\n', suffix=".jsonl", task="x"),
     CorpusError, "{d}/train.jsonl: 10,001 distinct labels; a task has at most 10,000 (is the label column an id "
                  "or a number?)"),
    ("unknown-suffix", lambda c, _: read_file(c.write("a.xlsx", "x")), ValueError,
     "cannot tell the format of {d}/a.xlsx from its suffix; pass format= one of conll, conllu, jsonl, csv, parquet"),
    ("missing-file", lambda c, _: read_file(c.d / "gone.conll"), FileNotFoundError,
     "no such file: {d}/gone.conll"),
    ("missing-split", lambda c, _: load_task("pos", "xx", source="local", files={"train": c.d / "a.conll"}),
     ValueError, "local files for pos/xx: no file for split(s) validation, test; give files={{'train': ..., "
                 "'validation': ..., 'test': ...}}"),
    ("tagset-unknown-tag", lambda c, _: c.local("the\tDT\ncat\tZZ\n", test="a\tNN\n", tagset="penn"),
     CorpusError, "{d}/train.conll:2: tag 'ZZ' is not in the penn table"),
    # --- masks ----------------------------------------------------------------------------------------------------
    ("mask-shape", lambda c, _: load_mask(c.write("m.json", "[[1, 1], [1, 1]]"), (3, 4)), ValueError,
     "{d}/m.json: mask has shape (2, 2), the model has (3, 4) (layers, heads)"),
    ("mask-value", lambda c, _: load_mask(c.write("m.json", json.dumps([[1, 2, 1, 1]] * 3)), (3, 4)), ValueError,
     "{d}/m.json: mask entries must be 0 (pruned) or 1 (kept); layer 0, head 1 is 2"),
    ("mask-fraction", lambda c, _: load_mask(c.write("m.json", json.dumps([[1, 1, 1, 1]] * 2 + [[1, 0.5, 1, 1]])),
                                             (3, 4)), ValueError,
     "{d}/m.json: mask entries must be 0 (pruned) or 1 (kept); layer 2, head 1 is 0.5"),
    ("mask-nan", lambda c, _: load_mask(c.write("m.json", "[[1, NaN, 1, 1]]"), (3, 4)), ValueError,
     "{d}/m.json: NaN is not allowed in a head mask (JSON) (JSON has no such number)"),
    ("mask-infinity", lambda c, _: load_mask(c.write("m.json", "[[1, Infinity, 1, 1]]"), (3, 4)), ValueError,
     "{d}/m.json: Infinity is not allowed in a head mask (JSON) (JSON has no such number)"),
    ("mask-not-json", lambda c, _: load_mask(c.write("m.json", "1 1 0 1"), (3, 4)), ValueError,
     "{d}/m.json: not valid JSON (line 1 column 3: Extra data); expected a head mask (JSON)"),
    ("mask-object", lambda c, _: load_mask(c.write("m.json", '{"mask": []}'), (3, 4)), ValueError,
     "{d}/m.json: a head mask is a list of 3 rows of 4 numbers (1 keep, 0 pruned)"),
    ("mask-ragged", lambda c, _: load_mask(c.write("m.json", "[[1, 1, 1, 1], [1, 1]]"), (3, 4)), ValueError,
     "{d}/m.json: a head mask is a list of 3 rows of 4 numbers (1 keep, 0 pruned)"),
    ("mask-strings", lambda c, _: load_mask(c.write("m.json", json.dumps([["1"] * 4] * 3)), (3, 4)), ValueError,
     "{d}/m.json: a head mask is a list of 3 rows of 4 numbers (1 keep, 0 pruned)"),
    # --- models ---------------------------------------------------------------------------------------------------
    ("hub-offline", lambda c, _: load_model("headprune-tests/no-such-model"), ModelLoadError,
     "could not load 'headprune-tests/no-such-model' from the Hugging Face Hub: the Hub could not be reached "
     "(offline?) or the id is unknown ..."),
    ("unsupported-family", lambda c, _: config_head_shape(str(c.write("config.json", '{"model_type": "gpt2", '
                                                                      '"n_layer": 2}').parent)),
     UnsupportedModelError, "unsupported model family 'gpt2' ({d}); supported: bert, camembert, distilbert, "
                            "electra, roberta, xlm-roberta"),
    ("model-is-a-file", lambda c, _: load_model(str(c.write("weights.safetensors", b"x"))), ModelLoadError,
     "{d}/weights.safetensors is a file; a model is a folder holding config.json and weights (or a Hub id)"),
    ("model-no-config", lambda c, _: load_model(str(c.d)), ModelLoadError,
     "{d} has no config.json: not a Hugging Face model folder"),
    # --- options (CLI: exit 2 before any work) ----------------------------------------------------------------------
    ("opt-zero-sentences", lambda c, cap: cli(c, cap, "score", "--sentences", "0"), CliFailed,
     "score: error: argument --sentences: must be at least 1, got 0"),
    ("opt-negative-epochs", lambda c, cap: cli(c, cap, "finetune", "--epochs", "-1"), CliFailed,
     "finetune: error: argument --epochs: must be a positive number, got -1"),
    ("opt-not-a-number", lambda c, cap: cli(c, cap, "finetune", "--max-train", "lots"), CliFailed,
     "finetune: error: argument --max-train: expected a whole number, got 'lots'"),
    ("opt-unknown-strategy", lambda c, cap: cli(c, cap, "curve", "--strategy", "best"), CliFailed,
     "curve: error: argument --strategy: unknown strategy 'best'; known: importance, reverse, random, layers"),
    ("opt-unknown-method", lambda c, cap: cli(c, cap, "score", "--method", "magic"), CliFailed,
     "score: error: argument --method: unknown importance method 'magic'; known: gate_grad, kv_grad, taylor, "
     "entropy, random"),
    ("opt-bad-seeds", lambda c, cap: cli(c, cap, "curve", "--seeds", "a,b"), CliFailed,
     "curve: error: argument --seeds: expected comma-separated whole numbers, got 'a,b'"),
    ("opt-unknown-task", lambda c, cap: cli(c, cap, "score", "--model", c.model, "--task", "nope"), CliFailed,
     "error: unknown task 'nope'; known: pos, name, polarity-en, reviews-en, uncertainty-en, polarity-de, "
     "polarity-fr, polarity-nl, emotion-pt, stance-pt, upos, ner, sst2, cola, mrpc, qqp, mnli, qnli, rte, wnli, "
     "slots, onto-pos, onto-ner, onto-dep, onto-con, onto-srl, xnli, paws-x (your own corpus: 'python -m "
     "headprune_core data add NAME --lang xx FILES', or --data "
     "FILES)"),
    ("opt-unknown-language", lambda c, cap: cli(c, cap, "score", "--model", c.model, "--lang", "xx"), CliFailed,
     "error: unknown language 'xx' for task 'pos'; known: en, de, es, fr, it, nl, pt, tr"),
    ("opt-k-too-large", lambda c, cap: cli(c, cap, "prune", "--model", c.model, "--k", "13", "--out", c.d / "o",
                                           *RUN), CliFailed,
     "error: cannot prune 13 heads: the model has 12 (3 layers x 4 heads)"),
    ("opt-k-and-mask", lambda c, cap: cli(c, cap, "prune", "--model", c.model, "--out", c.d / "o", *RUN),
     CliFailed, "error: say which heads to prune: --k N (least important) or --mask FILE, not both"),
    ("opt-step-too-large", lambda c, cap: cli(c, cap, "curve", "--model", c.model, "--step", "99", *RUN),
     CliFailed, "error: --step 99 is more than the model's 12 heads"),
    ("opt-model-family", lambda c, cap: cli(c, cap, "score", "--model", c.write("config.json", '{"model_type": '
                                                                               '"t5"}').parent), CliFailed,
     "error: unsupported model family 't5' ({d}); supported: bert, camembert, distilbert, electra, roberta, "
     "xlm-roberta"),
    ("data-task-not-run", lambda c, cap: cli(c, cap, "score", "--model", c.model, "--task", "pos", "--data",
                                             "name=" + str(c.write("n.conll", "a\tO\n")), *RUN), CliFailed,
     "error: --data name={d}/n.conll: this command does not use task 'name' (it runs pos), so that source would be "
     "ignored"),
    ("data-twice", lambda c, cap: cli(c, cap, "score", "--model", c.model, "--task", "pos",
                                      "--data", "pos=" + str(c.write("a.conll", "a\tNOUN\n")),
                                      "--data", "pos=" + str(c.write("b.conll", "b\tNOUN\n")), *RUN), CliFailed,
     "error: --data names pos twice (pos={d}/a.conll and pos={d}/b.conll); give one source per task (or task/lang)"),
    ("data-twice-plain", lambda c, cap: cli(c, cap, "score", "--model", c.model, "--task", "pos",
                                            "--data", c.write("a.conll", "a\tNOUN\n"),
                                            "--data", "pos=" + str(c.write("b.conll", "b\tNOUN\n")), *RUN), CliFailed,
     "error: --data names pos twice ({d}/a.conll and pos={d}/b.conll); give one source per task (or task/lang)"),
    ("data-columns-without-data", lambda c, cap: cli(c, cap, "score", "--model", c.model, "--columns", "w,t",
                                                     *RUN), CliFailed,
     "error: --columns describes the data of --data, and no --data was given"),
    ("study-data-task-not-in-plan", lambda c, cap: cli(c, cap, "study", "demo", "--data",
                                                       "polarity-en=" + str(c.write("p.csv", "label,text\n1,a\n"))),
     CliFailed, "error: --data polarity-en={d}/p.csv: this command does not use task 'polarity-en' (it runs pos, "
                "name), so that source would be ignored"),
    # --- sweeps ---------------------------------------------------------------------------------------------------
    ("sweep-nothing-listening", lambda c, cap: cli(c, cap, "sweep", _sweep_spec(c), "--address",
                                                   f"127.0.0.1:{_free_port()}"), CliFailed,
     "error: no Ray cluster at 127.0.0.1:...: Connection refused (start one there with 'ray start "
     "--head', or leave --address out for a local cluster)"),
    ("sweep-address-not-host-port", lambda c, cap: cli(c, cap, "sweep", _sweep_spec(c), "--address", "myhost"),
     CliFailed, "error: --address 'myhost': expected HOST:PORT (e.g. 10.0.0.5:6379, from 'ray start --head')"),
    ("sweep-huge-grid", lambda c, cap: cli(c, cap, "sweep", _sweep_spec(c, seeds=list(range(1_000_000))),
                                           "--dry-run"), CliFailed,
     "error: {d}/sweep.json: the grid has 1,000,000 points (1 models x 1 data x 1000000 seeds); a sweep has at "
     "most 1,000: split it into several specs"),
    # --- plan files -----------------------------------------------------------------------------------------------
    ("plan-bad-json", lambda c, _: _plan(c, '{"name": "p",}'), ValueError,
     "{d}/plan.json: not valid JSON (line 1 column 14: Expecting property name enclosed in double quotes); "
     "expected a study plan (JSON)"),
    ("plan-not-object", lambda c, _: _plan(c, "[]"), ValueError,
     "{d}/plan.json: a plan is a JSON object of fields, got list"),
    ("plan-unknown-field", lambda c, _: _plan(c, {**PLAN, "epochs": 3}), ValueError,
     "{d}/plan.json: unknown plan fields ['epochs']; known: ['affinity', 'curve_step', 'description', "
     "'eval_sentences', 'finetuned', 'gradts', 'langs', 'method', 'model', 'name', 'prune_levels', 'random_seeds', "
     "'ranking_seeds', 'refinetune', 'score_sentences', 'settings', 'source_langs', 'sources', 'strategies', "
     "'target_curve_step', 'tasks', 'train']"),
    ("plan-missing-field", lambda c, _: _plan(c, {"name": "p"}), ValueError,
     "{d}/plan.json: missing plan field(s) ['description']"),
    ("plan-tasks-not-list", lambda c, _: _plan(c, {**PLAN, "tasks": "pos"}), ValueError,
     "{d}/plan.json: plan 'p': tasks must be a non-empty list of names, got 'pos'"),
    ("plan-unknown-task", lambda c, _: _plan(c, {**PLAN, "tasks": ["pos", "nope"]}), ValueError,
     "{d}/plan.json: unknown task 'nope'; known: ..."),
    ("plan-train-option", lambda c, _: _plan(c, {**PLAN, "train": {"epochs": 1, "warmup": 10}}), ValueError,
     "{d}/plan.json: plan 'p': train options ['warmup'] are not fine-tuning options; known: ..."),
    ("plan-zero-sentences", lambda c, _: _plan(c, {**PLAN, "eval_sentences": 0}), ValueError,
     "{d}/plan.json: plan 'p': eval_sentences must be a whole number of at least 1, got 0"),
    ("plan-name-traversal", lambda c, _: _plan(c, {**PLAN, "name": "../../etc/cron.d/x"}), ValueError,
     "{d}/plan.json: bad plan name '../../etc/cron.d/x': use letters, digits, '.', '_', '+' or '-' (no path "
     "separators, no '..', not starting with a dot, at most 128 characters)"),
    ("gradts-plan-missing", lambda c, _: GradTSPlan.from_file(c.write("g.json", '{"name": "g"}')), ValueError,
     "{d}/g.json: missing GradTS plan field(s) ['units', 'primaries', 'description']"),
    # --- cache ----------------------------------------------------------------------------------------------------
    ("cache-truncated-array", lambda c, _: _corrupt_entry(c, "truncate"), "log",
     "cache entry {d}/runs/score/... is corrupt (raw.npy has 40 bytes, 224 were written); it will be recomputed"),
    ("cache-config-mismatch", lambda c, _: _corrupt_entry(c, "config"), "log",
     "cache entry {d}/runs/score/... is corrupt (config.json does not match the configuration this key stands "
     "for); it will be recomputed"),
    ("cache-path-is-a-file", lambda c, cap: cli(c, cap, "ls", "--cache", c.write("cachefile", "x")), CliFailed,
     "error: the cache folder {d}/cachefile cannot be used: {d}/cachefile is a file, not a folder"),
    # --- output paths and names ------------------------------------------------------------------------------------
    ("prune-out-foreign-folder", lambda c, cap: cli(c, cap, "prune", "--model", c.model, "--k", "2", "--out",
                                                    _foreign_folder(c), "--force", *RUN), CliFailed,
     "error: {d}/mine is not empty and is not a headprune output (no headprune_pruned.json); nothing was "
     "touched. Choose an empty or new folder."),
    ("prune-out-is-a-file", lambda c, cap: cli(c, cap, "prune", "--model", c.model, "--k", "2", "--out",
                                               c.write("notes.txt", "mine"), *RUN), CliFailed,
     "error: {d}/notes.txt exists and is not a folder; nothing was touched. Choose a new folder."),
    ("export-over-user-file", lambda c, cap: cli(c, cap, "export", "abc", "--out", c.write("results.csv", "a,b"),
                                                 "--force"), CliFailed,
     "error: {d}/results.csv exists and is not a headprune export; nothing was touched. Choose a new file name."),
    ("name-traversal", lambda c, _: check_name("../../x", "plan name"), ValueError,
     "bad plan name '../../x': use letters, digits, '.', '_', '+' or '-' (no path separators, no '..', not "
     "starting with a dot, at most 128 characters)"),
    ("name-absolute", lambda c, _: check_name("/etc/passwd", "corpus name"), ValueError,
     "bad corpus name '/etc/passwd': use letters, digits, '.', '_', '+' or '-' (no path separators, no '..', "
     "not starting with a dot, at most 128 characters)"),
    ("name-hidden", lambda c, _: check_name(".bashrc"), ValueError,
     "bad name '.bashrc': use letters, digits, '.', '_', '+' or '-' (no path separators, no '..', not starting "
     "with a dot, at most 128 characters)"),
]


def test_the_table_is_big_enough():
    assert len(ROWS) >= 40 and len({r[0] for r in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_bad_input_gets_its_exact_error(row, tiny_cache, tmp_path, monkeypatch, capsys, caplog):
    name, action, expected_class, expected = row
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    monkeypatch.chdir(tmp_path)
    ctx = Ctx(tmp_path, model, root)
    message = expected.replace("{d}", str(tmp_path)).replace("{{", "{").replace("}}", "}")
    if expected_class == "log":
        with caplog.at_level("WARNING"):
            action(ctx, capsys)
        logged = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert any(_matches(m, message) for m in logged), logged
        return
    before = {e.key for e in Store(root / "runs").entries()}
    with pytest.raises(Exception) as info:
        action(ctx, capsys)
    assert type(info.value) is expected_class, f"{type(info.value).__name__}: {info.value}"
    assert _matches(str(info.value), message), str(info.value)
    assert {e.key for e in Store(root / "runs").entries()} == before, "work was done before the error"


def _matches(actual: str, expected: str) -> bool:
    if "..." in expected:
        head, _, tail = expected.partition("...")
        return actual.startswith(head) and actual.endswith(tail)
    return actual == expected


def test_foreign_output_folder_is_untouched(tiny_cache, tmp_path, monkeypatch, capsys):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    ctx = Ctx(tmp_path, model, root)
    out = _foreign_folder(ctx)
    with pytest.raises(CliFailed):
        cli(ctx, capsys, "prune", "--model", model, "--k", "2", "--out", out, "--force", *RUN)
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"] and (out / "thesis.tex").read_text() == \
        "my own work"


def test_safe_download_names():
    assert safe_filename("gradts_../../etc/passwd_kv.csv") == "gradts_.._.._etc_passwd_kv.csv"
    assert "/" not in safe_filename("a/b\\c") and safe_filename("...") == "download"


@pytest.mark.parametrize("ending", ["\r\n", "\r", "\n"], ids=["crlf", "cr", "lf"])
@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["no-bom", "bom"])
def test_odd_but_valid_files_read_like_clean_ones(tmp_path, ending, bom):
    conll = ending.join(["-DOCSTART-\tO", "", "The\tDET", "cat\tNOUN", "", "Dogs\tNOUN", "run\tVERB", ""])
    path = tmp_path / "a.conll"
    path.write_bytes(bom + conll.encode("utf-8"))
    records = read_file(path)
    assert [(r.tokens, r.tags) for r in records] == [(["The", "cat"], ["DET", "NOUN"]),
                                                      (["Dogs", "run"], ["NOUN", "VERB"])]
    assert records[1].lines == [6, 7]
    csv_path = tmp_path / "a.csv"
    csv_path.write_bytes(bom + ending.join(["label,text", 'positive,"good, very"', "negative,bad", ""]).encode())
    assert [(r.label, r.text) for r in read_file(csv_path)] == [("positive", "good, very"), ("negative", "bad")]
