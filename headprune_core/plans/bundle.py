"""Result bundles: a plan's cache entries packed on one machine (a GPU box, a cluster) and checked into another
cache (a laptop), so its pages show the results with nothing recomputed.

A bundle is a tar file (gzip) holding ``manifest.json`` (format, plan, model, every entry's kind and key and every
file's size and SHA-256) and the entries' files as ``runs/<kind>/<key>/<file>``. Fine-tuned weights stay out
unless asked for (``with_weights``): the pages that need a model (the inspector, new masks, physical pruning)
then say it is missing and offer to compute it.

Import checks everything before anything lands: regular files only (no links, devices or folders), names inside
``runs/`` of the layout above, nothing absent from or missing in the manifest, sizes and SHA-256 as listed, only
``.json``, ``.npy`` (never with pickled objects) and ``.safetensors`` files, each entry's ``config.json`` of a
known kind whose configuration hashes to its key, and its ``entry.json`` listing exactly its files. Then each entry
is moved into the cache atomically, under its key's lock; a valid entry already there is never overwritten. A
bundle cut short (an interrupted download) or damaged (bad gzip or tar data, an unreadable manifest) is refused
with one line naming the file, nothing written. Entries are unpacked into a staging folder in the cache's
``runs/`` (:func:`~headprune_core.base.files.scratch_dir`), removed afterwards; the staging of an import that was
killed is removed by ``cache gc`` or the next import, never while its import runs.

The manifest also carries the plan and the GradTS plans it names, unless they are presets (every installation has
those), so the laptop's pages list the plan without its file being copied by hand. They are checked like plan
files, and saved in ``<cache>/plans`` only where no plan of that name is: a plan file already there is kept. So do the
teacher's lessons of the plan (``<cache>/lessons``, :mod:`~headprune_core.plans.lessons`; shipped ones travel with
every installation): each is read as a lesson file is, and saved where no lesson of that name is.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import shutil
import tarfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from headprune_core.base.files import atomic_file, check_name, key_lock, remove_dir, scratch_dir, write_file_atomic
from headprune_core.multitask.gradts import GradTS
from headprune_core.multitask.plan import GRADTS_PRESETS, GradTSPlan, find_gradts_plan
from headprune_core.multitask.plan import plans_dir as gradts_plans_dir
from headprune_core.plans import lessons as L
from headprune_core.plans.plan import StudyPlan, plan_jobs
from headprune_core.plans.presets import PRESETS, plans_dir
from headprune_core.runs.config import CONFIG_KINDS, RunConfig, config_from_dict, nested_configs
from headprune_core.runs.retrain import refinetune_parts
from headprune_core.runs.store import ENTRY, CorruptEntry, Store, check_entry, entry_is_valid, sha256_file
from headprune_core.runs.study import Study

FORMAT = "headprune-bundle"
VERSION = 1
MANIFEST = "manifest.json"
SUFFIXES = (".json", ".npy", ".safetensors")
MAX_MANIFEST_BYTES = 64 << 20
_KEY = re.compile(r"^[0-9a-f]{20}$")
_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class BundleError(ValueError):
    """A bundle that cannot be imported: the message names the member and why; nothing was written."""


class MissingResult(LookupError):
    """A result the bundle's plan reads is not in the cache (export packs what is there and counts the rest)."""


class RecordingStore(Store):
    """A store that remembers every entry it is asked about and never computes (a missing one raises)."""

    def __init__(self, root: Path | str | None = None):
        super().__init__(root)
        self.seen: dict[str, RunConfig] = {}

    def path_for(self, cfg: RunConfig) -> Path:
        self.seen.setdefault(f"{cfg.kind}/{cfg.key()}", cfg)
        return super().path_for(cfg)

    def get_or_compute(self, cfg: RunConfig, compute) -> dict[str, Any]:
        found = self.get(cfg)
        if found is None:
            raise MissingResult(f"{cfg.kind}/{cfg.key()}")
        return found


@dataclass
class Exported:
    path: Path
    entries: int
    bytes: int
    missing: int  # results the plan reads that are not cached (not in the bundle)
    weights_left_out: int  # fine-tunes whose weights were not packed
    also_missing: int = 0  # results of the ``also`` plans that are not cached


