"""One Tinker model as a plain Python object: the worker holds a ``TrainingSession`` and calls it one request at a
time.

The pieces are the training step's own: the model and LoRA come from trainer/models (``resolve_model_path``,
``load_causal_lm``, ``apply_lora``), scoring from trainer/models/logprobs.py (through ``scoring.py``), PPO's clip
from trainer/methods/policy_losses.py, sampling from the hf rollout engine, and the optimizer is the step's
fused AdamW (trainer/step/run_setup.py). How it differs from the step: Tinker's client owns the loop, so
there is no rollout, reward or advantage here, gradients accumulate across ``forward_backward`` calls until
``optim_step``, and AdamW's hyperparameters arrive with every step (``AdamParams``), written into the param
groups before it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from transformers import AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from trainer.errors import CheckpointError, ConfigError, TrainingDiverged
from trainer.models.device import resolve_device
from trainer.models.lora import apply_lora, is_adapter_dir, is_lora_model
from trainer.models.tiny_model import resolve_model_path
from trainer.training_api.limits import (
    ApiInputError,
    ApiLimits,
    validate_adam,
    validate_create,
    validate_forward_request,
)
from trainer.training_api.losses import TINKER_LOSSES
from trainer.training_api.sampler import (
    Sampler,
    check_token_ids,
    engine_pad_id,
    load_model_dir,
    seeded_generator,
    vocab_size,
)
from trainer.training_api.scoring import left_pad, scored_micro_batches
from trainer.training_api.state import read_state, write_model_dir
from trainer.training_api.types import AdamParams, ApiDatum, ApiSampling, ForwardResult, SampleResult

# Thinking Machines' "LoRA Without Regret" (Schulman et al. 2025) trains with alpha = 32 and the 1/r scaling,
# which keeps the best learning rate nearly independent of the rank.
LORA_ALPHA = 32.0


def new_optimizer(model: PreTrainedModel) -> torch.optim.AdamW:
    """The training step's AdamW over the trainable parameters (fused, as in trainer/step/run_setup.py); the
    hyperparameters are placeholders until the first ``optim_step`` writes the client's."""
    return torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=0.0, fused=True)


