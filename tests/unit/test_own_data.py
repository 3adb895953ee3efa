"""A user's own data and models: data references in every format, a Hub data set laid out as the Hub serves
it, registered corpora, the CLI's --data / data add / tasks, study plans with sources, and a fine-tuned
checkpoint scored and pruned with its own classifier."""

from __future__ import annotations

import json

import datasets
import pytest
import torch
from datasets import ClassLabel, Features, List, Value

from headprune_core.cli.main import main
from headprune_core.data import CorpusError, get_task, list_tasks, load_task
from headprune_core.data.refs import DataRef, load_ref, parse_ref, parse_sources
from headprune_core.data.registry import registered
from headprune_core.data.user import AlreadyRegistered, register, remove
from headprune_core.plans.plan import StudyPlan, run_plan
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study
from tests.helpers.hub_copy import write_hub_repo
from tests.helpers.own_data import SIZES, text_files, token_files, token_sentences, write_checkpoint

FAST = ["--max-train", "60", "--epochs", "1", "--batch-size", "16"]


def test_references_parse_and_print_back(tmp_path):
    assert parse_ref("embedded") == DataRef() and str(parse_ref("embedded")) == "embedded"
    hub = parse_ref("hub:wikiann:sw")
    assert (hub.kind, hub.name, hub.config, str(hub)) == ("hub", "wikiann", "sw", "hub:wikiann:sw")
    assert parse_ref("hub").name == "" and str(parse_ref("hub")) == "hub"
    local = parse_ref("hub:/data/copy:de")
    assert (local.name, local.config) == ("/data/copy", "de")
    three = parse_ref("a.conll, b.conll ,c.conll", base=tmp_path)
    assert three.files == tuple(str(tmp_path / n) for n in ("a.conll", "b.conll", "c.conll"))
    obj = parse_ref({"data": "t.parquet", "columns": ["words", "labels"]})
    assert obj.columns == ("words", "labels") and parse_ref(obj.to_json()) == obj
    with pytest.raises(ValueError, match="one file .* or three"):
        parse_ref("a.conll,b.conll")
    with pytest.raises(ValueError, match="columns: give 2"):
        parse_ref("t.parquet", columns="a")
    with pytest.raises(ValueError, match="plan: a data source key is 'task' or 'task/lang', got 'pos/x/y'"):
        parse_sources({"pos/x/y": "embedded"}, where="plan")


@pytest.mark.parametrize("fmt", ["conll", "conllu", "jsonl", "parquet"])
def test_token_data_in_every_format_one_file_or_three(tmp_path, fmt):
    three = load_ref(parse_ref(",".join(map(str, token_files(tmp_path / "3", fmt)))), "mytags", "xx")
    assert {s: len(d) for s, d in three.dataset.items()} == SIZES
    first = three.dataset["train"][0]
    words, tags = token_sentences(SIZES["train"], seed=0)[0]
    assert first["tokens"] == words and [three.labels[t] for t in first["tags"]] == tags
    one = load_ref(parse_ref(str(token_files(tmp_path / "1", fmt, three=False)[0])), "mytags", "xx")
    n = sum(SIZES.values())
    assert sum(len(d) for d in one.dataset.values()) == n
    assert len(one.dataset["test"]) == len(one.dataset["validation"]) == round(0.1 * n)  # seeded 80/10/10
    again = load_ref(parse_ref(str(token_files(tmp_path / "1", fmt, three=False)[0])), "mytags", "xx")
    assert again.dataset["test"]["tokens"] == one.dataset["test"]["tokens"]  # the split is seeded


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_sentence_data_in_every_format(tmp_path, fmt):
    data = load_ref(parse_ref(",".join(map(str, text_files(tmp_path, fmt)))), "hasname", "en")
    assert data.kind == "sentence" and data.labels == ["name", "none"]
    assert {s: len(d) for s, d in data.dataset.items()} == SIZES