def plan_results(study: Study, plan: StudyPlan) -> tuple[list[RunConfig], int]:
    """Every cached result ``plan``'s pages read (its jobs, what they read, re-fine-tunings' runs, GradTS
    validations' parts, as :class:`RecordingStore` sees them read), and how many it reads that are missing."""
    store = study.store
    if not isinstance(store, RecordingStore):
        raise TypeError("plan_results needs a Study on a RecordingStore")
    gradts = {GradTS(study, g).config().key(): g for g in plan.gradts_plans()}
    for job in plan_jobs(study, plan):
        for cfg in [*nested_configs(job.cfg), job.cfg]:
            store.status(cfg)
        try:
            if job.cfg.kind == "refinetune" and store.has(job.cfg):
                for part in refinetune_parts(study, job.cfg):
                    for cfg in part.configs():
                        store.status(cfg)
            elif job.cfg.kind == "gradts" and store.has(job.cfg) and job.cfg.key() in gradts:
                gts = GradTS(study, gradts[job.cfg.key()])
                aff = gts.affinity()
                for primary in gts.primaries:
                    gts.validate(primary, aff["names"], aff["tau"])
        except MissingResult:
            pass  # counted below: the entry is among those seen and not cached
    cfgs = list(store.seen.values())
    ok = [c for c in cfgs if store.status(c) == "ok"]
    return ok, len(cfgs) - len(ok)


def _files(entry: Path, cfg: RunConfig) -> list[tuple[str, Path, str]]:
    """(name, path, SHA-256) of an entry's files; the artifacts' hashes are the ones ``check_entry`` just
    verified (weights are read once)."""
    records = check_entry(entry, cfg, hashes=True)
    return [(name, entry / name, sha256_file(entry / name)) for name in ("config.json", ENTRY)] + \
        [(r["file"], entry / r["file"], r["sha256"]) for r in records]


def export_bundle(plan: StudyPlan, out: str | Path, *, with_weights: bool = False, device: str = "auto",
                  store: Store | None = None, also: tuple[StudyPlan, ...] = ()) -> Exported:
    """Pack ``plan``'s cached results into the bundle ``out`` (written beside, then renamed), and those of the
    plans in ``also`` that are computed (the Findings page's plan: what is not computed of it is counted in
    ``also_missing``, not in ``missing``)."""
    out = Path(out).expanduser()
    if not out.parent.is_dir():
        raise FileNotFoundError(f"no such folder for the bundle: {out.parent}")
    root = store.root if store is not None else None
    recorder = RecordingStore(root)
    cfgs, missing = plan_results(plan.study(store=recorder, device=device, progress=False), plan)
    by_key, also_missing = {(c.kind, c.key()): c for c in cfgs}, 0
    for extra in also:  # each with its own recorder: its count of missing results is its own
        more, absent = plan_results(extra.study(store=RecordingStore(root), device=device, progress=False), extra)
        for cfg in more:
            by_key.setdefault((cfg.kind, cfg.key()), cfg)
        also_missing += absent
    entries, left_out, total = [], 0, 0
    for _, cfg in sorted(by_key.items()):
        try:
            files = _files(recorder.path_for(cfg), cfg)
        except CorruptEntry:
            missing += 1
            continue
        if not with_weights and any(name.endswith(".safetensors") for name, _, _ in files):
            left_out += 1
            continue
        listed = [{"name": name, "bytes": f.stat().st_size, "sha256": sha} for name, f, sha in files]
        entries.append({"kind": cfg.kind, "key": cfg.key(), "files": listed,
                        "paths": [(name, f) for name, f, _ in files]})
        total += sum(x["bytes"] for x in listed)
    manifest = {"format": FORMAT, "version": VERSION, "plan": plan.name, "model": plan.model,
                "created": time.time(), "with_weights": with_weights, "missing": missing,
                "weights_left_out": left_out, "plans": plans_of(plan),
                "lessons": lessons_of(plan, recorder.root.parent),
                "entries": [{k: e[k] for k in ("kind", "key", "files")} for e in entries]}
    with atomic_file(out) as tmp, tarfile.open(tmp, "w:gz") as tar:
        _add(tar, MANIFEST, io.BytesIO(json.dumps(manifest, indent=1).encode()), None)  # first: see is_bundle
        for e in entries:
            for name, path in e["paths"]:
                with open(path, "rb") as fh:
                    _add(tar, f"runs/{e['kind']}/{e['key']}/{name}", fh, path.stat().st_size)
    return Exported(out, len(entries), total, missing, left_out, also_missing)