class TrainingSession:
    """A model being trained through the Tinker API: forward, forward_backward, optim_step, sample, save, load."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        facts: dict[str, Any],
        limits: ApiLimits,
    ) -> None:
        self.model, self.tokenizer, self.limits = model, tokenizer, limits
        self.facts = facts  # base_model, base_path, lora_rank, seed, dtype: what a saved state must match
        self.device = next(model.parameters()).device
        self.optimizer = new_optimizer(model)
        self.generator = seeded_generator(int(facts["seed"]), self.device)
        self.sampler = Sampler(model, tokenizer, self.generator, limits)
        self.pad_id = engine_pad_id(tokenizer)
        self.steps = 0
        model.train()

    @classmethod
    def create(
        cls,
        *,
        base_model: str,
        lora_rank: int | None,
        seed: int,
        limits: ApiLimits,
        device: str = "auto",
        dtype: str = "float32",
    ) -> TrainingSession:
        """Load ``base_model`` (a local directory or a built-in ``tiny:<name>``, built on first use), with LoRA
        adapters of rank ``lora_rank`` (None: every weight trains), initialised from ``seed``."""
        validate_create(base_model, lora_rank, seed, limits)
        path = resolve_model_path(base_model)
        if is_adapter_dir(path):
            raise ConfigError(
                f"{base_model!r} is a LoRA adapter directory; give its base model (and a LoRA rank) or continue "
                "a saved training state with create_training_client_from_state"
            )
        model = load_model_dir(path, dtype, torch.device("cpu"), trainable=True)
        if lora_rank is not None:
            with torch.random.fork_rng(devices=[]):  # seeded adapter init, the process's RNG left alone
                torch.manual_seed(seed)
                model = apply_lora(
                    model, r=lora_rank, alpha=LORA_ALPHA, dropout=0.0, target_modules="all-linear"
                )
        model.to(resolve_device(device))  # type: ignore[arg-type]  # modules move in place
        facts = {
            "base_model": base_model,
            "base_path": path,
            "lora_rank": lora_rank,
            "seed": seed,
            "dtype": dtype,
        }
        return cls(model, AutoTokenizer.from_pretrained(path), facts, limits)

    @classmethod
    def from_state(cls, directory: str | Path, *, limits: ApiLimits, device: str = "auto") -> TrainingSession:
        """A session continued from ``save_state``: the same weights, optimizer moments, RNG and step count."""
        state = read_state(Path(directory))
        model, tokenizer = _load_saved(Path(directory), state["facts"], resolve_device(device))
        session = cls(model, tokenizer, dict(state["facts"]), limits)
        session._restore(state)
        return session

    # --- training ----------------------------------------------------------------------------------------

    def forward(
        self, data: Sequence[ApiDatum], loss_fn: str, loss_fn_config: Mapping[str, float] | None = None
    ) -> ForwardResult:
        """The loss and the target logprobs of ``data`` without touching gradients."""
        with torch.no_grad():
            return self._run(data, loss_fn, loss_fn_config, backward=False)

    def forward_backward(
        self, data: Sequence[ApiDatum], loss_fn: str, loss_fn_config: Mapping[str, float] | None = None
    ) -> ForwardResult:
        """As ``forward``, and add the loss's gradients to those accumulated since the last ``optim_step``."""
        return self._run(data, loss_fn, loss_fn_config, backward=True)

    def _run(
        self, data: Sequence[ApiDatum], loss_fn: str, config: Mapping[str, float] | None, backward: bool
    ) -> ForwardResult:
        resolved = validate_forward_request(data, loss_fn, config, self.limits)
        tokens, inputs = self._tensors(data)
        loss_of = TINKER_LOSSES.get(loss_fn)
        outputs: list[dict[str, Tensor]] = [{} for _ in data]
        total = 0.0
        for rows in scored_micro_batches(
            self.model, tokens, inputs["target_tokens"], self.pad_id, self.limits.micro_batch_tokens
        ):
            padded = {
                k: left_pad([v[i] for i in rows.index], 0.0, self.device)
                for k, v in inputs.items()
                if k != "target_tokens"
            }  # each [n, L]
            per_token = torch.where(rows.mask.bool(), loss_of(rows.logp, padded, resolved), 0.0)  # [n, L]
            loss = per_token.sum()
            if not math.isfinite(float(loss.detach())):
                self.optimizer.zero_grad(set_to_none=True)
                raise TrainingDiverged(
                    f"the {loss_fn} loss became {float(loss.detach()):g} at optimizer step {self.steps}; the "
                    "gradients accumulated since the last optim_step were dropped. Lower the learning rate, "
                    "set grad_clip_norm, or check the advantages and sampler logprobs for extreme values"
                )
            if backward:
                loss.backward()
            total += float(loss.detach())
            for row, i in enumerate(rows.index):
                n = len(data[i].input_tokens)
                outputs[i] = {
                    "logprobs": rows.row(row, n).detach().float().cpu(),
                    "elementwise_loss": per_token[row, per_token.shape[1] - n :].detach().float().cpu(),
                }
        return ForwardResult(outputs=outputs, metrics={"loss:sum": total})

    def _tensors(self, data: Sequence[ApiDatum]) -> tuple[list[Tensor], dict[str, list[Tensor]]]:
        """Each datum's input tokens and loss inputs as 1-D tensors, their values checked (ids, finite floats)."""
        vocab = vocab_size(self.model)
        tokens: list[Tensor] = []
        inputs: dict[str, list[Tensor]] = {k: [] for k in data[0].inputs}
        for i, datum in enumerate(data):
            ids = _as_1d(f"data[{i}].model_input", datum.input_tokens, integer=True)
            check_token_ids(f"data[{i}].model_input", ids, vocab)
            tokens.append(ids)
            for key, value in datum.inputs.items():
                field = f"data[{i}].loss_fn_inputs.{key}"
                tensor = _as_1d(field, value, integer=key == "target_tokens")
                if key == "target_tokens":
                    check_token_ids(field, tensor, vocab)
                elif not bool(torch.isfinite(tensor).all()):
                    raise ApiInputError(field, "holds NaN or infinite values; give finite numbers")
                inputs[key].append(tensor)
        return tokens, inputs

    def optim_step(self, adam: AdamParams) -> dict[str, float]:
        """One AdamW step on the accumulated gradients with ``adam``'s hyperparameters, then zero them.

        Returns the gradient norm before clipping; a NaN or infinite norm takes no step (``TrainingDiverged``).
        """
        validate_adam(adam)
        for group in self.optimizer.param_groups:
            group.update(
                lr=adam.learning_rate,
                betas=(adam.beta1, adam.beta2),
                eps=adam.eps,
                weight_decay=adam.weight_decay,
            )
        params = [p for p in self.model.parameters() if p.grad is not None]
        max_norm = adam.grad_clip_norm if adam.grad_clip_norm > 0 else float("inf")
        norm = float(torch.nn.utils.clip_grad_norm_(params, max_norm)) if params else 0.0
        if not math.isfinite(norm):
            self.optimizer.zero_grad(set_to_none=True)
            raise TrainingDiverged(
                f"the gradient norm became {norm:g} at optimizer step {self.steps}; no step was taken and the "
                "gradients were dropped. Lower the learning rate or set grad_clip_norm"
            )
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.steps += 1
        return {
            "grad_norm:mean": norm,
            "learning_rate:mean": adam.learning_rate,
            "step:max": float(self.steps),
        }

    # --- sampling and saving -----------------------------------------------------------------------------

    def sample(
        self, prompt: Sequence[int], num_samples: int, params: ApiSampling, prompt_logprobs: bool = False
    ) -> SampleResult:
        """Sample from the current weights (Tinker's sampling client of a training client's live model)."""
        return self.sampler.sample(prompt, num_samples, params, prompt_logprobs)

    def save_weights(self, directory: str | Path) -> Path:
        """The weights (a LoRA adapter for a LoRA session) and tokenizer, for ``Sampler.from_directory``."""
        return write_model_dir(Path(directory), self.model, self.tokenizer)

    def save_state(self, directory: str | Path) -> Path:
        """Weights, optimizer moments, the sampling RNG and the step count, for ``load_state`` / ``from_state``.

        Gradients accumulated since the last ``optim_step`` are not saved (as in Tinker)."""
        state = {
            "facts": self.facts,
            "optimizer": self.optimizer.state_dict(),
            "generator": self.generator.get_state(),
            "steps": self.steps,
        }
        return write_model_dir(Path(directory), self.model, self.tokenizer, state)

    def load_state(self, directory: str | Path, *, with_optimizer: bool = True) -> None:
        """Replace this session's weights, RNG and step count with a saved state of the same model, and its
        optimizer moments too unless ``with_optimizer`` is False (Tinker's ``load_state`` loads the weights into a
        fresh optimizer, ``load_state_with_optimizer`` both)."""
        state = read_state(Path(directory))
        for key in ("base_path", "lora_rank"):
            if state["facts"].get(key) != self.facts.get(key):
                raise CheckpointError(
                    f"{directory} was saved from a session with {key} {state['facts'].get(key)!r}, this one has "
                    f"{self.facts.get(key)!r}: load it into a session of the same base model and LoRA rank, or "
                    "start a new one from it"
                )
        self.model, self.tokenizer = _load_saved(Path(directory), self.facts, self.device)
        self.model.train()
        self.optimizer = new_optimizer(self.model)
        self.sampler = Sampler(self.model, self.tokenizer, self.generator, self.limits)
        self._restore(state, with_optimizer)

    def _restore(self, state: dict[str, Any], with_optimizer: bool = True) -> None:
        if with_optimizer:
            self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"])
        self.steps = int(state["steps"])

    def info(self) -> dict[str, Any]:
        """What the server reports about the model (Tinker's get_info): names, LoRA rank, vocabulary, steps."""
        return {**self.facts, "vocab_size": vocab_size(self.model), "steps": self.steps}