def test_named_columns_and_registered_task_labels(tmp_path):
    path = tmp_path / "t.parquet"
    datasets.Dataset.from_dict({"id": [str(i) for i in range(20)], "words": [["x", "y"]] * 20,
                                "labels": [["NOUN", "VERB"]] * 20, "lemma": [["x", "y"]] * 20}).to_parquet(str(path))
    data = load_ref(parse_ref(str(path), columns="words,labels"), "pos", "sw")
    assert data.labels[:3] == list(get_task("pos").labels)[:3]  # a built-in task keeps its label list
    with pytest.raises(CorpusError, match=r"t.parquet: no column 'tags'; the table has: id, words"):
        load_ref(parse_ref(str(path), columns="words,tags"), "x", "sw")
    bad = tmp_path / "bad.conll"
    bad.write_text("a\tNOUN\nb\tNOPE\n\n" + "a\tNOUN\n\n" * 30)
    with pytest.raises(CorpusError, match=r"bad.conll:2: tag 'NOPE' is not in the label list"):
        load_ref(parse_ref(str(bad)), "pos", "xx")


def _wikiann_copy(root, lang="sw"):
    feats = Features({"tokens": List(Value("string")),
                      "ner_tags": List(ClassLabel(names=["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"])),
                      "langs": List(Value("string")), "spans": List(Value("string"))})

    def rows(n, seed):
        out = {"tokens": [], "ner_tags": [], "langs": [], "spans": []}
        for words, _tags in token_sentences(n, seed=seed):
            out["tokens"].append(words)
            out["ner_tags"].append([1 if w[0].isupper() and i else 0 for i, w in enumerate(words)])
            out["langs"].append([lang] * len(words))
            out["spans"].append([])
        return datasets.Dataset.from_dict(out, features=feats)
    return write_hub_repo(root, {lang: {"train": rows(60, 0), "validation": rows(12, 1), "test": rows(12, 2)}})


def test_hub_dataset_laid_out_as_the_hub_serves_it(tmp_path):
    repo = _wikiann_copy(tmp_path / "wikiann")
    data = load_ref(parse_ref(f"hub:{repo}:sw"), "ner", "sw")  # the ner converter, on a local copy
    assert data.labels[:3] == ["O", "B-PER", "I-PER"] and len(data.dataset["train"]) == 60
    generic = load_ref(parse_ref(f"hub:{repo}:sw"), "people", "sw")  # any other task name: found by columns
    assert generic.labels == ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]  # ClassLabel names
    assert generic.dataset["test"]["tokens"] == data.dataset["test"]["tokens"]
    only_train = write_hub_repo(tmp_path / "mine", {"default": {"train": datasets.Dataset.from_dict(
        {"sentence": [f"s{i}" for i in range(50)], "label": [i % 2 for i in range(50)]})}})
    carved = load_ref(parse_ref(f"hub:{only_train}:default"), "mine", "en")
    assert {s: len(d) for s, d in carved.dataset.items()} == {"train": 40, "validation": 5, "test": 5}
    assert carved.meta["carved"] == ["validation", "test"]


def test_offline_hub_name_fails_clearly():
    from headprune_core.data.hub import HubUnavailable
    with pytest.raises(HubUnavailable, match="could not load someone/nothing-here .* from the Hugging Face Hub"):
        load_ref(parse_ref("hub:someone/nothing-here"), "mine", "en")


