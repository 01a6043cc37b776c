"""One reward function of an experiment config (``verifiers: [...]``): a registry name and its parameters."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from trainer.bounds import BoundedModel


class VerifierSpec(BoundedModel):
    """One reward function: a verifier registry name and its parameters."""

    name: str = Field(max_length=100, description="Verifier registry name: exact, numeric, fuzzy_numeric, math, regex_format, reasoning_gym.")
    params: dict[str, Any] = Field(default_factory=dict, description="Verifier parameters (see its docs).")
    label: str | None = Field(None, max_length=100, description="Name used in metrics (reward/<label>_mean); default: name.")

    @property
    def key(self) -> str:
        return self.label or self.name