def _load_saved(
    directory: Path, facts: Mapping[str, Any], device: torch.device
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A saved session's weights (full, or the adapter on its base) and tokenizer, trainable, on ``device``."""
    model = load_model_dir(str(directory), str(facts["dtype"]), device, trainable=True)
    if is_lora_model(model) != (facts["lora_rank"] is not None):
        raise CheckpointError(
            f"{directory} does not hold the kind of weights its state describes (LoRA rank "
            f"{facts['lora_rank']!r}); save it again with save_state"
        )
    return model, AutoTokenizer.from_pretrained(str(directory))


def _as_1d(field: str, value: object, *, integer: bool) -> Tensor:
    """A loss input or token list as a 1-D tensor: long for token ids (refusing fractional values), else float32."""
    try:
        tensor = value if isinstance(value, Tensor) else torch.tensor(value)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ApiInputError(field, f"is not a list of numbers ({err})") from None
    if tensor.dim() != 1:
        raise ApiInputError(field, f"must be 1-D (one value per token), got shape {list(tensor.shape)}")
    if integer:
        if tensor.is_floating_point() or tensor.is_complex() or tensor.dtype == torch.bool:
            raise ApiInputError(field, f"must hold integer token ids, got {tensor.dtype}")
        return tensor.to(torch.long)
    if tensor.dtype == torch.bool or tensor.is_complex():
        raise ApiInputError(field, f"must hold real numbers, got {tensor.dtype}")
    return tensor.to(torch.float32)
