"""Verifiers: reward functions, registered by name (see base.py for the seam).

Importing this package registers every verifier (exact, numeric, fuzzy_numeric, regex_format, math,
reasoning_gym, code) and the reward sources that call a model (reward_model) or an endpoint (judge), without
loading math-verify, reasoning-gym, torch or transformers: those load in timeout-pool workers, or in the worker
when a reward model is built.
"""

from trainer.verifiers import (  # noqa: F401 -- registers
    chain_arithmetic,
    code_exec,
    exact,
    judge_endpoint,
    math_answer,
    numeric,
    reasoning_gym_task,
    regex_format,
    reward_model,
)
from trainer.verifiers.base import (
    VERIFIERS,
    Verifier,
    VerifierParams,
    VerifierResult,
    absent_result,
    build_verifier,
)
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
    "absent_result",
    "build_verifier",
    "build_verifiers",
    "extract_answer",
    "run_with_timeout",
    "score_batch",
]
