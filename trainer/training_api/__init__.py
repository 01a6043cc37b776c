"""The Tinker-compatible training API, torch side. This package's import is torch-free (the web process validates
requests with ``limits`` and ``types``); import ``trainer.training_api.session`` for ``TrainingSession``."""

from trainer.training_api.limits import SUPPORTED_LOSSES, ApiInputError, ApiLimits
from trainer.training_api.types import (
    AdamParams,
    ApiDatum,
    ApiSampling,
    ForwardResult,
    SampledSequence,
    SampleResult,
)

__all__ = [
    "SUPPORTED_LOSSES",
    "AdamParams",
    "ApiDatum",
    "ApiInputError",
    "ApiLimits",
    "ApiSampling",
    "ForwardResult",
    "SampleResult",
    "SampledSequence",
]