def test_register_validate_and_never_touch_what_is_registered(tiny_cache, tmp_path):
    files = token_files(tmp_path / "c", "conll")
    meta = register("mytags", "sw", files)
    assert meta["counts"] == SIZES and meta["kind"] == "token" and len(meta["fingerprint"]) == 16
    assert "mytags" in [t.name for t in list_tasks()] and get_task("mytags").languages == ("sw",)
    data = load_task("mytags", "sw")
    assert data.meta["source_kind"] == "registered" and len(data.dataset["test"]) == SIZES["test"]
    with pytest.raises(AlreadyRegistered):
        register("mytags", "sw", files)
    bad = tmp_path / "bad.conll"
    bad.write_text("ok\tNOUN\n\nbroken\n")
    before = (tiny_cache[0] / "data" / "mytags" / "sw" / "train.jsonl").read_bytes()
    with pytest.raises(CorpusError, match=r"bad.conll:3: expected 'token<TAB>tag'"):
        register("mytags", "sw", [bad], replace=True)
    assert (tiny_cache[0] / "data" / "mytags" / "sw" / "train.jsonl").read_bytes() == before
    assert not [p for p in (tiny_cache[0] / "data" / "mytags").iterdir() if p.name.startswith(".tmp")]
    with pytest.raises(ValueError, match="'pos' is a built-in task"):
        register("pos", "sw", files)
    with pytest.raises(ValueError, match="language code 'Swahili'"):
        register("x", "Swahili", files)
    remove("mytags")
    assert "mytags" not in registered()


def test_a_registered_corpus_reads_the_same_in_chunks(tiny_cache, tmp_path, monkeypatch):
    """Read 7 records at a time (a big corpus: 20,000), a registered corpus gives the same rows and labels as in
    one piece, and a bad line still names its file and line."""
    import headprune_core.data.loading as loading
    register("chunky", "sw", token_files(tmp_path / "c", "conll"))
    whole = load_task("chunky", "sw")
    monkeypatch.setattr(loading, "CHUNK", 7)
    parts = load_task("chunky", "sw")
    assert parts.labels == whole.labels and parts.kind == whole.kind
    for split in ("train", "validation", "test"):
        assert parts.dataset[split].to_list() == whole.dataset[split].to_list() and len(parts.dataset[split]) > 7
    folder = tiny_cache[0] / "data" / "chunky" / "sw"
    lines = (folder / "test.jsonl").read_text().splitlines()
    (folder / "test.jsonl").write_text("\n".join(lines[:9] + ['{"tokens": ["a"], "tags": ["NOPE"]}'] + lines[9:]))
    with pytest.raises(CorpusError, match=r"test.jsonl:10: tag 'NOPE' is not in the label list"):
        load_task("chunky", "sw")
    remove("chunky")


