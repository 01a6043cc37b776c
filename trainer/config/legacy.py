"""Flat method knobs of earlier versions (and TRL's names) moved into their method's ``{name, params}``.

Before methods owned their parameters, a config held them flat (``algorithm.ecr_strength``,
``budget.vigor_rounds``, ``shaping.overlong_buffer``...); TRL users write ``scale_rewards`` and
``top_entropy_quantile``. Those keys are still accepted: each is moved into the params of the method it
belongs to. A knob of a method the config did not choose is dropped when it holds that method's default
(saved configs of earlier versions list every field) and refused otherwise, with the line to write instead:
nothing is switched on or rewritten behind the user's back.
"""

from __future__ import annotations

from typing import Any

_MISSING = object()

# section class -> flat key -> (choice field, method name, param name, the old default)
_PARAMS: dict[str, dict[str, tuple[str, str, str, Any]]] = {
    "AlgorithmConfig": {
        "scale_rewards": ("advantage_estimator", "grpo", "scale_rewards", "group"),
        "advantage_eps": ("advantage_estimator", "grpo", "advantage_eps", 1e-4),
        "top_entropy_quantile": ("token_credit", "top_entropy", "quantile", 1.0),
        "ecr_strength": ("token_credit", "ecr", "strength", 1.0),
        "ecr_min_weight": ("token_credit", "ecr", "min_weight", 0.1),
        "gapo_max_scale": ("clip_mode", "gapo", "max_scale", 3.0),
        "segment_boundary_quantile": ("importance_sampling_level", "segment", "boundary_quantile", 0.9),
        "segment_min_tokens": ("importance_sampling_level", "segment", "min_tokens", 4),
        "segment_saliency_temperature": ("importance_sampling_level", "segment", "saliency_temperature", 1.0),
        "answer_span_pattern": ("loss_masks", "answer_span", "pattern", r"-?\d+(?:[.,/]\d+)*"),
    },
    "RolloutBudgetConfig": {
        "early_abandon_after": ("allocator", "early_abandon", "after", 4),
        "sara_probe": ("allocator", "sara", "probe", 2),
        "sara_step": ("allocator", "sara", "step", 2),
        "sara_abandon_below": ("allocator", "sara", "abandon_below", 0.2),
        "sara_commit_above": ("allocator", "sara", "commit_above", 0.8),
        "vigor_initial_rollouts": ("allocator", "vigor", "initial_rollouts", 4),
        "vigor_rollout_budget": ("allocator", "vigor", "rollout_budget", None),
        "vigor_increment": ("allocator", "vigor", "increment", 2),
        "vigor_rounds": ("allocator", "vigor", "rounds", 2),
        "prior_file": ("prompt_sampler", "beta_learnability", "prior_file", None),
        "prior_strength": ("prompt_sampler", "beta_learnability", "prior_strength", 8.0),
        "thompson": ("prompt_sampler", "beta_learnability", "thompson", True),
    },
    "TeacherConfig": {
        "opd_coef": ("fusion", "opd", "coef", 1.0),
        "opd_until_step": ("fusion", "opd", "until_step", None),
        "additive_coef": ("fusion", "additive", "coef", 0.1),
        "modulation_strength": ("fusion", "modulated", "strength", 1.0),
        "modulation_max": ("fusion", "modulated", "max", 2.0),
        "puu_coef": ("fusion", "puu", "coef", 0.1),
    },
    "ShapingConfig": {
        "majority_vote_combine": ("reward_shaping", "*label_free", "combine", "replace"),
        "majority_vote_weight": ("reward_shaping", "*label_free", "weight", 1.0),
        "overlong_penalty_factor": ("reward_shaping", "overlong_penalty", "factor", 1.0),
        "rarity_cue": ("advantage_shaping", "rarity", "cue", "answer_form"),
        "rarity_cue_pattern": ("advantage_shaping", "rarity", "cue_pattern", None),
        "rarity_strength": ("advantage_shaping", "rarity", "strength", 1.0),
    },
}
# Flat keys that switched a method of a list field on: key -> (list field, value -> method name or None (off),
# param that receives the value, or None)
_SWITCHES: dict[str, dict[str, tuple[str, Any, str | None]]] = {
    "AlgorithmConfig": {
        "answer_span_mask": ("loss_masks", lambda v: "answer_span" if v else None, None),
    },
    "ShapingConfig": {
        "label_free_reward": ("reward_shaping", lambda v: None if v == "none" else v, None),
        "overlong_buffer": ("reward_shaping", lambda v: "overlong_penalty" if v else None, "buffer"),
        "length_penalty": ("reward_shaping", lambda v: "length_penalty" if v else None, "coef"),
        "rarity_redistribution": ("advantage_shaping", lambda v: "rarity" if v else None, None),
    },
}
_LABEL_FREE = ("majority_vote", "soft_consensus")
# Answer reading is shared by the label-free rewards and the 'answer_form' rarity cue.
_ANSWER_READING = {"answer_extract": "last_number", "answer_pattern": None, "answer_tag": "answer"}


def _choice(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"name": value, "params": {}}
    if isinstance(value, dict):
        return {**value, "params": dict(value.get("params") or {})}
    return value  # type: ignore[no-any-return]  # not a choice: the field's own validation reports it


def _set_param(choice: dict[str, Any], param: str, value: Any, where: str) -> None:
    params = choice["params"]
    if param in params and params[param] != value:
        raise ValueError(
            f"{where} ({value!r}) and the params' {param} ({params[param]!r}) disagree: keep one"
        )
    params[param] = value


