"""What a browser session remembers between pages: the typed mask choice of Prune & evaluate."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from headprune_app import state


def _mask() -> np.ndarray:
    mask = np.ones((3, 4))
    mask[0, 1] = mask[2, 3] = mask[2, 0] = 0
    return mask


def test_a_mask_and_its_pruned_heads_round_trip():
    choice = state.MaskChoice.from_mask(_mask(), finetune_key="ft1", task="pos", label="3 chosen by hand")
    assert choice.pruned == ((0, 1), (2, 0), (2, 3)) and choice.k == 3 and choice.shape == (3, 4)
    assert all(type(v) is int for head in choice.pruned for v in head)  # plain ints: JSON- and widget-friendly
    back = choice.mask()
    assert back.dtype == np.float32 and back.shape == (3, 4) and back.tolist() == _mask().tolist()
    again = state.MaskChoice.from_mask(back, finetune_key="ft1", task="pos", label="3 chosen by hand")
    assert again == choice
    assert state.mask_of((3, 4), choice.pruned).tolist() == _mask().tolist()
    assert state.pruned_heads(np.ones((2, 2))) == ()


def test_a_mask_choice_is_frozen_and_checks_the_shape():
    choice = state.MaskChoice.from_mask(_mask(), finetune_key="ft1", task="pos", label="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        choice.label = "y"
    with pytest.raises(ValueError, match="layers, heads"):
        state.MaskChoice.from_mask(np.ones(12), finetune_key="ft1", task="pos", label="x")


def test_applies_only_to_the_same_model_and_task_when_it_prunes_something():
    choice = state.MaskChoice.from_mask(_mask(), finetune_key="ft1", task="pos", label="x")
    assert choice.applies_to("ft1", "pos")
    assert not choice.applies_to("ft2", "pos") and not choice.applies_to("ft1", "name")
    nothing = state.MaskChoice.from_mask(np.ones((3, 4)), finetune_key="ft1", task="pos", label="0 pruned")
    assert nothing.k == 0 and not nothing.applies_to("ft1", "pos")


def test_heads_are_tuples_shown_as_layer_head_labels():
    assert state.head_label((1, 2)) == "L1H2"
    assert state.all_heads((2, 3)) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert [state.head_label(h) for h in state.all_heads((1, 2))] == ["L0H0", "L0H1"]


def test_the_session_remembers_one_choice_under_one_key(monkeypatch):
    import streamlit as st
    session: dict = {}
    monkeypatch.setattr(st, "session_state", session)
    assert state.current_mask("ft1", "pos") is None
    choice = state.MaskChoice.from_mask(_mask(), finetune_key="ft1", task="pos", label="x")
    state.remember_mask(choice)
    assert list(session) == [state.MASK_KEY]
    assert state.current_mask("ft1", "pos") is choice
    assert state.current_mask("ft2", "pos") is None  # another fine-tuned model: nothing to apply
    state.remember_mask(state.MaskChoice.from_mask(np.ones((3, 4)), finetune_key="ft1", task="pos", label="0"))
    assert state.current_mask("ft1", "pos") is None and list(session) == [state.MASK_KEY]
