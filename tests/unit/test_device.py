"""Device choice: automatic, overridable, clear errors."""

from __future__ import annotations

import contextlib

import pytest
import torch

from headprune_core.encoders.device import autocast, pick_device


def test_auto_prefers_cuda_then_mps_then_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert pick_device("auto").type == "cpu" and pick_device(None).type == "cpu"
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert pick_device("auto").type == "mps"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pick_device("auto").type == "cuda"


def test_override_and_errors(monkeypatch):
    assert pick_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="CUDA is not available"):
        pick_device("cuda")
    with pytest.raises(ValueError, match="unknown device 'tpu'; known: auto, cpu, cuda"):
        pick_device("tpu")


def test_autocast_only_on_cuda():
    assert isinstance(autocast(torch.device("cpu")), contextlib.nullcontext)
