"""The "New benchmark" form: fields a person fills, turned into ``benchmark_create`` arguments.

Sampling fields left blank keep the built-in entry's value (source 'builtin') or BenchmarkConfig's
default; the config itself is validated by the trainer's model in the service, not here.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms

from trainer.bounds import UnsafeInput, strict_json_loads
from webapp.benchmarks.models import BenchmarkSource

SAMPLING_FIELDS = ("n_samples", "temperature", "top_p", "max_tokens", "seed", "max_problems", "num_seeds")


def _int_list(text: str, field: str) -> list[int]:
    try:
        return [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise forms.ValidationError(f"{field}: write whole numbers separated by commas, e.g. 1,4,8") from None


def _json_object(text: str, field: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        value = strict_json_loads(text)  # no NaN, NUL or deep nesting (trainer/bounds.py)
    except json.JSONDecodeError as err:
        raise forms.ValidationError(
            f'{field} is not valid JSON ({err.msg}); write an object like {{"a": 1}}'
        ) from None
    except UnsafeInput as err:
        raise forms.ValidationError(f"{field}: {err}") from None
    if not isinstance(value, dict):
        raise forms.ValidationError(f'{field} must be a JSON object like {{"a": 1}}')
    return value


class BenchmarkForm(forms.Form):
    name = forms.CharField(max_length=100)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    source = forms.ChoiceField(choices=BenchmarkSource.choices, initial=BenchmarkSource.BUILTIN)
    builtin = forms.CharField(required=False)
    task = forms.CharField(required=False, help_text="reasoning-gym task, e.g. chain_sum")
    size = forms.IntegerField(required=False, min_value=1, initial=50)
    data_seed = forms.IntegerField(required=False, initial=1)
    task_config = forms.CharField(
        required=False, help_text='Difficulty, e.g. {"min_terms": 2, "max_terms": 3}'
    )
    file = forms.FileField(required=False)
    problem_field = forms.CharField(required=False, initial="problem")
    answer_field = forms.CharField(required=False, initial="answer")
    prompt_template = forms.CharField(required=False, initial="{prompt}")
    verifier = forms.CharField(required=False)
    verifier_params = forms.CharField(required=False)
    verifier_version = forms.IntegerField(
        required=False, help_text="A saved verifier version (webapp/verification)."
    )
    n_samples = forms.IntegerField(required=False, min_value=1)
    temperature = forms.FloatField(required=False)
    top_p = forms.FloatField(required=False)
    max_tokens = forms.IntegerField(required=False, min_value=1)
    seed = forms.IntegerField(required=False)
    num_seeds = forms.IntegerField(required=False, min_value=1)
    max_problems = forms.IntegerField(required=False, min_value=1)
    pass_k = forms.CharField(required=False, help_text="e.g. 1,2,4,8 (blank: 1 and n)")
    maj_k = forms.CharField(required=False, help_text="e.g. 8 (blank: n)")

    def config(self) -> dict[str, Any]:
        """The BenchmarkConfig fields this form sets (call after is_valid)."""
        d = self.cleaned_data
        config: dict[str, Any] = {k: d[k] for k in SAMPLING_FIELDS if d.get(k) is not None}
        for field in ("pass_k", "maj_k"):
            if d.get(field):
                config[field] = _int_list(d[field], field)
        if d.get("verifier"):
            config["verifiers"] = [
                {
                    "name": d["verifier"],
                    "params": _json_object(d.get("verifier_params") or "", "verifier params"),
                }
            ]
        data: dict[str, Any] = {}
        if d.get("prompt_template"):
            data["prompt_template"] = d["prompt_template"]
        if d["source"] == BenchmarkSource.REASONING_GYM:
            data.update(
                task=d.get("task") or None,
                task_config=_json_object(d.get("task_config") or "", "task config"),
            )
            if d.get("size"):
                data["size"] = d["size"]
            if d.get("data_seed") is not None:
                data["data_seed"] = d["data_seed"]
        if data:
            config["data"] = data
        return config