def test_two_registrations_of_one_name_at_once_one_wins(tiny_cache, tmp_path, monkeypatch):
    """Both read their files before either writes (a barrier holds them there): under the per-name lock the
    second sees the first's corpus and is refused, so nothing is silently replaced."""
    import threading

    import headprune_core.data.user as user
    read = user.read_splits
    barrier = threading.Barrier(2, timeout=30)

    def read_then_wait(*args, **kwargs):
        out = read(*args, **kwargs)
        barrier.wait()
        return out

    monkeypatch.setattr(user, "read_splits", read_then_wait)
    files = {who: token_files(tmp_path / who, "conll") for who in ("a", "b")}
    outcome: dict[str, object] = {}

    def add(who):
        try:
            outcome[who] = register("raced", "sw", files[who], description=f"from {who}")["description"]
        except AlreadyRegistered as err:
            outcome[who] = err

    threads = [threading.Thread(target=add, args=(who,)) for who in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [who for who, o in outcome.items() if isinstance(o, str)]
    lost = [o for o in outcome.values() if isinstance(o, AlreadyRegistered)]
    assert len(won) == 1 and len(lost) == 1, outcome
    assert "was registered while this one was read" in str(lost[0])
    assert registered()["raced"]["sw"]["description"] == f"from {won[0]}"
    remove("raced")


def test_study_sources_are_per_study(tiny_cache, tmp_path):
    root, model = tiny_cache
    files = ",".join(map(str, token_files(tmp_path / "own", "conll")))
    base = Study(model, store=Store(root / "runs"), device="cpu", progress=False)
    mine = base.with_sources({"pos/xx": files})
    assert str(mine.source_for("pos", "xx")) == files and str(base.source_for("pos", "xx")) == "embedded"
    assert mine.data("pos", "xx").meta["ref"] == files
    with pytest.raises(KeyError, match="unknown language 'xx'"):
        base.data("pos", "xx")
    # the data's content is in the keys: embedded en and the same task read from files never share an entry
    own_en = base.with_sources({"pos": files})
    assert own_en.finetune_config("pos", "en").key() != base.finetune_config("pos", "en").key()


def _cli(capsys, *args) -> str:
    code = main(list(args))
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def test_three_conll_files_from_the_cli(tiny_cache, capsys, tmp_path):
    """The issue's user: three CoNLL files, no Python: heatmap, pruning curve and a pruned model."""
    _, model = tiny_cache
    files = ",".join(map(str, token_files(tmp_path / "own", "conll", lang="de")))
    run = ["--model", model, "--task", "mytags", "--lang", "de", "--data", files, *FAST]
    out = _cli(capsys, "score", *run, "--sentences", "20")
    assert "importance (gate_grad, layer_sum, min-max) of mytags/de" in out
    assert len([l for l in out.splitlines() if l.strip()[:1].isdigit()]) == 3  # one row per layer
    out = _cli(capsys, "curve", *run, "--sentences", "20", "--step", "4")
    assert "accuracy vs heads pruned (importance) on mytags/de" in out and "k= 12" in out
    out = _cli(capsys, "prune", *run, "--k", "3", "--out", str(tmp_path / "pruned"))
    meta = json.loads((tmp_path / "pruned" / "headprune_pruned.json").read_text())
    assert "3 heads removed" in out and meta["data"] == {"mytags": files}


def test_cli_data_add_tasks_and_plans(tiny_cache, capsys, tmp_path):
    root, model = tiny_cache
    files = token_files(tmp_path / "own", "conllu")
    out = _cli(capsys, "data", "add", "ownpos", *map(str, files), "--lang", "sw", "--model", model)
    assert "registered ownpos/sw: token task" in out and "sentences truncated" in out
    assert "ownpos" in _cli(capsys, "tasks").split("your registered corpora")[1]
    assert "ownpos" in _cli(capsys, "data", "ls")
    out = _cli(capsys, "score", "--model", model, "--task", "ownpos", "--lang", "sw", *FAST, "--sentences", "10")
    assert "of ownpos/sw" in out  # a registered corpus is a task: no --data, and sw is its training language
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"tokens": ["a"], "tags": ["NOUN"]}\n{"tokens": ["a", "b"], "tags": ["NOUN"]}\n' * 2)
    assert main(["data", "add", "ownpos", str(bad), "--lang", "sw", "--force"]) == 2
    assert "bad.jsonl:2: 'tokens' and 'tags' must be lists of equal length" in capsys.readouterr().err
    assert registered()["ownpos"]["sw"]["counts"] == SIZES  # untouched
    # a plan file naming its data sources (relative to the plan file)
    (tmp_path / "plan").mkdir()
    token_files(tmp_path / "plan", "jsonl")
    plan = {"name": "own-plan", "description": "own data", "model": model, "tasks": ["mine"], "langs": ["xx"],
            "source_langs": ["xx"], "strategies": ["importance"], "curve_step": 4, "score_sentences": 10,
            "eval_sentences": 10, "random_seeds": [0],
            "train": {"max_train_sentences": 40, "epochs": 1.0, "batch_size": 16},
            "sources": {"mine": "train.jsonl,validation.jsonl,test.jsonl"}}
    path = tmp_path / "plan" / "own-plan.json"
    path.write_text(json.dumps(plan))
    out = _cli(capsys, "study", str(path))
    assert "computed" in out and "mine   xx: accuracy" in out
    loaded = StudyPlan.from_file(path)
    assert loaded.sources["mine"] == ",".join(str(tmp_path / "plan" / f"{s}.jsonl")
                                              for s in ("train", "validation", "test"))
    res = run_plan(loaded.study(store=Store(root / "runs"), device="cpu", progress=False), loaded)
    assert res["computed"] == 0  # the same keys: the CLI's run is reused
    remove("ownpos")


