"""FSDP2 sharding for data-parallel runs (``training.fsdp``; issue 8 part 1).

With ``training.fsdp`` every rank holds 1/N of the policy's parameters, gradients and AdamW state
(``torch.distributed.fsdp.fully_shard``, ZeRO-3 style), for models that do not fit one device. What stays
the same as plain data parallelism (trainer/distributed/context.py):

* gradients are SUMMED over ranks, not averaged: the loss normalisers are already global, so each rank's
  loss is its share of the global loss. FSDP's reduce-scatter is set to divide by 1 with a plain SUM
  (``set_force_sum_reduction_for_comms``: gloo has no PREMUL_SUM, and NCCL's SUM is the zero-copy one).
  Gradients are reduce-scattered after every micro-batch's backward and accumulate in the sharded
  ``.grad``; that costs one reduce-scatter per micro-batch (plain DP: one all-reduce per step) and keeps
  gradient memory at 1/N.
* checkpoints hold FULL state dicts in exactly the plain format (safetensors via ``save_pretrained``, the
  ``torch.optim.Optimizer.state_dict()`` layout keyed by parameter index), gathered by every rank and
  written by rank 0, so an FSDP checkpoint resumes with or without FSDP, on any number of ranks, and exports.

Every collective here must be entered by every rank the same number of times: forwards and backwards in
the update (equal shares of the groups give equal micro-batch counts, so the micro-batch size must be the
same on every rank) and ``gathered`` around generation (where the number of decoding steps differs).

How this differs from torchtitan / TRL's FSDP setups: no mixed-precision policy (parameters keep
``model.dtype`` and gradients reduce in it), no CPU offload, and the reference model is sharded forward-only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar
from weakref import WeakKeyDictionary

import torch
from torch import nn

if TYPE_CHECKING:
    from torch.distributed.fsdp import FSDPModule

ModuleT = TypeVar("ModuleT", bound=nn.Module)

# Each FSDP unit's reshard-after-forward setting, restored after ``gathered`` (FSDP has no getter for it).
_RESHARD_AFTER_FORWARD: WeakKeyDictionary[object, bool] = WeakKeyDictionary()
_GATHERED: WeakKeyDictionary[nn.Module, bool] = WeakKeyDictionary()  # models inside ``gathered`` now


def decoder_layers(model: nn.Module) -> list[nn.Module]:
    """The transformer blocks, each to become one FSDP unit (all-gathered and freed on its own).

    Generic over architectures: the ``nn.ModuleList`` of same-class modules that holds the most parameters
    (``model.model.layers`` in Llama / Qwen, ``transformer.h`` in GPT-2; a per-layer list of MoE experts
    holds fewer parameters than the list of layers around it). Falls back to every module whose class name
    ends with ``DecoderLayer``. Empty when neither exists: the root unit then shards everything at once.
    """
    best: list[nn.Module] = []
    best_size = 0
    for module in model.modules():
        if not isinstance(module, nn.ModuleList) or len(module) == 0:
            continue
        children = list(module)
        if len({type(c) for c in children}) != 1:
            continue
        size = sum(p.numel() for c in children for p in c.parameters())
        if size > best_size:
            best, best_size = children, size
    if best:
        return best
    return [m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")]


def shard_model(model: ModuleT, device_type: str, forward_only: bool = False) -> ModuleT:
    """Shard ``model`` in place over all ranks of the process group: each decoder layer, then the root
    (embeddings, final norm, LM head). Parameters on the CPU move to ``device_type`` shard by shard, so a
    model loaded on the CPU never needs to fit one accelerator whole. Returns the same object (its class
    becomes ``FSDP<Class>``; ``save_pretrained`` strips that prefix again).

    Layers free their gathered parameters after each forward. The root keeps its gathered after a forward
    (the backward needs the LM head at once and the embeddings last) and frees them after the backward,
    unless the model is ``forward_only`` (the KL reference), which has no backward to free them.
    """
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device_type, (dist.get_world_size(),))
    for layer in decoder_layers(model):
        fully_shard(layer, mesh=mesh, reshard_after_forward=True)
        _RESHARD_AFTER_FORWARD[layer] = True
    fully_shard(model, mesh=mesh, reshard_after_forward=forward_only)
    _RESHARD_AFTER_FORWARD[model] = forward_only
    for unit in _units(model):
        unit.set_gradient_divide_factor(1.0)  # sum, not average: our loss normalisers are already global
        unit.set_force_sum_reduction_for_comms(True)
    return model


def is_sharded(model: nn.Module) -> bool:
    """Whether ``model`` was sharded by ``shard_model`` (its parameters are then DTensors)."""
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


def _units(model: nn.Module) -> list[FSDPModule]:
    from torch.distributed.fsdp import FSDPModule

    return [m for m in model.modules() if isinstance(m, FSDPModule)]


def full_tensor(t: torch.Tensor) -> torch.Tensor:
    """A plain tensor from a DTensor (e.g. the gradient norm of sharded gradients: a collective, so every
    rank calls it), or ``t`` unchanged."""
    from torch.distributed.tensor import DTensor

    return t.full_tensor() if isinstance(t, DTensor) else t


@contextmanager
def gathered(model: nn.Module) -> Iterator[None]:
    """All-gather a sharded model's parameters once for a block of forwards, instead of once per forward:
    the hf engine runs one forward per generated token, and ranks decode different numbers of tokens, so
    per-forward all-gathers would also deadlock; the no-grad logprob passes (old policy, reference) run one
    forward per micro-batch.

    Memory: every rank holds the full parameters (one copy in ``model.dtype``, as a plain data-parallel rank
    does) on top of its shard for the duration of the block; they are freed on exit. A no-op for an
    unsharded model. Not for blocks with a backward: gradients are reduce-scattered per unit in backward.
    """
    if not is_sharded(model) or model in _GATHERED:  # nested: the outer block gathered and will free
        yield
        return
    units = _units(model)
    for unit in units:
        unit.set_reshard_after_forward(False, recurse=False)
        unit.unshard()  # collective: every rank enters here together
    _GATHERED[model] = True
    try:
        yield
    finally:
        del _GATHERED[model]
        for unit in units:
            unit.set_reshard_after_forward(_RESHARD_AFTER_FORWARD.get(unit, True), recurse=False)
            unit.reshard()


def _param_names(model: nn.Module) -> dict[int, list[str]]:
    """``id(parameter)`` -> every name it has in ``model`` (tied embeddings have two)."""
    names: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), []).append(name)
    return names


def _full_options() -> Any:
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    return StateDictOptions(full_state_dict=True, cpu_offload=True)


def full_model_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """The unsharded weights on the CPU, on rank 0 (empty elsewhere). Every rank must call it.

    Tied weights (input embeddings = LM head) come back as two copies; they are made one tensor under both
    names again, as in ``model.state_dict()``, so ``save_pretrained`` drops the alias as it does unsharded.
    """
    from torch.distributed.checkpoint.state_dict import get_model_state_dict

    weights = {
        k: v
        for k, v in get_model_state_dict(model, options=_full_options()).items()
        if isinstance(v, torch.Tensor)
    }
    for names in _param_names(model).values():
        present = [n for n in names if n in weights]
        for alias in present[1:]:
            weights[alias] = weights[present[0]]
    return weights


def full_optimizer_state_dict(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The unsharded optimizer state on rank 0 (empty elsewhere), in ``Optimizer.state_dict()``'s own layout
    (parameters by index), so a 1-process run loads it with ``load_state_dict``. Every rank must call it."""
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    named: dict[str, Any] = dict(get_optimizer_state_dict(model, optimizer, options=_full_options()))
    if not named:
        return {}
    state: dict[int, Any] = {}
    groups: list[dict[str, Any]] = []
    for slots, saved in zip(_param_slots(model, optimizer), named["param_groups"], strict=True):
        for index, aliases in slots:
            name = next((n for n in aliases if n in named["state"]), None)
            if name is not None:
                state[index] = named["state"][name]
        groups.append({**_hyperparameters(saved), "params": [index for index, _ in slots]})
    return {"state": state, "param_groups": groups}


