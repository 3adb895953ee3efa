"""Hub loaders on local parquet copies laid out like the real Hub datasets (same columns and features)."""

from __future__ import annotations

import datasets
import pytest
from datasets import ClassLabel, Features, List, Value

from headprune_core.data import NAME_TAGS, UNIVERSAL_TAGS, load_task
from headprune_core.data.hub import GLUE_VALIDATION_MAX, HubUnavailable
from tests.helpers.hub_world import NLI, UD_UPOS, WIKIANN_TAGS


def write_splits(tmp_path, name, features, rows_by_split):
    files = {}
    for split, rows in rows_by_split.items():
        ds = datasets.Dataset.from_dict({k: [r[k] for r in rows] for k in features}, features=features)
        path = tmp_path / f"{name}-{split}.parquet"
        ds.to_parquet(str(path))
        files[split] = path
    return files


def test_wikiann(tmp_path):
    feats = Features({"tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=WIKIANN_TAGS)),
                      "langs": List(Value("string")), "spans": List(Value("string"))})
    row = {"tokens": ["Angela", "Merkel", "in", "Berlin"], "ner_tags": [1, 2, 0, 5], "langs": ["de"] * 4,
           "spans": ["PER: Angela Merkel", "LOC: Berlin"]}
    files = write_splits(tmp_path, "wikiann", feats, {"validation": [row], "test": [row], "train": [row, row]})
    data = load_task("ner", "de", source="hub", data_files=files)
    assert data.kind == "token" and data.labels == WIKIANN_TAGS
    assert list(data.dataset) == ["train", "validation", "test"]
    assert data.dataset["train"].column_names == ["tokens", "tags"]
    assert data.dataset["train"][0]["tags"] == [1, 2, 0, 5]
    assert data.meta["hub_path"] == "unimelb-nlp/wikiann" and data.meta["hub_config"] == "de"


def test_universal_dependencies_pos_and_name(tmp_path):
    feats = Features({"idx": Value("string"), "text": Value("string"), "tokens": List(Value("string")),
                      "upos": List(ClassLabel(names=UD_UPOS)), "xpos": List(Value("string"))})
    # "du" is a multi-word token (upos "_") followed by its parts "de" + "le"
    words = ["Marie", "Curie", "parle", "du", "de", "le", "prix", "."]
    upos = ["PROPN", "PROPN", "VERB", "_", "ADP", "DET", "NOUN", "PUNCT"]
    row = {"idx": "s1", "text": "Marie Curie parle du prix.", "tokens": words,
           "upos": [UD_UPOS.index(u) for u in upos], "xpos": ["_"] * 8}
    files = write_splits(tmp_path, "ud", feats, {"train": [row], "validation": [row], "test": [row]})
    pos = load_task("pos", "fr", source="hub", data_files=files)
    assert pos.labels == list(UNIVERSAL_TAGS)
    r = pos.dataset["test"][0]
    assert r["tokens"] == ["Marie", "Curie", "parle", "de", "le", "prix", "."]
    assert [pos.labels[t] for t in r["tags"]] == ["NOUN", "NOUN", "VERB", "ADP", "DET", "NOUN", "PUNCT"]
    assert pos.meta["hub_config"] == "fr_gsd"
    name = load_task("name", "fr", source="hub", data_files=files, treebank="fr_sequoia")
    assert [NAME_TAGS[t] for t in name.dataset["train"][0]["tags"]] == ["B-NAME", "I-NAME"] + ["O"] * 5
    assert name.meta["hub_config"] == "fr_sequoia"
    upos_task = load_task("upos", "fr", source="hub", data_files=files)  # UD's own 17 tags, unmapped (Ma et al.)
    assert len(upos_task.labels) == 17 and upos_task.labels[0] == "ADJ"
    assert [upos_task.labels[t] for t in upos_task.dataset["test"][0]["tags"]] == [
        "PROPN", "PROPN", "VERB", "ADP", "DET", "NOUN", "PUNCT"]


