"""Pick the compute device (CUDA, then MPS, then CPU), the autocast that is safe on it, and torch's CPU threads for
work whose float results must not depend on the machine."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
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


def device_of(model: torch.nn.Module) -> torch.device:
    """Where ``model``'s weights are (the one way every module asks: a model never moves mid-run)."""
    return next(model.parameters()).device


def to_device(batch: dict, device: torch.device) -> dict:
    """A batch with its tensors moved to ``device`` (other values as they are)."""
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def autocast(device: torch.device, *, enabled: bool = True):
    """bf16 autocast on CUDA GPUs that support it; a no-op context elsewhere (fp32 on CPU and MPS)."""
    if enabled and device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch CPU threads, then restore the previous number: CPU reductions (a loss's
    mean, LayerNorm's weight gradient) split their sums by thread, so the same computation on 1 and on 2 threads
    differs in the last bits, and training carries that into every result.

    The setting is per process: a computation running meanwhile in another Python thread gets it too.

    >>> with torch_threads(1):
    ...     torch.get_num_threads()
    1
    """
    if n < 1:
        raise ValueError(f"torch needs at least 1 CPU thread, got {n}")
    before = torch.get_num_threads()
    if before != n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
