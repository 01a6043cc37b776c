"""The plain values the Tinker-compatible API passes between the worker and a ``TrainingSession``.

Torch-free at import (tensors are named for the type checker only), so the web process can build and validate
them. Field names follow the Tinker SDK (0.38): ``Datum.loss_fn_inputs`` is ``ApiDatum.inputs``,
``AdamParams`` and ``SamplingParams`` keep the SDK's fields and defaults, a ``SampledSequence`` ends with
``stop_reason`` "stop" or "length".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Union

if TYPE_CHECKING:
    from torch import Tensor

InputValue = Union["Tensor", list[float], list[int]]  # a 1-D loss input: a tensor or a plain list
StopReason = Literal["stop", "length"]


@dataclass
class ApiDatum:
    """One training sequence: ``input_tokens`` [T] and Tinker's ``loss_fn_inputs`` (each [T]).

    ``inputs["target_tokens"][t]`` is the token predicted from ``input_tokens[: t + 1]`` (already shifted, as in
    Tinker); ``weights`` (cross_entropy), ``logprobs`` (the sampler's) and ``advantages`` (RL losses) align with it.
    """

    input_tokens: list[int]
    inputs: dict[str, InputValue] = field(default_factory=dict)


@dataclass
class ForwardResult:
    """Per datum ``logprobs`` [T] (of the target tokens) and ``elementwise_loss`` [T]; metrics such as ``loss:sum``."""

    outputs: list[dict[str, Tensor]]
    metrics: dict[str, float]


@dataclass(frozen=True)
class AdamParams:
    """AdamW hyperparameters of one ``optim_step`` (Tinker's ``AdamParams``, its defaults).

    ``weight_decay`` is decoupled (AdamW, Loshchilov & Hutter 2019); ``grad_clip_norm`` 0 means no clipping.
    """

    learning_rate: float = 1e-4
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-12
    weight_decay: float = 0.0
    grad_clip_norm: float = 0.0


@dataclass(frozen=True)
class ApiSampling:
    """Sampling parameters (Tinker's ``SamplingParams``).

    ``max_tokens`` None: up to ``ApiLimits.max_sample_tokens``. ``stop`` None: end at EOS; strings: also end at
    the token that completes one of them; token ids: end at those tokens instead of EOS; ``[]``: never end
    before ``max_tokens``. ``top_k`` -1: no limit. ``seed`` None: the session's own generator.
    """

    max_tokens: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    stop: list[str] | list[int] | None = None
    seed: int | None = None


@dataclass
class SampledSequence:
    """One completion: its tokens (the stop or EOS token that ended it included) and their logprobs."""

    tokens: list[int]
    logprobs: list[float]
    stop_reason: StopReason


@dataclass
class SampleResult:
    """``num_samples`` sequences; ``prompt_logprobs`` (None at position 0) when asked for."""

    sequences: list[SampledSequence]
    prompt_logprobs: list[float | None] | None = None
