"""Running a saved verifier version: one verdict and the test cases (web process), the audit and a rescore
(a worker's verification job, webapp/verification/job_services.py).

Only trainer.verifiers is imported (no torch). The web process's verdicts (``score``, ``check_cases``)
never run in the request thread: trainer/verifiers/isolated.py scores each completion in a timeout-pool
worker under a hard wall-clock budget (the Django setting ``RLVR_BENCH_BUDGET_S``, 5 s when unset; the test
cases together get ``CASES_BUDGET_FACTOR`` times that), so a verifier that spins returns a timeout verdict
and every other request is served meanwhile. The verifier code is the trainer's, so a verdict shown here is the verdict a
run would get. Nothing here touches the database (services.py and job_services.py do).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from trainer.errors import RLVRError
from trainer.samples import Sample
from trainer.verifiers import VERIFIERS, Verifier, VerifierResult, build_verifier
from trainer.verifiers.audit import AuditReport, audit_verifier, generate_variants
from trainer.verifiers.isolated import score_isolated
from webapp.core.errors import ApplicationError, InvalidInput
from webapp.verification.models import VerifierTestCase, VerifierVersion

CHANGED_ROWS_KEPT = 1000  # changed verdicts listed in a rescore's result (all are counted)
CASES_BUDGET_FACTOR = 3  # the saved test cases together get this many single-verdict budgets
# Reward sources that call a model or an endpoint. They are defined on the project's Reward models page
# (webapp/rewards), which confines a judge's endpoint to the server's allow-list and a reward model to the
# project's own folders (webapp/experiments/config_paths.py); a verifier definition skips those checks, so it
# may never name one, and nothing here builds one (a version saved before this rule included).
REWARD_SOURCES = frozenset({"reward_model", "judge"})


def is_reward_source(verifier: str) -> bool:
    """Whether ``verifier`` names a model or endpoint reward source (``REWARD_SOURCES``, or any registry entry
    whose failures are absent scores rather than errors, the trainer's mark of such a source)."""
    if verifier in REWARD_SOURCES:
        return True
    return verifier in VERIFIERS and bool(getattr(VERIFIERS.get(verifier), "absent_on_failure", False))


def verifier_names() -> list[str]:
    """The registry names a verifier definition may use: every registered verifier but the reward sources."""
    return [name for name in VERIFIERS.names() if not is_reward_source(name)]


def reward_source_message(verifier: str) -> str:
    """Why ``verifier`` cannot be a verifier definition, and where to add it instead."""
    return (
        f"{verifier!r} is a reward source that calls a model or an endpoint, not a verifier: add it on the "
        "project's Reward models page (which checks the endpoint and the model it may use), then pick it in "
        "the experiment form."
    )


def refuse_reward_source(verifier: str) -> None:
    """InvalidInput (keyed on ``verifier``) for a model or endpoint reward source; nothing otherwise."""
    if is_reward_source(verifier):
        message = reward_source_message(verifier)
        raise InvalidInput(message, {"verifier": [message]})


@dataclass(frozen=True)
class Verdict:
    """One completion's verdict as the test bench shows it."""

    reward: float | None  # None: absent (see ``verdict_of``)
    correct: bool
    extracted: str | None
    reason: str
    error: str | None
    detail: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "reward": self.reward, "correct": self.correct, "extracted": self.extracted,
            "reason": self.reason, "error": self.error, "detail": self.detail,
        }  # fmt: skip


def built(verifier: str, params: dict[str, Any]) -> Verifier:
    """The trainer's verifier; a bad name or params becomes an ApplicationError with the trainer's message, and
    a model or endpoint reward source is refused (``refuse_reward_source``)."""
    refuse_reward_source(verifier)
    try:
        return build_verifier(verifier, params)
    except RLVRError as err:
        raise ApplicationError(str(err)) from None


def verdict_of(result: VerifierResult) -> Verdict:
    """The bench's verdict of one result. An absent score (``absent_result``: reward nan) has reward None, which
    JSON can hold where nan is no JSON, and a reason that says it is absent and why; any other reward that is not
    a finite number is None too."""
    detail = dict(result.detail)
    extracted = detail.get("extracted")
    error = detail.get("error")
    reason = str(detail.get("reason") or error or "")
    score = float(result.reward)
    reward: float | None = score
    if result.absent:
        reward, why = None, str(detail["absent"])
        if not reason.startswith("absent"):
            reason = f"absent: {why}" + (f" ({reason})" if reason and reason != why else "")
    elif not math.isfinite(score):
        reward, reason = None, reason or f"non-finite reward ({score})"
    return Verdict(
        reward=reward,
        correct=bool(result.correct),
        extracted=None if extracted is None else str(extracted),
        reason=reason,
        error=None if error is None else str(error),
        detail=detail,
    )