def is_bundle(path: str | Path) -> bool:
    """Whether ``path`` is a headprune bundle (of any version): a tar file whose first member is a manifest of
    our format. Only that member is read, so a large bundle is not decompressed to tell."""
    try:
        with tarfile.open(path, "r:*") as tar:
            first = tar.next()
            if first is None or first.name != MANIFEST or not first.isreg() or first.size > MAX_MANIFEST_BYTES:
                return False
            manifest = json.loads(tar.extractfile(first).read())
    except (OSError, EOFError, ValueError, zlib.error, tarfile.TarError):
        return False
    return isinstance(manifest, dict) and manifest.get("format") == FORMAT


def plans_of(plan: StudyPlan) -> dict:
    """``{"study": the plan's fields or None for a preset, "gradts": [the fields of each GradTS plan it names that
    is not a preset]}``; the plan's ``gradts``/``affinity`` refer to them by name (a file path would not resolve
    on another machine)."""
    gradts: dict[str, dict] = {}
    refs: dict[str, list] = {}
    for field_name in ("gradts", "affinity"):
        refs[field_name] = []
        for ref in getattr(plan, field_name):
            if isinstance(ref, str) and ref in GRADTS_PRESETS:
                refs[field_name].append(ref)
                continue
            gplan = find_gradts_plan(ref)
            gradts.setdefault(gplan.name, gplan.to_dict())
            refs[field_name].append(gplan.name)
    study = None if PRESETS.get(plan.name) == plan else {**plan.to_dict(), **refs}
    return {"study": study, "gradts": list(gradts.values())}


def _add(tar: tarfile.TarFile, name: str, fh, size: int | None) -> None:
    info = tarfile.TarInfo(name)
    if size is None:
        size = len(fh.getvalue())
    info.size, info.mode, info.mtime = size, 0o644, int(time.time())
    tar.addfile(info, fh)


# --- import ----------------------------------------------------------------------------------------------------

def _member_path(name: str) -> tuple[str, str, str]:
    """(kind, key, file) of an entry's member name, or a BundleError saying why the name is refused."""
    if name.startswith("/") or "\\" in name or re.match(r"^[A-Za-z]:", name):
        raise BundleError(f"{name!r}: an absolute or non-POSIX path")
    parts = PurePosixPath(name).parts
    if any(p in ("..", ".", "") for p in name.split("/")):
        raise BundleError(f"{name!r}: a path that leaves its folder")
    if len(parts) != 4 or parts[0] != "runs":
        raise BundleError(f"{name!r}: not runs/<kind>/<key>/<file>")
    _, kind, key, file = parts
    if kind not in CONFIG_KINDS:
        raise BundleError(f"{name!r}: unknown kind of result {kind!r}")
    if not _KEY.match(key):
        raise BundleError(f"{name!r}: {key!r} is not a cache key")
    if not _FILE.match(file) or not file.endswith(SUFFIXES):
        raise BundleError(f"{name!r}: only {', '.join(SUFFIXES)} files are accepted (never pickles)")
    return kind, key, file


def _read_manifest(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo]) -> dict:
    info = members.get(MANIFEST)
    if info is None:
        raise BundleError(f"no {MANIFEST}: not a headprune bundle")
    if info.size > MAX_MANIFEST_BYTES:
        raise BundleError(f"{MANIFEST} is {info.size:,} bytes: too large")
    try:
        manifest = json.loads(tar.extractfile(info).read())
        if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
            raise BundleError(f"{MANIFEST}: format {manifest.get('format')!r} version {manifest.get('version')!r}, "
                              f"expected {FORMAT!r} version {VERSION}")
        for e in manifest["entries"]:
            if not isinstance(e["kind"], str) or not isinstance(e["key"], str):
                raise TypeError("kind and key must be strings")
            for f in e["files"]:
                int(f["bytes"]), str(f["sha256"]), str(f["name"])
    except BundleError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise BundleError(f"{MANIFEST} is damaged: {type(err).__name__}: {err}") from None
    return manifest