def test_xnli_pairs(tmp_path):
    feats = Features({"premise": Value("string"), "hypothesis": Value("string"),
                      "label": ClassLabel(names=NLI)})
    rows = [{"premise": "Il pleut.", "hypothesis": "Il fait beau.", "label": 2},
            {"premise": "Il pleut.", "hypothesis": "Le sol est mouillé.", "label": 0}]
    files = write_splits(tmp_path, "xnli", feats, {"train": rows, "validation": rows, "test": rows})
    data = load_task("xnli", "fr", source="hub", data_files=files)
    assert data.kind == "sentence" and data.labels == NLI and data.is_pair
    assert data.dataset["test"][0] == {"text": "Il pleut.", "text_pair": "Il fait beau.", "label": 2}


def test_pawsx_pairs(tmp_path):
    feats = Features({"id": Value("int32"), "sentence1": Value("string"), "sentence2": Value("string"),
                      "label": ClassLabel(names=["0", "1"])})
    rows = [{"id": 1, "sentence1": "a b", "sentence2": "b a", "label": 0}]
    files = write_splits(tmp_path, "pawsx", feats, {"train": rows, "validation": rows, "test": rows})
    data = load_task("paws-x", "de", source="hub", data_files=files)
    assert data.labels == ["0", "1"] and data.dataset["train"][0]["text_pair"] == "b a"


def test_glue_single_and_pair_splits(tmp_path):
    feats = Features({"sentence": Value("string"), "label": ClassLabel(names=["negative", "positive"]),
                      "idx": Value("int32")})
    train = [{"sentence": f"s{i}", "label": i % 2, "idx": i} for i in range(30)]
    val = [{"sentence": "v", "label": 1, "idx": 0}]
    test = [{"sentence": "t", "label": -1, "idx": 0}]  # GLUE hides test labels
    files = write_splits(tmp_path, "sst2", feats, {"train": train, "validation": val, "test": test})
    data = load_task("sst2", "en", source="hub", data_files=files)
    assert data.labels == ["negative", "positive"] and not data.is_pair
    counts = {s: len(d) for s, d in data.dataset.items()}
    assert counts == {"train": 27, "validation": 3, "test": 1}  # test = official validation
    assert data.dataset["test"][0]["text"] == "v"
    assert not set(data.dataset["train"]["text"]) & set(data.dataset["validation"]["text"])
    assert GLUE_VALIDATION_MAX == 5000

    feats = Features({"premise": Value("string"), "hypothesis": Value("string"),
                      "label": ClassLabel(names=NLI), "idx": Value("int32")})
    rows = [{"premise": f"p{i}", "hypothesis": "h", "label": i % 3, "idx": i} for i in range(10)]
    files = write_splits(tmp_path, "mnli", feats, {"train": rows, "validation_matched": rows[:2],
                                                    "validation_mismatched": rows[:3],
                                                    "test_matched": [{**rows[0], "label": -1}]})
    data = load_task("mnli", "en", source="hub", data_files=files)
    assert data.is_pair and len(data.dataset["test"]) == 2 and len(data.dataset["validation"]) == 1


def test_offline_hub_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def offline(*a, **k):
        raise ConnectionError("Couldn't reach 'unimelb-nlp/wikiann' on the Hub (OfflineModeIsEnabled)")
    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(HubUnavailable, match=r"Hub could not be reached.*`hf download --repo-type dataset "
                       r"unimelb-nlp/wikiann --local-dir MIRROR/unimelb-nlp/wikiann`.*HEADPRUNE_HUB_MIRROR=MIRROR.*"
                       r"hub:/path/to/wikiann:de.*embedded tasks work: pos, name"):
        load_task("ner", "de", source="hub")


def _ud_rows():
    feats = Features({"idx": Value("string"), "text": Value("string"), "tokens": List(Value("string")),
                      "upos": List(ClassLabel(names=UD_UPOS)), "xpos": List(Value("string"))})
    row = {"idx": "s1", "text": "Marie parle.", "tokens": ["Marie", "parle", "."],
           "upos": [UD_UPOS.index(u) for u in ("PROPN", "VERB", "PUNCT")], "xpos": ["_"] * 3}
    return datasets.Dataset.from_dict({k: [row[k]] for k in feats}, features=feats)


