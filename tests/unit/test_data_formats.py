"""Local file formats and the local source of load_task: every format, every bad input names file and line."""

from __future__ import annotations

import json

import pytest

from headprune_core.data import UNIVERSAL_TAGS, load_task
from headprune_core.data.formats import CorpusError, read_conll, read_conllu, read_csv, read_file, read_jsonl

CONLL = "-DOCSTART-\tO\n\nEU\tB-ORG\nrejects\tO\nGerman\tB-MISC\n\nPeter\tB-PER\nBlackburn\tI-PER\n"
CONLLU = """# sent_id = 1
# text = Vou da praia.
1\tVou\tir\tVERB\t_\t_\t0\troot\t_\t_
2-3\tda\t_\t_\t_\t_\t_\t_\t_\t_
2\tde\tde\tADP\t_\t_\t4\tcase\t_\t_
3\ta\to\tDET\t_\t_\t4\tdet\t_\t_
4\tpraia\tpraia\tNOUN\t_\t_\t1\tobl\t_\t_
4.1\tfoi\tir\tVERB\t_\t_\t_\t_\t_\t_
5\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\t_

1\tLula\tLula\tPROPN\t_\t_\t0\troot\t_\t_
"""


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def splits(tmp_path, suffix, train, validation=None, test=None):
    out = {}
    for name, text in (("train", train), ("validation", validation or train), ("test", test or train)):
        out[name] = write(tmp_path / f"{name}{suffix}", text)
    return out


def test_read_conll(tmp_path):
    sents = read_conll(write(tmp_path / "a.conll", CONLL))
    assert [s.tokens for s in sents] == [["EU", "rejects", "German"], ["Peter", "Blackburn"]]
    assert sents[0].tags == ["B-ORG", "O", "B-MISC"]
    assert sents[1].lines == [7, 8]


def test_read_conll_space_separated_multicolumn(tmp_path):
    sents = read_conll(write(tmp_path / "a.conll", "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n"))
    assert sents[0].tokens == ["EU", "rejects"] and sents[0].tags == ["B-ORG", "O"]


def test_malformed_conll_line_names_file_and_line(tmp_path):
    path = write(tmp_path / "data.conll", "EU\tB-ORG\nrejects\tO\n\nbroken-line-without-tag\n")
    with pytest.raises(ValueError, match=r"data\.conll:4: expected 'token<TAB>tag', got 'broken"):
        read_conll(path)


def test_read_conllu_mwt_and_empty_nodes(tmp_path):
    sents = read_conllu(write(tmp_path / "a.conllu", CONLLU))
    assert sents[0].tokens == ["Vou", "da", "praia", "."]
    assert sents[0].tags == ["VERB", "ADP", "NOUN", "PUNCT"]
    assert sents[1].tokens == ["Lula"]
    assert read_conllu(tmp_path / "a.conllu", mwt="syntactic")[0].tokens == ["Vou", "de", "a", "praia", "."]


@pytest.mark.parametrize("bad, message", [
    ("1\tVou\tir\tVERB\n", r"a\.conllu:2: expected 10 tab-separated CoNLL-U fields, got 4"),
    ("x\tVou\tir\tVERB\t_\t_\t0\troot\t_\t_\n", r"a\.conllu:2: bad CoNLL-U ID 'x'"),
])
def test_malformed_conllu_line(tmp_path, bad, message):
    path = write(tmp_path / "a.conllu", "# c\n" + bad)
    with pytest.raises(ValueError, match=message):
        read_conllu(path)


def test_read_jsonl_both_kinds_and_errors(tmp_path):
    tok = read_jsonl(write(tmp_path / "t.jsonl", '{"tokens": ["a", "b"], "tags": ["NOUN", "VERB"]}\n\n'))
    assert tok[0].tokens == ["a", "b"]
    sen = read_jsonl(write(tmp_path / "s.jsonl", '{"text": "hi", "label": "positive"}\n'))
    assert sen[0].text == "hi" and sen[0].label == "positive" and sen[0].text_pair is None
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: invalid JSON"):
        read_jsonl(write(tmp_path / "bad.jsonl", '{"text": "a", "label": 1}\n{"text": \n'))
    with pytest.raises(ValueError, match=r"len\.jsonl:1: 'tokens' and 'tags' must be lists of equal length"):
        read_jsonl(write(tmp_path / "len.jsonl", '{"tokens": ["a"], "tags": []}\n'))
    with pytest.raises(ValueError, match=r"mix\.jsonl:2: a sentence record"):
        read_jsonl(write(tmp_path / "mix.jsonl", '{"tokens": ["a"], "tags": ["X"]}\n{"text": "a", "label": 1}\n'))


def test_read_csv_bom_header_and_order(tmp_path):
    plain = read_csv(write(tmp_path / "a.csv", '\ufeff"1","good, very good"\n"-1","bad\nreally"\n'))
    assert [(r.label, r.text) for r in plain] == [("1", "good, very good"), ("-1", "bad\nreally")]
    header = read_csv(write(tmp_path / "b.csv", "text,label\nnice,1\n"))
    assert (header[0].text, header[0].label) == ("nice", "1")
    flipped = read_csv(write(tmp_path / "c.csv", '"une phrase","-1"\n'), order=("text", "label"))
    assert flipped[0].label == "-1"
    with pytest.raises(ValueError, match=r"d\.csv:4: expected 2 fields"):
        read_csv(write(tmp_path / "d.csv", '1,a\n-1,"b\nc"\n1,x,y\n'))