def check_bundle(tar: tarfile.TarFile) -> tuple[dict, dict[str, tuple[int, str]]]:
    """The manifest and ``{member name: (bytes, sha256)}`` of every entry file, after checking every member's
    name and type against the manifest (no content read yet)."""
    members: dict[str, tarfile.TarInfo] = {}
    for m in tar.getmembers():
        if not m.isreg():
            what = "a link" if m.issym() or m.islnk() else "a folder" if m.isdir() else "not a regular file"
            raise BundleError(f"{m.name!r}: {what}; a bundle holds regular files only")
        if m.name in members:
            raise BundleError(f"{m.name!r}: twice in the bundle")
        members[m.name] = m
    manifest = _read_manifest(tar, members)
    expected: dict[str, tuple[int, str]] = {}
    for e in manifest["entries"]:
        for f in e["files"]:
            name = f"runs/{e['kind']}/{e['key']}/{f['name']}"
            _member_path(name)
            expected[name] = (int(f["bytes"]), str(f["sha256"]))
    for name, m in members.items():
        if name == MANIFEST:
            continue
        _member_path(name)
        if name not in expected:
            raise BundleError(f"{name!r}: not listed in {MANIFEST}")
        if m.size != expected[name][0]:
            raise BundleError(f"{name!r}: {m.size:,} bytes, {MANIFEST} says {expected[name][0]:,}")
    absent = sorted(set(expected) - set(members))
    if absent:
        raise BundleError(f"{absent[0]!r}: listed in {MANIFEST} but not in the bundle (cut short or damaged?)")
    return manifest, expected


def _check_entry_folder(folder: Path, kind: str, key: str, hashes: dict[str, tuple[int, str]]) -> RunConfig:
    """The configuration of an unpacked entry, after checking it describes ``kind``/``key`` and its files.
    ``hashes`` are the SHA-256 each file was verified against while unpacking: its ``entry.json`` must list the
    same (so no file is read twice)."""
    where = f"runs/{kind}/{key}"
    try:
        stored = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        cfg = config_from_dict(kind, stored["config"])
    except FileNotFoundError:
        raise BundleError(f"{where}: no config.json") from None
    except (ValueError, KeyError, TypeError) as err:
        raise BundleError(f"{where}/config.json: not a {kind} configuration ({type(err).__name__}: {err})") from None
    if stored.get("kind") != kind or stored.get("key") != key:
        raise BundleError(f"{where}/config.json: recorded as {stored.get('kind')}/{stored.get('key')}")
    if cfg.key() != key:
        raise BundleError(f"{where}/config.json: its configuration hashes to {cfg.key()}, not to its key")
    try:
        records = check_entry(folder, cfg, hashes=False)
    except CorruptEntry as err:
        raise BundleError(f"{where}: {err}") from None
    for r in records:
        if hashes[f"{where}/{r['file']}"][1] != r.get("sha256"):
            raise BundleError(f"{where}: {r['file']} does not have the SHA-256 it was written with")
    listed = {"config.json", ENTRY, *(r["file"] for r in records)}
    extra = sorted({p.name for p in folder.iterdir()} - listed)
    if extra:
        raise BundleError(f"{where}/{extra[0]}: a file its {ENTRY} does not list")
    for r in records:
        if r["file"].endswith(".npy"):
            try:
                np.load(folder / r["file"], allow_pickle=False)
            except ValueError as err:
                raise BundleError(f"{where}/{r['file']}: not a plain array ({err})") from None
    return cfg


@dataclass
class Imported:
    entries: int
    added: int
    kept: int  # valid entries already in the cache (never overwritten)
    bytes: int
    plans: list[str]  # one line per plan or lesson the bundle carried: saved, already here, or kept as it was here


