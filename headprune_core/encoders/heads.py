"""Switch attention heads off (gates), remove them for real (pruning), for transformers 5 (pyproject requires it).

transformers 5 dropped ``head_mask`` (silently ignored) and ``prune_heads``, so headprune does both itself:

* a **gate** is a forward pre-hook on each layer's attention output projection that scales each head's slice of
  its input, ``(batch, seq, heads * head_dim)`` viewed as ``(batch, seq, heads, head_dim)``, by
  ``mask[layer, head]``;
* **pruning** slices the query/key/value rows and the output projection's columns of the removed heads and
  updates the head counters. A layer that loses every head still runs: its attention output is the output
  projection's bias.

One mask convention everywhere: a float tensor of shape ``(layers, heads)``, 1 = keep, 0 = off, indexed by the
*original* head numbers, also after heads were pruned.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn
from transformers.pytorch_utils import prune_linear_layer


@dataclass(frozen=True)
class Adapter:
    """Module paths of one encoder family, relative to the base model and to one layer."""

    layers: str  # the ModuleList of layers, from the base model
    attn: str  # module that computes attention; replaced by an empty one when a layer loses all heads
    query: str
    key: str
    value: str
    out: str  # output projection whose input is the concatenated heads
    heads_attr: str  # head counter on the attention module
    all_head_size_attr: str | None  # size counter on the attention module, if the family keeps one


_BERT_LIKE = Adapter(
    layers="encoder.layer",
    attn="attention.self",
    query="attention.self.query",
    key="attention.self.key",
    value="attention.self.value",
    out="attention.output.dense",
    heads_attr="num_attention_heads",
    all_head_size_attr="all_head_size",
)
_DISTILBERT = Adapter(
    layers="transformer.layer",
    attn="attention",
    query="attention.q_lin",
    key="attention.k_lin",
    value="attention.v_lin",
    out="attention.out_lin",
    heads_attr="n_heads",
    all_head_size_attr=None,
)

ADAPTERS: dict[str, Adapter] = {
    "bert": _BERT_LIKE,
    "roberta": _BERT_LIKE,
    "xlm-roberta": _BERT_LIKE,
    "camembert": _BERT_LIKE,
    "electra": _BERT_LIKE,
    "distilbert": _DISTILBERT,
}


class UnsupportedModelError(ValueError):
    """The model family has no entry in the adapter table."""


def base_model(model: nn.Module) -> nn.Module:
    """The bare encoder inside ``model`` (a task model, our classifier, or the encoder itself)."""
    inner = getattr(model, "base_model", None)
    if isinstance(inner, nn.Module) and inner is not model:
        return base_model(inner)
    return model


def adapter_for(model: nn.Module) -> Adapter:
    """The adapter of ``model``'s family; an unsupported family gets an error naming the supported ones."""
    config = getattr(base_model(model), "config", None)
    family = getattr(config, "model_type", None)
    if family not in ADAPTERS:
        raise UnsupportedModelError(
            f"unsupported model family {family!r}; supported: {', '.join(sorted(ADAPTERS))}"
        )
    return ADAPTERS[family]


def encoder_layers(model: nn.Module) -> nn.ModuleList:
    """The encoder's list of layers."""
    return base_model(model).get_submodule(adapter_for(model).layers)


def head_shape(model: nn.Module) -> tuple[int, int]:
    """``(layers, heads)`` of the model as built, before any pruning.

    >>> from transformers import BertConfig, BertModel
    >>> head_shape(BertModel(BertConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32)))
    (2, 4)
    """
    config = base_model(model).config
    return len(encoder_layers(model)), int(config.num_attention_heads)


def kept_heads(model: nn.Module, layer: int) -> list[int]:
    """Original indices of the heads still present in ``layer``, in the order their slices are stored."""
    attn = encoder_layers(model)[layer].get_submodule(adapter_for(model).attn)
    kept = getattr(attn, "headprune_kept", None)
    return list(kept) if kept is not None else list(range(head_shape(model)[1]))


def present_mask(model: nn.Module) -> torch.Tensor:
    """``(layers, heads)`` mask with 1 for heads physically present, 0 for pruned ones."""
    n_layers, n_heads = head_shape(model)
    mask = torch.zeros(n_layers, n_heads)
    for layer in range(n_layers):
        mask[layer, kept_heads(model, layer)] = 1.0
    return mask


