"""Device choice: automatic, overridable, clear errors; a fixed number of torch threads for a block."""

from __future__ import annotations

import contextlib

import pytest
import torch

from headprune_core.encoders.device import autocast, pick_device, torch_threads


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


def test_torch_threads_for_a_block_then_the_callers_again():
    before = torch.get_num_threads()
    other = 2 if before == 1 else 1
    with torch_threads(other):
        assert torch.get_num_threads() == other
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError, match="inside"), torch_threads(other):
        raise RuntimeError("inside")
    assert torch.get_num_threads() == before  # restored when the block fails too
    with pytest.raises(ValueError, match="at least 1"), torch_threads(0):
        pass
