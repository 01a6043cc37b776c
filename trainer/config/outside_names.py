"""Outside trainers' config names (TRL's GRPOConfig, verl's dotted config) -> this config's dotted paths.

An outside run (webapp/ingest) stores its trainer's config as that trainer wrote it: TRL's flat
``{"beta": 0.04, "learning_rate": 1e-6}``, verl's nested ``actor_rollout_ref.actor.optim.lr``. To compare it
with a native run (the compare page's config diff, the runs table's columns), each known name is read as
the native path it means (``beta`` -> ``algorithm.beta``) and its value in the native form (verl's
``reinforce_plus_plus`` -> ``reinforce_pp``); names with no native counterpart keep their own name. The raw
config stays stored as sent (the run page shows it); only the views that compare read it through this table.

A name is listed only where the meaning is the same; a native default is never filled in for a name the
outside trainer did not send (TRL's client sends only the fields set away from TRL's defaults).

Pure data and small functions: no torch, no pydantic, so the web process reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

V = TypeVar("V")


@dataclass(frozen=True)
class OutsideName:
    native: str  # the native dotted path (``algorithm.beta``)
    convert: Callable[[Any], Any] | None = None  # outside value -> native value; None: the same value


def _engine(use_vllm: Any) -> Any:
    return ("vllm" if use_vllm else "hf") if isinstance(use_vllm, bool) else use_vllm


def _vllm_mode(mode: Any) -> Any:
    return "colocated" if mode == "colocate" else mode


def _scale_rewards(value: Any) -> Any:
    """TRL before 0.22 took a bool: True divides by the group's std, False not at all."""
    return ("group" if value else "none") if isinstance(value, bool) else value


def _top_k(value: Any) -> Any:
    """TRL and verl switch top-k off with None / -1; this config with 0."""
    return 0 if value is None or value == -1 else value


def _one_of(table: Mapping[Any, Any]) -> Callable[[Any], Any]:
    return lambda value: table.get(value, value) if isinstance(value, str | bool) else value


# TRL's GRPOConfig (and TrainingArguments) fields with the same meaning here.
TRL_NAMES: dict[str, OutsideName] = {
    "model_name_or_path": OutsideName("model.name_or_path"),  # added by the TRL client (rlvr_client/trl.py)
    "run_name": OutsideName("name"),
    "seed": OutsideName("seed"),
    "data_seed": OutsideName("data.data_seed"),
    "output_dir": OutsideName("checkpoint.output_dir"),
    "save_steps": OutsideName("checkpoint.save_steps"),
    "save_total_limit": OutsideName("checkpoint.save_total_limit"),
    "gradient_checkpointing": OutsideName("model.gradient_checkpointing"),
    "use_vllm": OutsideName("rollout.engine", _engine),
    "vllm_mode": OutsideName("rollout.vllm_mode", _vllm_mode),
    "vllm_gpu_memory_utilization": OutsideName("rollout.vllm_gpu_memory_utilization"),
    "num_generations": OutsideName("rollout.num_generations"),
    "max_completion_length": OutsideName("rollout.max_completion_length"),
    "temperature": OutsideName("rollout.temperature"),
    "top_p": OutsideName("rollout.top_p"),
    "top_k": OutsideName("rollout.top_k", _top_k),
    "generation_batch_size": OutsideName("rollout.generation_batch_size"),
    "beta": OutsideName("algorithm.beta"),
    "epsilon": OutsideName("algorithm.epsilon"),
    "epsilon_high": OutsideName("algorithm.epsilon_high"),
    "num_iterations": OutsideName("algorithm.num_iterations"),
    "loss_type": OutsideName("algorithm.loss_type.name"),  # the same four names: grpo, bnpo, dr_grpo, dapo
    "importance_sampling_level": OutsideName("algorithm.importance_sampling_level.name"),
    "scale_rewards": OutsideName("algorithm.advantage_estimator.params.scale_rewards", _scale_rewards),
    "top_entropy_quantile": OutsideName("algorithm.token_credit.params.quantile"),
    "mask_truncated_completions": OutsideName("algorithm.mask_truncated_completions"),
    "reward_weights": OutsideName("algorithm.reward_weights"),
    "vllm_importance_sampling_cap": OutsideName("training.importance_cap"),
    "max_steps": OutsideName("training.max_steps"),
    "learning_rate": OutsideName("training.learning_rate"),
    "weight_decay": OutsideName("training.weight_decay"),
    "adam_beta1": OutsideName("training.adam_beta1"),
    "adam_beta2": OutsideName("training.adam_beta2"),
    "max_grad_norm": OutsideName("training.max_grad_norm"),
    "warmup_steps": OutsideName("training.warmup_steps"),
}