def check_plans(data: Any) -> list[tuple[str, str, dict]]:
    """The plans a manifest carries as ("gradts" or "study", name, fields), each checked as a plan file is
    (GradTS plans first: the study plan names them); a :class:`BundleError` when one is unreadable."""
    if data is None:
        return []
    try:
        gradts = [(GradTSPlan.from_dict(d, where=f"{MANIFEST}: GradTS plan"), d) for d in data["gradts"]]
        by_name = {g.name: d for g, d in gradts}
        out = [("gradts", check_name(g.name, "GradTS plan name"), d) for g, d in gradts]
        study = data["study"]
        if study is not None:  # the GradTS plans it names resolve to the bundle's, not to files here
            inline = {f: [by_name[n] if isinstance(n, str) and n in by_name else n for n in study.get(f, [])]
                      for f in ("gradts", "affinity")}
            plan = StudyPlan.from_dict({**study, **inline}, where=f"{MANIFEST}: study plan")
            out.append(("study", plan.name, study))
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise BundleError(f"{MANIFEST}: a plan it carries is unreadable: {err}") from None
    return out


def _save_plans(plans: list[tuple[str, str, dict]], cache: Path) -> list[str]:
    """Save the checked plans in ``cache``'s plan folders where no plan of that name is (a file already there is
    the user's: kept)."""
    lines = []
    for kind, name, fields in plans:
        gradts = kind == "gradts"
        what = "GradTS plan" if gradts else "plan"
        if name in (GRADTS_PRESETS if gradts else PRESETS):
            lines.append(f"{what} {name}: a preset here; the preset is used")
            continue
        path = (gradts_plans_dir(cache) if gradts else plans_dir(cache)) / f"{name}.json"
        if path.exists():
            try:
                same = json.loads(path.read_text(encoding="utf-8")) == fields  # both as JSON reads them
            except (OSError, ValueError):
                same = False
            lines.append(f"{what} {name}: already here" if same else
                         f"{what} {name}: {path} holds another plan of that name; it was kept (rename it to see the "
                         "bundle's plan)")
            continue
        write_file_atomic(path, json.dumps(fields, indent=1, ensure_ascii=False))
        lines.append(f"{what} {name}: saved as {path}")
    return lines


def lessons_of(plan: StudyPlan, cache: Path) -> dict[str, str]:
    """The text of each of the teacher's lessons (in ``cache``) that needs ``plan``, by name."""
    found, _ = L.available(cache)
    return {name: Path(lesson.source).read_text(encoding="utf-8") for name, lesson in found.items()
            if lesson.plan == plan.name and not L.is_preset(lesson)}


def check_lessons(data: Any) -> dict[str, str]:
    """The lessons a manifest carries, each read as a lesson file is; a :class:`BundleError` for one that is not."""
    if not data:
        return {}
    if not isinstance(data, dict):
        raise BundleError(f"{MANIFEST}: 'lessons' is not a table of lesson files")
    for name, text in data.items():
        where = f"{MANIFEST}: lesson {str(name)[:64]!r}"
        if not isinstance(text, str) or len(text.encode("utf-8")) > L.MAX_BYTES:
            raise BundleError(f"{where} is not a lesson file (text of at most {L.MAX_BYTES // 1024} kB)")
        try:
            L.lesson_path(name)
            L.parse(text, name)
        except L.LessonError as err:
            raise BundleError(f"{where}: {err}") from None
    return data


def _save_lessons(lessons: dict[str, str], cache: Path) -> list[str]:
    """Save the checked lessons in ``<cache>/lessons`` where no lesson of that name is (one there is kept)."""
    lines = []
    for name, text in lessons.items():
        path = L.lesson_path(name, cache)
        if path.exists():
            same = path.read_text(encoding="utf-8", errors="replace") == text
            lines.append(f"lesson {name}: already here" if same else
                         f"lesson {name}: {path} holds another lesson of that name; it was kept")
            continue
        write_file_atomic(path, text)
        lines.append(f"lesson {name}: saved as {path}")
    return lines