def budget_s() -> float:
    """Seconds one bench verdict may take before its worker is killed (``RLVR_BENCH_BUDGET_S``)."""
    return float(getattr(settings, "RLVR_BENCH_BUDGET_S", 5))


def score(version: VerifierVersion, pairs: Sequence[tuple[str, str | None]]) -> list[Verdict]:
    """Verdicts of (completion, reference) pairs under ``version``, each scored out of this process under
    ``budget_s()``, all of them under ``CASES_BUDGET_FACTOR`` times that (see the module docstring)."""
    refuse_reward_source(version.verifier)
    budget = budget_s()
    try:
        results = score_isolated(
            version.verifier,
            version.params,
            pairs,
            budget_s=budget,
            batch_budget_s=budget * CASES_BUDGET_FACTOR,
        )
    except RLVRError as err:
        raise ApplicationError(str(err)) from None
    return [verdict_of(r) for r in results]


def check_cases(version: VerifierVersion, cases: Iterable[VerifierTestCase]) -> list[dict[str, Any]]:
    """Run the saved test cases; one ``{case, name, expected, correct, passed, reason}`` per case."""
    cases = list(cases)
    verdicts = score(version, [(c.completion, c.reference) for c in cases])
    return [
        {
            "case": case.pk,
            "name": case.name,
            "expected": case.expected_correct,
            "correct": v.correct,
            "passed": v.correct == case.expected_correct and v.error is None,
            "reason": v.reason,
            "extracted": v.extracted,
        }
        for case, v in zip(cases, verdicts, strict=True)
    ]


def score_with(verifier: Verifier, pairs: Sequence[tuple[str, str | None]]) -> list[Verdict]:
    """Like ``score``, with a verifier built once by the caller (a rescore scores many chunks with it)."""
    if not pairs:
        return []
    samples = [Sample(f"bench-{i}", "", reference) for i, (_, reference) in enumerate(pairs)]
    return [verdict_of(r) for r in verifier([c for c, _ in pairs], samples)]


def audit(version: VerifierVersion, on_progress: Callable[[int], None] | None = None) -> AuditReport:
    return audit_verifier(built(version.verifier, version.params), on_progress=on_progress)


def audit_size() -> int:
    """How many variants an audit scores: the job's ``total`` before it starts."""
    return len(generate_variants())


@dataclass
class RescoreTally:
    """A rescore's running totals, added to chunk by chunk by the worker (job_services.py).

    The stored verdict is the rollout's ``correct`` (from the run's primary verifier). Every changed verdict
    is counted, but only the first ``CHANGED_ROWS_KEPT`` are kept as rows (newest steps first), so the
    result of a rescore of a whole run stays a page, not a copy of the run.
    """

    scored: int = 0
    changed: int = 0
    newly_correct: int = 0
    errors: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, rollouts: Sequence[dict[str, Any]], verdicts: Sequence[Verdict]) -> None:
        for row, verdict in zip(rollouts, verdicts, strict=True):
            self.scored += 1
            self.errors += int(verdict.error is not None)
            if verdict.correct == row["correct"]:
                continue
            self.changed += 1
            self.newly_correct += int(verdict.correct)
            if len(self.rows) < CHANGED_ROWS_KEPT:
                self.rows.append(_changed_row(row, verdict))

    def to_json(self, *, run_id: int, total: int) -> dict[str, Any]:
        return {
            "run": run_id, "scored": self.scored, "total": total, "changed": self.changed,
            "newly_correct": self.newly_correct, "newly_incorrect": self.changed - self.newly_correct,
            "errors": self.errors, "rows": self.rows, "rows_truncated": self.changed > len(self.rows),
        }  # fmt: skip


def rescore_chunk(verifier: Verifier, rollouts: Sequence[dict[str, Any]], tally: RescoreTally) -> None:
    """Score one chunk of rollouts (``selectors.RESCORE_FIELDS``) and add the verdicts to ``tally``."""
    tally.add(rollouts, score_with(verifier, [(r["completion"], r["answer"]) for r in rollouts]))


def _changed_row(row: dict[str, Any], verdict: Verdict) -> dict[str, Any]:
    return {
        "rollout": row["id"], "step": row["step"], "group": row["group"], "sample_index": row["sample_index"],
        "prompt": row["prompt"][:300], "completion": row["completion"][-500:], "answer": row["answer"],
        "was_correct": row["correct"], "now_correct": verdict.correct, "reason": verdict.reason,
        "extracted": verdict.extracted,
    }  # fmt: skip