def test_load_local_conll_with_inferred_labels(tmp_path):
    files = splits(tmp_path, ".conll", CONLL)
    data = load_task("ner-local", "en", source="local", files=files)
    assert data.kind == "token" and data.labels == ["O", "B-MISC", "B-ORG", "B-PER", "I-PER"]
    row = data.dataset["train"][0]
    assert row["tokens"] == ["EU", "rejects", "German"]
    assert [data.labels[i] for i in row["tags"]] == ["B-ORG", "O", "B-MISC"]
    assert set(data.dataset) == {"train", "validation", "test"}


def test_load_local_registered_pos_uses_universal_labels(tmp_path):
    files = splits(tmp_path, ".conllu", CONLLU.replace("PROPN", "NOUN"))
    data = load_task("pos", "pt", source="local", files=files)
    assert data.labels == list(UNIVERSAL_TAGS)
    assert [data.labels[i] for i in data.dataset["test"][0]["tags"]] == ["VERB", "ADP", "NOUN", "PUNCT"]


def test_unknown_tag_with_label_list_raises_with_file_and_line(tmp_path):
    files = splits(tmp_path, ".conllu", CONLLU)  # PROPN is not one of the universal 12
    with pytest.raises(ValueError, match=r"train\.conllu:11: tag 'PROPN' is not in the label list"):
        load_task("pos", "pt", source="local", files=files)
    files = splits(tmp_path, ".conll", "a\tB-PER\nb\tB-XYZ\n")
    with pytest.raises(ValueError, match=r"train\.conll:2: tag 'B-XYZ' is not in the label list"):
        load_task("mine", "en", source="local", files=files, labels=["O", "B-PER", "I-PER"])


def test_load_local_native_tagset_mapped_strictly(tmp_path):
    files = splits(tmp_path, ".conllu", CONLLU)
    data = load_task("pos", "pt", source="local", files=files, tagset="upos")
    assert [data.labels[i] for i in data.dataset["train"][1]["tags"]] == ["NOUN"]  # PROPN -> NOUN
    files = splits(tmp_path, ".conll", "The\tDT\ncat\tNNX\n")
    with pytest.raises(ValueError, match=r"train\.conll:2: tag 'NNX' is not in the penn table"):
        load_task("pos", "en", source="local", files=files, tagset="penn")


def test_load_local_sentence_tasks(tmp_path):
    files = splits(tmp_path, ".csv", '"1","fine"\n"-1","awful"\n')
    data = load_task("polarity-de", "de", source="local", files=files, labels=["-1", "1"])
    assert data.kind == "sentence" and data.dataset["train"]["label"] == [1, 0]
    pairs = "\n".join(json.dumps({"text": a, "text_pair": b, "label": l})
                      for a, b, l in [("a", "b", "entailment"), ("c", "d", "neutral")])
    data = load_task("nli", "en", source="local", files=splits(tmp_path, ".jsonl", pairs))
    assert set(data.dataset["train"].column_names) == {"text", "text_pair", "label"}
    assert data.is_pair and data.labels == ["entailment", "neutral"]


def test_empty_split_is_a_clear_error(tmp_path):
    files = splits(tmp_path, ".conll", CONLL)
    files["validation"] = write(tmp_path / "empty.conll", "\n-DOCSTART-\tO\n\n")
    with pytest.raises(ValueError, match=r"empty\.conll: the 'validation' split is empty"):
        load_task("ner-local", "en", source="local", files=files)


def test_local_needs_every_split(tmp_path):
    with pytest.raises(ValueError, match="no file for split"):
        load_task("pos", "en", source="local", files={"train": tmp_path / "x.conll"})
    with pytest.raises(FileNotFoundError):
        load_task("pos", "en", source="local", files={s: tmp_path / "nope.conll"
                                                      for s in ("train", "validation", "test")})


def test_integer_tags_without_labels_are_indices(tmp_path):
    rows = "\n".join(json.dumps({"tokens": ["a"] * 3, "tags": t}) for t in ([0, 2, 10], [1, 1, 1]))
    data = load_task("ints", "en", source="local", files=splits(tmp_path, ".jsonl", rows))
    assert data.labels == [str(i) for i in range(11)]
    assert data.dataset["train"][0]["tags"] == [0, 2, 10]


def test_sentence_label_not_in_list(tmp_path):
    files = splits(tmp_path, ".csv", '"1","fine"\n"-1","awful"\n')
    with pytest.raises(ValueError, match=r"train\.csv:1: label '1' is not in the label list \['negative'"):
        load_task("polarity-de", "de", source="local", files=files)


def test_a_parquet_table_is_read_in_row_batches(tmp_path, monkeypatch):
    """Three rows at a time (a big table: 20,000), the records and the row numbers in errors are those of one
    piece."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from headprune_core.data import formats
    words = [[f"w{i}", "x"] for i in range(10)]
    tags = [["NOUN", "X"] for _ in range(10)]
    pq.write_table(pa.table({"tokens": words, "tags": tags}), tmp_path / "ok.parquet")
    whole = read_file(tmp_path / "ok.parquet")
    monkeypatch.setattr(formats, "ROW_BATCH", 3)
    parts = read_file(tmp_path / "ok.parquet")
    assert [(r.tokens, r.tags, r.lines) for r in parts] == [(r.tokens, r.tags, r.lines) for r in whole]
    assert parts[-1].lines == [10, 10]
    tags[7] = ["NOUN"]
    pq.write_table(pa.table({"tokens": words, "tags": tags}), tmp_path / "bad.parquet")
    with pytest.raises(CorpusError, match=r"bad.parquet:8: 'tokens' and 'tags' must be lists of equal length"):
        read_file(tmp_path / "bad.parquet")
