"""Pick the compute device (CUDA, then MPS, then CPU) and the autocast that is safe on it."""

from __future__ import annotations

import contextlib
from typing import Literal

import torch

DeviceName = Literal["auto", "cpu", "cuda", "mps"]


def pick_device(name: str | None = "auto") -> torch.device:
    """Return ``torch.device`` for ``name``; ``"auto"`` (or None) prefers CUDA, then MPS, then CPU.

    >>> pick_device("cpu").type
    'cpu'
    """
    if name in (None, "auto"):
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name not in ("cpu", "cuda", "mps") and not name.startswith("cuda:"):
        raise ValueError(f"unknown device {name!r}; known: auto, cpu, cuda, cuda:N, mps")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} asked for, but CUDA is not available on this machine")
    return torch.device(name)


def autocast(device: torch.device, *, enabled: bool = True):
    """bf16 autocast on CUDA GPUs that support it; a no-op context elsewhere (fp32 on CPU and MPS)."""
    if enabled and device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()