def test_unknown_task_without_data_and_missing_files(tiny_cache, capsys, tmp_path):
    _, model = tiny_cache
    assert main(["score", "--model", model, "--task", "mine", "--lang", "xx"]) == 2
    assert "unknown task 'mine'" in capsys.readouterr().err
    assert main(["score", "--model", model, "--task", "mine", "--lang", "xx", "--data",
                 str(tmp_path / "no.conll")]) == 2
    assert f"no such data file: {tmp_path / 'no.conll'}" in capsys.readouterr().err
    assert main(["finetune", "--finetuned", model]) == 2
    assert "the checkpoint is fine-tuned already" in capsys.readouterr().err


def test_finetuned_checkpoint_is_used_as_is(tiny_cache, capsys, tmp_path):
    """A user's fine-tuned token classifier: no training; its logits, predictions and metric are its own."""
    from transformers import AutoModelForTokenClassification

    root, model = tiny_cache
    labels = list(reversed(get_task("pos").labels))  # another label order than the corpus's
    ckpt = write_checkpoint(tmp_path / "ckpt", model, labels)
    study = Study(str(ckpt), store=Store(root / "runs"), device="cpu", progress=False, finetuned=True)
    ft = study.finetune_config("pos", "en", epochs=9.0, lr=1.0)  # training options cannot matter
    assert ft.from_checkpoint and ft == study.finetune_config("pos", "en")
    ours = study.finetuned(ft)
    hf = AutoModelForTokenClassification.from_pretrained(ckpt).eval()
    ec = study.eval_config(ft, "pos", "en", max_sentences=40)
    batch = study.eval_batches("pos", "en", "test", 40, max_length=ft.max_length)[0]
    with torch.no_grad():
        a = hf(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        b = ours(batch["input_ids"], batch["attention_mask"])
    assert torch.allclose(a, b, atol=1e-6)
    # the metric by hand from the HF model: first sub-word of each word, labels by name
    correct = total = 0
    for b_ in study.eval_batches("pos", "en", "test", 40, max_length=ft.max_length):
        with torch.no_grad():
            pred = hf(input_ids=b_["input_ids"], attention_mask=b_["attention_mask"]).logits.argmax(-1)
        keep = b_["labels"] != -100
        correct += int((pred[keep] == b_["labels"][keep]).sum())
        total += int(keep.sum())
    ev = study.evaluation(ec)
    assert ev["n"] == total and ev["score"] == pytest.approx(100 * correct / total)
    # the CLI: score and prune it without fine-tuning
    out = _cli(capsys, "score", "--finetuned", str(ckpt), "--task", "pos", "--lang", "de", "--sentences", "10")
    assert "of pos/de" in out
    out = _cli(capsys, "prune", "--finetuned", str(ckpt), "--task", "pos", "--lang", "en", "--k", "2",
               "--out", str(tmp_path / "p"))
    assert "2 heads removed" in out
    from headprune_core.encoders.pruned import load_pruned
    pruned = load_pruned(tmp_path / "p")
    assert int(sum(m.num_attention_heads for m in (l.attention.self for l in pruned.encoder.encoder.layer))) == 10


def test_finetuned_refuses_other_heads_and_unknown_labels(tiny_cache, tmp_path):
    from transformers import BertConfig, BertForSequenceClassification

    from headprune_core.encoders.models import ModelLoadError
    root, model = tiny_cache
    seq = tmp_path / "seq"
    BertForSequenceClassification(BertConfig.from_pretrained(model)).save_pretrained(seq)
    with pytest.raises(ModelLoadError, match="BertForSequenceClassification checkpoint; --finetuned takes"):
        Study(str(seq), finetuned=True)
    ckpt = write_checkpoint(tmp_path / "ckpt", model, ["NOUN", "VERB"])
    study = Study(str(ckpt), store=Store(root / "runs"), device="cpu", progress=False, finetuned=True)
    with pytest.raises(CorpusError, match=r"label\(s\) \[.*'ADJ'.*\] of the data are not labels of the model"):
        study.data("pos", "en")