def import_bundle(path: str | Path, store: Store | None = None) -> Imported:
    """Check the bundle ``path`` wholly, then move each of its entries into ``store``'s cache (atomic per entry;
    a valid entry already there is kept). Raises :class:`BundleError`, naming ``path``, before anything lands."""
    store = store or Store()
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no such bundle: {path}")
    store.check_writable()
    with scratch_dir(store.root, "import") as staging:
        try:
            manifest, expected = _unpack(path, staging)
            cfgs = [(_check_entry_folder(staging / "runs" / e["kind"] / e["key"], e["kind"], e["key"], expected), e)
                    for e in manifest["entries"]]
            plans = check_plans(manifest.get("plans"))
            lessons = check_lessons(manifest.get("lessons"))
        except BundleError as err:
            raise BundleError(f"{path}: {err}; nothing was imported") from None
        added = kept = 0
        for cfg, e in cfgs:
            dest = store.path_for(cfg)
            dest.parent.mkdir(parents=True, exist_ok=True)
            with key_lock(store.lock_path(cfg)):
                if entry_is_valid(dest, cfg):
                    kept += 1
                    continue
                if dest.exists():
                    remove_dir(dest)  # a corrupt entry under this key
                (staging / "runs" / e["kind"] / e["key"]).replace(dest)
                added += 1
        total = sum(b for b, _ in expected.values())
        lines = _save_plans(plans, store.root.parent) + _save_lessons(lessons, store.root.parent)
        return Imported(len(cfgs), added, kept, total, lines)


def _unpack(path: Path, staging: Path) -> tuple[dict, dict[str, tuple[int, str]]]:
    """Check the bundle's members and manifest, then unpack its entry files into ``staging``, each checked
    against its size and SHA-256; the manifest and the expected ``{member: (bytes, sha256)}``. A file cut short or
    damaged is a :class:`BundleError` saying so (gzip and tarfile raise ``EOFError``, ``zlib.error`` ...)."""
    try:
        tar = tarfile.open(path, "r:*")
    except tarfile.TarError:
        with open(path, "rb") as fh:
            gzipped = fh.read(2) == b"\x1f\x8b"
        raise BundleError("damaged: it starts like a gzip file but does not read as a gzip'd tar archive"
                          if gzipped else "not a bundle (not a gzip'd tar file)") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise BundleError(_damaged(err)) from None
    try:
        with tar:
            manifest, expected = check_bundle(tar)
            total = sum(b for b, _ in expected.values())
            free = shutil.disk_usage(staging).free
            if total > free:
                raise BundleError(f"needs {total / 1e6:,.1f} MB, the cache folder has {free / 1e6:,.1f} MB free")
            for member in tar.getmembers():  # in the archive's order: a gzip stream is read once
                if member.name != MANIFEST:
                    _extract(tar, member, staging, expected[member.name])
    except (EOFError, zlib.error, gzip.BadGzipFile, tarfile.TarError) as err:
        raise BundleError(_damaged(err)) from None
    return manifest, expected


def _damaged(err: BaseException) -> str:
    """What a decompression or tar error says about the file: cut short, or damaged."""
    short = isinstance(err, EOFError) or "unexpected end of data" in str(err)
    if short:
        return ("cut short: the file ends before the bundle does (an interrupted download or copy?); fetch or copy "
                "it again")
    return f"damaged ({type(err).__name__}: {err}); fetch or copy it again"


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo, staging: Path, expected: tuple[int, str]) -> None:
    """Unpack one entry file into ``staging``, hashing it on the way; refused unless its size and SHA-256 are the
    ones the manifest lists."""
    size, sha = expected
    dest = staging / member.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    h, n = hashlib.sha256(), 0
    with tar.extractfile(member) as src, open(dest, "wb") as fh:
        for chunk in iter(lambda: src.read(1 << 20), b""):
            h.update(chunk)
            n += len(chunk)
            fh.write(chunk)
    if n != size or h.hexdigest() != sha:
        raise BundleError(f"{member.name!r}: its SHA-256 is not the one {MANIFEST} lists (damaged or altered)")