def head_dim(model: nn.Module) -> int:
    config = base_model(model).config
    return int(config.hidden_size // config.num_attention_heads) if hasattr(config, "hidden_size") \
        else int(config.dim // config.n_heads)


def check_mask(model: nn.Module, mask: torch.Tensor) -> None:
    """Raise a clear error if ``mask`` does not have the model's ``(layers, heads)`` shape."""
    shape = head_shape(model)
    if tuple(mask.shape) != shape:
        raise ValueError(f"head mask has shape {tuple(mask.shape)}, but the model has {shape} (layers, heads)")


_SCOPES: contextvars.ContextVar[frozenset] = contextvars.ContextVar("headprune_hook_scopes", default=frozenset())


@contextlib.contextmanager
def _hook_scope() -> Iterator[object]:
    """A token that is active only in this thread (context) and only inside the block."""
    token = object()
    reset = _SCOPES.set(_SCOPES.get() | {token})
    try:
        yield token
    finally:
        _SCOPES.reset(reset)


def _scoped(token: object, hook):
    """``hook`` acting only on forward passes run inside the scope that registered it.

    Hooks are global state on a module: without this, a forward pass of another thread (another dashboard
    session sharing the cached model) would be gated by this call's mask while its block is open.
    """
    def scoped(*args, **kwargs):
        return hook(*args, **kwargs) if token in _SCOPES.get() else None
    return scoped


@contextlib.contextmanager
def scoped_hooks(hooks: list[tuple[Callable, Callable, dict]]) -> Iterator[None]:
    """Register each ``(register, hook, options)`` (e.g. ``(module.register_forward_hook, hook, {})``) for the
    block: the hooks act only on forward passes this thread runs inside it (:func:`_scoped`) and are removed on
    exit, also after an exception, so a shared (cached) model is never left hooked."""
    with _hook_scope() as token:
        handles = []
        try:
            for register, hook, options in hooks:
                handles.append(register(_scoped(token, hook), **options))
            yield
        finally:
            for h in handles:
                h.remove()


@contextlib.contextmanager
def head_gates(model: nn.Module, mask: torch.Tensor) -> Iterator[torch.Tensor]:
    """Scale each head's output by ``mask[layer, head]`` for every forward pass inside the block.

    ``mask`` is ``(layers, heads)``, 1 = keep, 0 = off; values in between scale the head. If it requires grad,
    ``mask.grad`` receives d loss / d gate after ``backward()``. Hooks are removed on exit, also after an
    exception, so a shared (cached) model is never left gated. The gates act only on forward passes run by
    this thread inside the block: other threads using the same model at the same time are not gated.

    >>> from transformers import BertConfig, BertModel
    >>> m = BertModel(BertConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32)).eval()
    >>> with head_gates(m, torch.ones(2, 4)):
    ...     out = m(torch.tensor([[1, 2, 3]])).last_hidden_state
    """
    check_mask(model, mask)
    adapter = adapter_for(model)
    hooks = []
    for i, layer in enumerate(encoder_layers(model)):
        kept = kept_heads(model, i)
        if kept:  # else nothing is left to gate in this layer
            hooks.append((layer.get_submodule(adapter.out).register_forward_pre_hook, _gate_hook(mask, i, kept), {}))
    with scoped_hooks(hooks):
        yield mask


def _gate_hook(mask: torch.Tensor, layer: int, kept: list[int]):
    index = torch.tensor(kept, dtype=torch.long)

    def hook(module: nn.Module, args: tuple) -> tuple:
        x = args[0]  # (batch, seq, heads * head_dim)
        n = len(kept)
        gate = mask[layer].to(x.device).index_select(0, index.to(x.device)).to(x.dtype)  # (heads,)
        shaped = x.view(*x.shape[:-1], n, x.shape[-1] // n)  # (batch, seq, heads, head_dim)
        gated = (shaped * gate.view(*([1] * (shaped.dim() - 2)), n, 1)).view(x.shape)
        return (gated, *args[1:])

    return hook


@contextlib.contextmanager
def captured_io(modules: list[nn.Module]) -> Iterator[dict[int, tuple[torch.Tensor, torch.Tensor]]]:
    """``{id(module): (input, output)}`` of each module's last forward pass run by this thread inside the block
    (the input detached, the output as it is, for gradients). Hooks are scoped like :func:`head_gates`: other
    threads using the same (shared) model are not captured, and the hooks are removed on exit."""
    seen: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def hook(module, args, output):
        seen[id(module)] = (args[0].detach(), output)

    with scoped_hooks([(m.register_forward_hook, hook, {}) for m in modules]):
        yield seen


class _EmptyAttention(nn.Module):
    """Stands in for an attention module whose layer lost every head.

    It keeps the (now zero-width) projections under their original names, so the state dict keeps its keys, and
    returns a zero-width context, or the output projection's bias if the projection lives inside this module.
    """

    def __init__(self, children: dict[str, nn.Module], out_name: str | None):
        super().__init__()
        for name, child in children.items():
            self.add_module(name, child)
        self.out_name = out_name
        self.headprune_kept: list[int] = []

    def forward(self, hidden_states: torch.Tensor, *args, **kwargs):
        context = hidden_states.new_zeros(*hidden_states.shape[:-1], 0)  # (batch, seq, 0)
        if self.out_name is not None:
            context = getattr(self, self.out_name)(context)  # (batch, seq, hidden) = bias
        return context, None


def prune_heads(model: nn.Module, mask: torch.Tensor) -> nn.Module:
    """Physically remove every head whose ``mask`` entry is 0; return the same (modified) model.

    ``mask`` has the original ``(layers, heads)`` shape, also when the model was pruned before: entries of heads
    already removed are ignored. A layer may lose every head: it then adds only the output projection's bias.

    >>> from transformers import BertConfig, BertModel
    >>> m = BertModel(BertConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32))
    >>> mask = torch.ones(2, 4); mask[0, 1] = 0
    >>> prune_heads(m, mask).encoder.layer[0].attention.self.num_attention_heads
    3
    """
    check_mask(model, mask)
    adapter = adapter_for(model)
    size = head_dim(model)
    for i, layer in enumerate(encoder_layers(model)):
        kept = kept_heads(model, i)
        keep_now = [h for h in kept if mask[i, h] != 0]
        if len(keep_now) == len(kept):
            continue
        positions = [kept.index(h) for h in keep_now]  # where each surviving head's slice sits now
        index = torch.tensor(
            [p * size + j for p in positions for j in range(size)], dtype=torch.long,
            device=layer.get_submodule(adapter.query).weight.device,
        )
        for path, dim in ((adapter.query, 0), (adapter.key, 0), (adapter.value, 0), (adapter.out, 1)):
            parent_path, _, name = path.rpartition(".")
            parent = layer.get_submodule(parent_path)
            with warnings.catch_warnings():  # zero-width layers warn that initialising them is a no-op
                warnings.simplefilter("ignore", UserWarning)
                setattr(parent, name, prune_linear_layer(getattr(parent, name), index, dim=dim))
        attn = layer.get_submodule(adapter.attn)
        if keep_now:
            setattr(attn, adapter.heads_attr, len(keep_now))
            if adapter.all_head_size_attr:
                setattr(attn, adapter.all_head_size_attr, len(keep_now) * size)
            attn.headprune_kept = keep_now
        else:
            _replace_with_empty(layer, adapter)
    return model


def _replace_with_empty(layer: nn.Module, adapter: Adapter) -> None:
    attn = layer.get_submodule(adapter.attn)
    prefix = adapter.attn + "."
    names = [p[len(prefix):] for p in (adapter.query, adapter.key, adapter.value, adapter.out)
             if p.startswith(prefix)]
    out_name = adapter.out[len(prefix):] if adapter.out.startswith(prefix) else None
    empty = _EmptyAttention({n: attn.get_submodule(n) for n in names}, out_name)
    parent_path, _, name = adapter.attn.rpartition(".")
    setattr(layer.get_submodule(parent_path) if parent_path else layer, name, empty)


def count_parameters(model: nn.Module) -> int:
    """Number of parameters (what physical pruning shrinks)."""
    return sum(p.numel() for p in model.parameters())


def attention_probs(model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    **encoder_kwargs) -> list[torch.Tensor]:
    """Each layer's attention probabilities, ``(batch, kept heads, seq, seq)``, for one forward pass.

    Recomputed from the query/key projections of each layer's input, so it works with any attention
    implementation (sdpa returns no weights) and never changes the shared model's settings. Padding keys get
    probability 0. Heads of a pruned model appear in ``kept_heads`` order.
    """
    adapter = adapter_for(model)
    layers = encoder_layers(model)
    inputs: dict[int, torch.Tensor] = {}

    def capture(i):
        def hook(module, args, kwargs):
            inputs[i] = (args[0] if args else kwargs["hidden_states"]).detach()
        return hook

    hooks = [(layer.get_submodule(adapter.attn).register_forward_pre_hook, capture(i), {"with_kwargs": True})
             for i, layer in enumerate(layers)]
    with scoped_hooks(hooks), torch.no_grad():
        base_model(model)(input_ids=input_ids, attention_mask=attention_mask, **encoder_kwargs)
    size = head_dim(model)
    pad = (attention_mask == 0)[:, None, None, :]  # (batch, 1, 1, seq)
    probs = []
    with torch.no_grad():
        for i, layer in enumerate(layers):
            x = inputs[i].float()  # (batch, seq, hidden)
            n = len(kept_heads(model, i))
            if n == 0:
                probs.append(x.new_zeros(x.shape[0], 0, x.shape[1], x.shape[1]))
                continue
            q = layer.get_submodule(adapter.query).float()(x).view(*x.shape[:2], n, size).transpose(1, 2)
            k = layer.get_submodule(adapter.key).float()(x).view(*x.shape[:2], n, size).transpose(1, 2)
            scores = (q @ k.transpose(-1, -2)) * size ** -0.5  # (batch, heads, seq, seq)
            probs.append(scores.masked_fill(pad, float("-inf")).softmax(-1))
    return probs


def pruned_copy(model: nn.Module, mask: torch.Tensor) -> nn.Module:
    """A deep copy of ``model`` with the masked heads physically removed (the original is untouched)."""
    return prune_heads(copy.deepcopy(model), mask)