# verl's config as dotted paths (ppo_trainer.yaml). Where two names give one native path, the first one the
# run sent wins (clip_ratio_low refines clip_ratio).
_ACTOR = "actor_rollout_ref.actor"
_ROLLOUT = "actor_rollout_ref.rollout"
VERL_NAMES: dict[str, OutsideName] = {
    "actor_rollout_ref.model.path": OutsideName("model.name_or_path"),
    "actor_rollout_ref.model.enable_gradient_checkpointing": OutsideName("model.gradient_checkpointing"),
    "actor_rollout_ref.model.lora_rank": OutsideName("model.lora_r"),
    "actor_rollout_ref.model.lora_alpha": OutsideName("model.lora_alpha"),
    "trainer.experiment_name": OutsideName("name"),
    "data.seed": OutsideName("data.data_seed"),
    "data.train_batch_size": OutsideName("training.prompts_per_step"),  # prompts per step, as here
    "data.max_response_length": OutsideName("rollout.max_completion_length"),
    "trainer.default_local_dir": OutsideName("checkpoint.output_dir"),
    "trainer.save_freq": OutsideName("checkpoint.save_steps"),
    "trainer.total_training_steps": OutsideName("training.max_steps"),
    f"{_ROLLOUT}.name": OutsideName("rollout.engine"),
    f"{_ROLLOUT}.gpu_memory_utilization": OutsideName("rollout.vllm_gpu_memory_utilization"),
    f"{_ROLLOUT}.n": OutsideName("rollout.num_generations"),
    f"{_ROLLOUT}.temperature": OutsideName("rollout.temperature"),
    f"{_ROLLOUT}.top_p": OutsideName("rollout.top_p"),
    f"{_ROLLOUT}.top_k": OutsideName("rollout.top_k", _top_k),
    "algorithm.adv_estimator": OutsideName(
        "algorithm.advantage_estimator.name", _one_of({"reinforce_plus_plus": "reinforce_pp"})
    ),
    "algorithm.norm_adv_by_std_in_grpo": OutsideName(
        "algorithm.advantage_estimator.params.scale_rewards", _one_of({True: "group", False: "none"})
    ),
    f"{_ACTOR}.kl_loss_coef": OutsideName(
        "algorithm.beta"
    ),  # the KL in the loss (use_kl_loss), as GRPO's beta
    f"{_ACTOR}.kl_loss_type": OutsideName(
        "algorithm.kl_estimator.name", _one_of({"low_var_kl": "k3", "kl": "k1"})
    ),
    f"{_ACTOR}.clip_ratio_low": OutsideName("algorithm.epsilon"),
    f"{_ACTOR}.clip_ratio": OutsideName("algorithm.epsilon"),
    f"{_ACTOR}.clip_ratio_high": OutsideName("algorithm.epsilon_high"),
    f"{_ACTOR}.clip_ratio_c": OutsideName("algorithm.dual_clip_c"),
    f"{_ACTOR}.ppo_epochs": OutsideName("algorithm.num_iterations"),
    f"{_ACTOR}.loss_agg_mode": OutsideName(
        "algorithm.loss_type.name",
        _one_of({"token-mean": "dapo", "seq-mean-token-mean": "grpo", "seq-mean-token-sum-norm": "dr_grpo"}),
    ),
    f"{_ACTOR}.optim.lr": OutsideName("training.learning_rate"),
    f"{_ACTOR}.optim.weight_decay": OutsideName("training.weight_decay"),
    f"{_ACTOR}.optim.lr_warmup_steps": OutsideName("training.warmup_steps"),
    f"{_ACTOR}.grad_clip": OutsideName("training.max_grad_norm"),
}

NAMES_BY_SOURCE: dict[str, dict[str, OutsideName]] = {"trl": TRL_NAMES, "verl": VERL_NAMES}

# Paths that differ from run to run whatever was trained (where it wrote, what it was called, which seed
# repeated it): a sweep's table does not offer them as its "differing" columns by default. Native paths and
# outside names that have none.
PER_RUN_PATHS = frozenset({
    "name", "seed", "data.data_seed", "checkpoint.output_dir",
    "logging_dir", "hub_model_id", "trainer.project_name", "trainer.rollout_data_dir",
    "trainer.validation_data_dir",
})  # fmt: skip


def native_paths(flat: Mapping[str, V], source: str) -> tuple[dict[str, Any], dict[str, str]]:
    """``flat`` (a config as dotted paths) with a ``source`` trainer's known names read as native paths, and
    native path -> the outside name it was read from. Sources with no table (native, script, import) come
    back unchanged.

    >>> native_paths({"beta": 0.04, "num_train_epochs": 1}, "trl")
    ({'algorithm.beta': 0.04, 'num_train_epochs': 1}, {'algorithm.beta': 'beta'})
    """
    table = NAMES_BY_SOURCE.get(source)
    if not table:
        return dict(flat), {}
    out: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for name, value in flat.items():
        known = table.get(name)
        if known is None:
            out.setdefault(name, value)
            continue
        if known.native in origin and list(table).index(origin[known.native]) < list(table).index(name):
            continue  # a more precise name of the same path was sent (clip_ratio_low over clip_ratio)
        out[known.native] = known.convert(value) if known.convert is not None else value
        origin[known.native] = name
    return out, origin
