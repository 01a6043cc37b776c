"""A diverged run: what stopped it, in the run's own figures, and how to fix it.

Three places notice NaN or infinity: the update (a non-finite loss or gradient norm before the optimizer
steps, or non-finite weights right after it: trainer/step/optimize.py ``NonFiniteUpdate``), and sampling, where
``torch.multinomial`` refuses probabilities that hold NaN/inf ("probability tensor contains either inf,
nan or element < 0") once the weights have blown up. A learning rate of 1e30, for instance, gives a
finite first step (gradient norm ~2) whose AdamW update moves every weight by ~1e30; the next
generation's probabilities are NaN. The loop (trainer/step/loop.py) turns each into ``TrainingDiverged``.
"""

from __future__ import annotations

import math

from trainer.config import ExperimentConfig

SAMPLING_ERROR = "probability tensor contains"  # torch.multinomial's message for NaN / inf / negative input

# Learning rates that usually train stably with AdamW (TRL's and the LoRA paper's usual ranges).
FULL_FINE_TUNING_LR = 1e-5  # top of 1e-6..1e-5
LORA_LR = 1e-4
USUAL_LR = "typical 1e-6..1e-5 for full fine-tuning, 1e-4 for LoRA"
FAR_TOO_HIGH = 100  # times the top of the usual range


def is_nan_sampling_error(err: BaseException) -> bool:
    return isinstance(err, RuntimeError) and SAMPLING_ERROR in str(err)


def divergence_message(
    config: ExperimentConfig, step: int, what: str, grad_norm: float | None, grad_norm_step: int | None = None
) -> str:
    """``Training diverged: the loss became nan at step 3 (grad norm inf before clipping): the learning
    rate 1e+30 is far too high ...; lower training.learning_rate (...)``; ``grad_norm_step`` is the step
    the norm is from when it is not ``step`` (sampling fails on the weights the previous update made)."""
    lr, lora = config.training.learning_rate, config.model.lora_r > 0
    text = f"Training diverged: {what} at step {step}"
    if grad_norm is not None:
        where = "" if grad_norm_step in (None, step) else f" at step {grad_norm_step}"
        text += f" (grad norm {_figure(grad_norm)} before clipping{where})"
    usual = LORA_LR if lora else FULL_FINE_TUNING_LR
    kind = f"{'LoRA' if lora else 'full fine-tuning'} of {config.model.name_or_path}"
    if lr > FAR_TOO_HIGH * usual:
        text += f": the learning rate {lr:g} is far too high for {kind}"
    else:
        text += f": the learning rate {lr:g} may be too high for {kind}, or the loss is numerically unstable"
    fixes = [f"lower training.learning_rate ({USUAL_LR})"]
    max_norm = config.training.max_grad_norm
    if max_norm > 0:
        fixes.append(f"keep training.max_grad_norm set (it is {max_norm:g})")
    else:
        fixes.append("set training.max_grad_norm (e.g. 1.0): gradient clipping is off")
    if config.model.dtype == "float16":
        fixes.append(
            "train in bfloat16 (model.dtype: bfloat16, or model.autocast_bf16): float16 overflows past 65504"
        )
    return f"{text}; {', '.join(fixes)}, then launch the run again."


def _figure(value: float) -> str:
    return f"{value:.3g}" if math.isfinite(value) else str(value)