SECTIONS = {
    "algorithm": "AlgorithmConfig",
    "budget": "RolloutBudgetConfig",
    "teacher": "TeacherConfig",
    "shaping": "ShapingConfig",
}


def upgrade_config(config: dict[str, Any], strict: bool = False) -> dict[str, Any]:
    """A whole stored config of an earlier version in today's shape (pure dict work, no validation). Not
    strict (the database migration): a knob of a method the config did not choose is dropped whatever its
    value, since it never had an effect."""
    out = dict(config)
    for key, section in SECTIONS.items():
        if isinstance(out.get(key), dict):
            out[key] = upgrade_section(section, out[key], strict=strict)
    return out


def upgrade_section(section: str, data: dict[str, Any], strict: bool = True) -> dict[str, Any]:
    """``data`` with the flat keys of ``section`` moved into their method's params (see the module docstring)."""
    table, switches = _PARAMS.get(section, {}), _SWITCHES.get(section, {})
    flat = [
        k
        for k in data
        if k in table or k in switches or (section == "ShapingConfig" and k in _ANSWER_READING)
    ]
    if not flat:
        return data
    out = dict(data)
    for key, (field, to_method, param) in switches.items():  # switches first: they decide what is chosen
        if key not in out:
            continue
        value = out.pop(key)
        name = to_method(value)
        if name is None:
            continue
        items = [_choice(c) for c in out.get(field) or []]
        if any(isinstance(c, dict) and c.get("name") == name for c in items):
            raise ValueError(f"{key} switches on {field} {name!r}, which is also listed in {field}: keep one")
        entry: dict[str, Any] = {"name": name, "params": {}}
        if param is not None:
            entry["params"][param] = value
        out[field] = [*items, entry]
    for key, (field, method, param, default) in table.items():
        if key not in out:
            continue
        value = out.pop(key)
        targets = _targets(out, field, _LABEL_FREE if method == "*label_free" else (method,))
        if not targets:
            if value == default or not strict:
                continue  # the default of a method that is not chosen (or a stored config): it had no effect
            wanted = "a label-free reward" if method == "*label_free" else repr(method)
            raise ValueError(
                f"{key} is a parameter of {field} {wanted}, which this config does not choose: remove {key}, or "
                f"choose it with {field}: {{name: {method.lstrip('*') if method != '*label_free' else 'majority_vote'}, "
                f"params: {{{param}: {value!r}}}}}"
            )
        for choice in targets:
            _set_param(choice, param, value, key)
    if section == "ShapingConfig":
        for key, default in _ANSWER_READING.items():
            if key not in out:
                continue
            value = out.pop(key)
            targets = _targets(out, "reward_shaping", _LABEL_FREE)
            targets += [
                c
                for c in _targets(out, "advantage_shaping", ("rarity",))
                if c["params"].get("cue", "answer_form") == "answer_form"
            ]
            if not targets and value != default and strict:
                raise ValueError(
                    f"{key} sets how a label-free reward or the 'answer_form' rarity cue reads answers, and this config "
                    "uses neither: remove it, or put it in that method's params"
                )
            for choice in targets:
                _set_param(choice, key, value, key)
    return out


def _targets(data: dict[str, Any], field: str, names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The choices of ``field`` (one or a list) named one of ``names``, normalised to dicts in ``data``."""
    value = data.get(field, _MISSING)
    if value is _MISSING:
        from trainer.methods.axes import AXES

        default = next((a.default for a in AXES.values() if a.config_field.endswith("." + field)), None)
        if default not in names:
            return []
        data[field] = value = {"name": default, "params": {}}
    if isinstance(value, list):
        data[field] = items = [_choice(c) for c in value]
        return [c for c in items if isinstance(c, dict) and c.get("name") in names]
    data[field] = choice = _choice(value)
    return [choice] if isinstance(choice, dict) and choice.get("name") in names else []


# The names TRL's GRPOConfig gives these knobs (trainer/config/outside_names.py reads them in TRL runs' configs).
_TRL_NAMES = frozenset({"scale_rewards", "top_entropy_quantile"})


def aliases(section: str) -> dict[str, dict[str, Any]]:
    """``x-aliases`` of a section's schema: each flat name it still accepts, the method param it is moved to,
    and whether it is TRL's name, so a TRL user searching the schema for ``top_entropy_quantile`` finds
    where it went."""
    out: dict[str, dict[str, Any]] = {}
    for key, (field, method, param, default) in _PARAMS.get(section, {}).items():
        wanted = (
            "a label-free reward ('majority_vote' or 'soft_consensus')"
            if method == "*label_free"
            else repr(method)
        )
        origin = "TRL's GRPOConfig name" if key in _TRL_NAMES else "a flat name of earlier versions"
        out[key] = {
            "to": f"{field}.params.{param}",
            "method": method.lstrip("*"),
            "trl": key in _TRL_NAMES,
            "description": f"{origin}: accepted here and moved into {field}'s params as {param} when {field} is "
            f"{wanted}; without that choice only its no-op value {default!r} is accepted (nothing is switched "
            "on behind your back).",
        }
    for key, (field, _to_method, switch_param) in _SWITCHES.get(section, {}).items():
        out[key] = {
            "to": field,
            "method": None,
            "trl": False,
            "description": f"A flat switch of earlier versions: adds its method to {field}"
            + (f" with the value as {switch_param}." if switch_param else "."),
        }
    return out
