"""Local copies of Hugging Face Hub data sets, laid out as the Hub serves them: a folder with one sub-folder
of parquet shards per config (``<config>/<split>-00000-of-00001.parquet``, written by ``datasets`` so that
ClassLabel names travel in the parquet metadata) and a ``README.md`` whose YAML header lists the configs and
their data files, as on https://huggingface.co/datasets/nyu-mll/glue/tree/main. ``datasets.load_dataset(folder,
config)`` reads it like the Hub repository, offline.
"""

from __future__ import annotations

from pathlib import Path

import datasets


def write_hub_repo(root: str | Path, configs: dict[str, dict[str, datasets.Dataset]]) -> Path:
    """Write ``{config: {split: Dataset}}`` under ``root`` in the Hub layout; returns ``root``."""
    root = Path(root)
    lines = ["---", "configs:"]
    for config, splits in configs.items():
        (root / config).mkdir(parents=True, exist_ok=True)
        lines += [f"- config_name: {config}", "  data_files:"]
        for split, ds in splits.items():
            ds.to_parquet(str(root / config / f"{split}-00000-of-00001.parquet"))
            lines += [f"  - split: {split}", f"    path: {config}/{split}-*"]
    lines += ["---", "", "A local copy laid out like the Hugging Face Hub repository (test fixture).", ""]
    (root / "README.md").write_text("\n".join(lines), encoding="utf-8")
    return root


def write_parquet_export(root: str | Path, configs: dict[str, dict[str, datasets.Dataset]]) -> Path:
    """Write ``{config: {split: Dataset}}`` under ``root`` as the Hub's parquet export branch
    (``refs/convert/parquet``) lays a data set out: ``<config>/<split>/0000.parquet``, no README. It is what
    ``hf download --repo-type dataset ID --revision refs/convert/parquet`` writes for a loading-script data set
    (Universal Dependencies); returns ``root``."""
    root = Path(root)
    for config, splits in configs.items():
        for split, ds in splits.items():
            (root / config / split).mkdir(parents=True, exist_ok=True)
            ds.to_parquet(str(root / config / split / "0000.parquet"))
    return root
