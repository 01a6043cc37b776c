"""Sampling for the Tinker API: the hf rollout engine over live weights, saved weights or a base model.

Sampling goes through the engine the training step uses (trainer/rollout/hf_engine.py ``generate_from_ids``),
so a sequence's logprobs are the ones the trainer's scoring gives the same tokens (at temperature 1 they are
the ``q`` an ``importance_sampling`` datum expects, and the first ratio is 1 up to float rounding).

Tinker's stop semantics map onto the engine: stop strings end a sequence at the token that completes one (the
engine's stop strings); stop token ids replace the EOS set for the call; an empty list empties it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from transformers import AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from trainer.errors import CheckpointError, ConfigError
from trainer.models.device import resolve_device, resolve_dtype
from trainer.models.lora import load_causal_lm
from trainer.models.tiny_model import resolve_model_path
from trainer.rollout.base import SamplingParams
from trainer.rollout.hf_engine import HFRolloutEngine
from trainer.training_api.limits import ApiInputError, ApiLimits, validate_sample_request
from trainer.training_api.scoring import score_rows
from trainer.training_api.types import ApiSampling, SampledSequence, SampleResult, StopReason


def vocab_size(model: PreTrainedModel) -> int:
    """The size of the model's output distribution: every token id must be below it."""
    return int(model.get_output_embeddings().weight.shape[0])  # type: ignore[union-attr]


def check_token_ids(field: str, tokens: torch.Tensor, vocab: int) -> None:
    """Refuse token ids outside [0, vocab), naming the first offending position."""
    bad = ((tokens < 0) | (tokens >= vocab)).nonzero()
    if len(bad):
        pos = int(bad[0, 0])
        raise ApiInputError(
            f"{field}[{pos}]",
            f"token id {int(tokens[pos])} is outside this model's vocabulary (0..{vocab - 1}); tokenize with "
            "this model's tokenizer",
        )


def load_model_dir(path: str, dtype: str, device: torch.device, trainable: bool) -> PreTrainedModel:
    """A full model or a LoRA adapter directory, loaded as the trainer loads checkpoints, on ``device``."""
    if not Path(path).exists():
        raise ConfigError(
            f"model directory {path!r} does not exist: give a local Hugging Face checkpoint directory "
            "(nothing is downloaded) or a built-in model such as 'tiny:addition'"
        )
    try:
        model = load_causal_lm(path, resolve_dtype(dtype), trainable_adapter=trainable)
    except (OSError, ValueError) as err:
        raise ConfigError(f"could not load a causal LM from {path!r}: {err}") from None
    model.to(device)  # type: ignore[arg-type]  # modules move in place
    return model


class Sampler:
    """Samples continuations of token prompts from one model (the live policy of a session, or loaded weights)."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        generator: torch.Generator,
        limits: ApiLimits,
    ) -> None:
        self.model, self.tokenizer, self.generator, self.limits = model, tokenizer, generator, limits
        self.vocab = vocab_size(model)

    @classmethod
    def from_directory(
        cls,
        directory: str | Path,
        *,
        seed: int,
        limits: ApiLimits,
        device: str = "auto",
        dtype: str = "float32",
    ) -> Sampler:
        """A sampler over weights written by ``TrainingSession.save_weights`` (or any model directory)."""
        path = Path(directory)
        if not (path / "config.json").exists() and not (path / "adapter_config.json").exists():
            raise CheckpointError(
                f"{path} holds no saved weights (no config.json or adapter_config.json): save them with "
                "save_weights_for_sampler first"
            )
        return cls._load(str(path), seed=seed, limits=limits, device=device, dtype=dtype)

    @classmethod
    def from_base_model(
        cls, base_model: str, *, seed: int, limits: ApiLimits, device: str = "auto", dtype: str = "float32"
    ) -> Sampler:
        """A sampler over a base model: a local directory or a built-in ``tiny:<name>`` (built on first use)."""
        return cls._load(resolve_model_path(base_model), seed=seed, limits=limits, device=device, dtype=dtype)

    @classmethod
    def _load(cls, path: str, *, seed: int, limits: ApiLimits, device: str, dtype: str) -> Sampler:
        dev = resolve_device(device)
        model = load_model_dir(path, dtype, dev, trainable=False).eval()
        tokenizer = AutoTokenizer.from_pretrained(path)
        return cls(model, tokenizer, seeded_generator(seed, dev), limits)

    def sample(
        self, prompt: Sequence[int], num_samples: int, params: ApiSampling, prompt_logprobs: bool = False
    ) -> SampleResult:
        """``num_samples`` continuations of ``prompt``, each with its tokens' logprobs and why it stopped."""
        max_tokens = validate_sample_request(prompt, num_samples, params, self.limits)
        device = next(self.model.parameters()).device
        prompt_ids = torch.tensor(list(prompt), dtype=torch.long)
        check_token_ids("prompt", prompt_ids, self.vocab)
        engine = HFRolloutEngine(self.model, self.tokenizer)
        stop_strings: list[str] = []
        if params.stop is not None and all(isinstance(s, int) for s in params.stop):
            stop_ids = torch.tensor(list(params.stop), dtype=torch.long)
            check_token_ids("sampling_params.stop", stop_ids, self.vocab)
            engine.eos_ids = set(
                stop_ids.tolist()
            )  # token ids replace EOS for this call; [] never stops early
        elif params.stop is not None:
            stop_strings = [str(s) for s in params.stop]
        generator = self.generator if params.seed is None else seeded_generator(params.seed, device)
        sampling = SamplingParams(
            max_new_tokens=max_tokens,
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=0 if params.top_k == -1 else params.top_k,
            batch_size=num_samples,
        )
        batch = engine.generate_from_ids([list(prompt)] * num_samples, sampling, generator, stop=stop_strings)
        lengths = batch.completion_mask.sum(-1).tolist()
        sequences = [
            SampledSequence(
                tokens=batch.completion_ids[i, :n].tolist(),
                logprobs=batch.logprobs[i, :n].float().tolist(),
                stop_reason=_stop_reason(batch.finish_reasons[i]),
            )
            for i, n in enumerate(lengths)
        ]
        return SampleResult(sequences, self.prompt_logprobs(prompt_ids) if prompt_logprobs else None)

    @torch.no_grad()
    def prompt_logprobs(self, prompt_ids: torch.Tensor) -> list[float | None]:
        """Logprob of each prompt token given the ones before it; None for the first (nothing predicts it)."""
        if len(prompt_ids) < 2:
            return [None]
        rows = score_rows(
            self.model, [0], [prompt_ids[:-1]], [prompt_ids[1:]], int(engine_pad_id(self.tokenizer))
        )
        return [None, *rows.logp[0].float().tolist()]


def _stop_reason(finish_reason: str) -> StopReason:
    """The engine's "eos" / "stop" / "length" as Tinker's "stop" / "length"."""
    return "length" if finish_reason == "length" else "stop"


def engine_pad_id(tokenizer: PreTrainedTokenizerBase) -> int:
    """The pad id the hf engine pads with (EOS when the tokenizer has no pad token)."""
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    return int(pad) if pad is not None else 0


def seeded_generator(seed: int, device: torch.device) -> torch.Generator:
    """A generator on ``device`` (the engine samples there) seeded with ``seed``."""
    return torch.Generator(device=device).manual_seed(seed)