def _param_slots(model: nn.Module, optimizer: torch.optim.Optimizer) -> list[list[tuple[int, list[str]]]]:
    """Per parameter group, each parameter's (index in ``Optimizer.state_dict()``'s layout, its names)."""
    names = _param_names(model)
    slots: list[list[tuple[int, list[str]]]] = []
    index = 0
    for group in optimizer.param_groups:
        slots.append([(index + i, names[id(p)]) for i, p in enumerate(group["params"])])
        index += len(group["params"])
    return slots


def _hyperparameters(group: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in group.items() if k != "params"}


def load_full_optimizer_state_dict(
    model: nn.Module, optimizer: torch.optim.Optimizer, saved: dict[str, Any]
) -> None:
    """Load a full optimizer state in ``Optimizer.state_dict()`` layout (from any checkpoint, sharded or not)
    into the optimizer of a sharded model: every rank passes the whole state and keeps its own shard."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

    state: dict[str, Any] = {}
    groups: list[dict[str, Any]] = []
    for slots, saved_group in zip(_param_slots(model, optimizer), saved["param_groups"], strict=True):
        for index, aliases in slots:
            if index in saved["state"]:
                state[aliases[0]] = saved["state"][index]
        groups.append({**_hyperparameters(saved_group), "params": [aliases[0] for _, aliases in slots]})
    set_optimizer_state_dict(
        model,
        optimizer,
        optim_state_dict={"state": state, "param_groups": groups},
        options=StateDictOptions(full_state_dict=True),
    )
    for group, saved_group in zip(optimizer.param_groups, saved["param_groups"], strict=True):
        # the loader flattens tuples (AdamW's betas) into lists: keep the saved values as they were, so the
        # next checkpoint is the same as an unsharded run's
        group.update(_hyperparameters(saved_group))