def test_universal_dependencies_is_read_from_the_hubs_parquet_export(monkeypatch):
    """UD is a loading script on the Hub's main branch, which datasets 4+ refuses: it is read from the parquet
    export branch, one folder per treebank (data_dir), with the same converter."""
    from headprune_core.data.hub import PARQUET_EXPORT, hub_spec
    spec = hub_spec("pos", "fr")
    assert (spec.path, spec.config, spec.revision, spec.by_dir) == (
        "universal-dependencies/universal_dependencies", "fr_gsd", PARQUET_EXPORT, True)
    asked = {}

    def load(path, name=None, **kw):
        asked.update(path=path, name=name, **kw)
        return datasets.DatasetDict({s: _ud_rows() for s in ("train", "validation", "test")})
    monkeypatch.setattr(datasets, "load_dataset", load)
    data = load_task("pos", "fr", source="hub")
    assert asked == {"path": "universal-dependencies/universal_dependencies", "name": None, "data_dir": "fr_gsd",
                     "revision": PARQUET_EXPORT}
    assert data.meta["hub_revision"] == PARQUET_EXPORT and data.dataset["test"][0]["tokens"] == ["Marie", "parle", "."]
    assert hub_spec("ner", "de").revision is None  # WikiANN is parquet on main


def test_a_mirror_folder_stands_in_for_the_hub(tmp_path, monkeypatch):
    """HEADPRUNE_HUB_MIRROR: copies laid out as `hf download` writes them (a repo with its README's configs, or a
    parquet export) are read instead of the Hub, through the same converters; a data set not in it is asked of the
    Hub, and the error names the mirror."""
    from tests.helpers.hub_copy import write_hub_repo, write_parquet_export
    feats = Features({"tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=WIKIANN_TAGS)),
                      "langs": List(Value("string")), "spans": List(Value("string"))})
    row = {"tokens": ["Angela", "Merkel"], "ner_tags": [1, 2], "langs": ["de"] * 2, "spans": ["PER: Angela Merkel"]}
    ds = datasets.Dataset.from_dict({k: [row[k]] for k in feats}, features=feats)
    write_hub_repo(tmp_path / "mirror" / "unimelb-nlp" / "wikiann", {"de": {s: ds for s in ("train", "validation",
                                                                                             "test")}})
    write_parquet_export(tmp_path / "mirror" / "universal-dependencies" / "universal_dependencies",
                         {"fr_gsd": {s: _ud_rows() for s in ("train", "validation", "test")}})
    monkeypatch.setenv("HEADPRUNE_HUB_MIRROR", str(tmp_path / "mirror"))
    ner = load_task("ner", "de", source="hub")
    assert ner.dataset["train"][0]["tags"] == [1, 2] and ner.meta["hub_path"] == "unimelb-nlp/wikiann"
    assert ner.meta["local_copy"] == str(tmp_path / "mirror" / "unimelb-nlp" / "wikiann")
    pos = load_task("pos", "fr", source="hub")
    assert [pos.labels[t] for t in pos.dataset["validation"][0]["tags"]] == ["NOUN", "VERB", "PUNCT"]

    def offline(*a, **k):
        raise ConnectionError("Couldn't reach 'facebook/xnli' on the Hub (OfflineModeIsEnabled)")
    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(HubUnavailable, match=r"the mirror .*mirror has no facebook/xnli"):
        load_task("xnli", "fr", source="hub")


def test_hub_source_errors():
    with pytest.raises(KeyError, match="task 'emotion-pt' has no Hub source"):
        load_task("emotion-pt", "pt", source="hub")
    with pytest.raises(KeyError, match="unknown language 'xx' for task 'xnli'; known: ar, bg"):
        load_task("xnli", "xx", source="hub")
    with pytest.raises(KeyError, match="no default UD treebank for 'xx'"):
        load_task("pos", "xx", source="hub")
