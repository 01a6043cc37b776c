"""Verifiers: programmatic reward functions, registered by name (see base.py for the seam).

Importing this package registers every verifier (exact, numeric, fuzzy_numeric, regex_format, math,
reasoning_gym, code) without loading math-verify or reasoning-gym: those load in timeout-pool workers when scoring.
"""

from trainer.verifiers import (  # noqa: F401 -- registers
    chain_arithmetic,
    code_exec,
    exact,
    math_answer,
    numeric,
    reasoning_gym_task,
    regex_format,
)
from trainer.verifiers.base import VERIFIERS, Verifier, VerifierParams, VerifierResult, build_verifier
from trainer.verifiers.extract import Extraction, Extractor, extract_answer
from trainer.verifiers.scoring import ScoreBatch, build_verifiers, score_batch
from trainer.verifiers.timeout_pool import Outcome, PoolStartError, TimeoutPool, run_with_timeout

__all__ = [
    "VERIFIERS",
    "Extraction",
    "Extractor",
    "Outcome",
    "PoolStartError",
    "ScoreBatch",
    "TimeoutPool",
    "Verifier",
    "VerifierParams",
    "VerifierResult",
    "build_verifier",
    "build_verifiers",
    "extract_answer",
    "run_with_timeout",
    "score_batch",
]
