"""What a browser session remembers between pages, typed: the mask chosen on Prune & evaluate, which the Head
inspector applies. Heads are ``(layer, head)`` tuples everywhere in the app; ``"L{l}H{h}"`` is only how one is
shown (:func:`head_label`).

Everything else a page needs is either a widget (its own key) or a frame choice (``selection``); this module is
the one place a page leaves something for another page, in ``st.session_state`` under one key.

>>> import numpy as np
>>> choice = MaskChoice.from_mask(np.array([[1, 0], [1, 1]]), finetune_key="ft", task="pos", label="1 by hand")
>>> choice.pruned, choice.k, [head_label(h) for h in choice.pruned]
(((0, 1),), 1, ['L0H1'])
>>> choice.mask().tolist()
[[1.0, 0.0], [1.0, 1.0]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

Head = tuple[int, int]  # (layer, head)
MASK_KEY = "mask_choice"


def head_label(head: Head) -> str:
    """How a head is shown: ``(1, 2)`` -> ``"L1H2"``."""
    layer, h = head
    return f"L{layer}H{h}"


def all_heads(shape: tuple[int, int]) -> list[Head]:
    """Every ``(layer, head)`` of a ``(layers, heads)`` model, layer by layer."""
    return [(layer, h) for layer in range(shape[0]) for h in range(shape[1])]


def pruned_heads(mask) -> tuple[Head, ...]:
    """The heads a (layers, heads) mask prunes (its zeros), layer by layer."""
    m = np.asarray(mask)
    if m.ndim != 2:
        raise ValueError(f"a head mask has shape (layers, heads); got {m.shape}")
    return tuple((int(layer), int(h)) for layer, h in zip(*np.nonzero(m == 0)))


def mask_of(shape: tuple[int, int], pruned) -> np.ndarray:
    """The float32 (layers, heads) mask pruning the heads ``pruned``: 1 = keep, 0 = pruned."""
    out = np.ones(shape, dtype=np.float32)
    for layer, h in pruned:
        out[layer, h] = 0
    return out


@dataclass(frozen=True)
class MaskChoice:
    """The mask chosen on Prune & evaluate for one fine-tuned model and task: which heads it prunes, and its
    label (what the strategy and k were)."""

    finetune_key: str
    task: str
    shape: tuple[int, int]  # (layers, heads)
    pruned: tuple[Head, ...]
    label: str

    @classmethod
    def from_mask(cls, mask, *, finetune_key: str, task: str, label: str) -> MaskChoice:
        """From a (layers, heads) mask, 1 = keep, 0 = pruned."""
        pruned = pruned_heads(mask)  # checks the shape
        layers, heads = np.shape(mask)
        return cls(finetune_key=finetune_key, task=task, shape=(int(layers), int(heads)), pruned=pruned, label=label)

    def mask(self) -> np.ndarray:
        """The float32 (layers, heads) mask: 1 = keep, 0 = pruned."""
        return mask_of(self.shape, self.pruned)

    @property
    def k(self) -> int:
        """How many heads it prunes."""
        return len(self.pruned)

    def applies_to(self, finetune_key: str, task: str) -> bool:
        """True for the same fine-tuned model and task when it prunes at least one head."""
        return self.finetune_key == finetune_key and self.task == task and self.k > 0


def remember_mask(choice: MaskChoice) -> None:
    """Keep ``choice`` as this session's current mask (the last one Prune & evaluate showed)."""
    st.session_state[MASK_KEY] = choice


def current_mask(finetune_key: str, task: str) -> MaskChoice | None:
    """This session's current mask when it applies to this fine-tuned model and task (None otherwise: another
    model, or a mask that prunes nothing)."""
    choice = st.session_state.get(MASK_KEY)
    return choice if choice is not None and choice.applies_to(finetune_key, task) else None
