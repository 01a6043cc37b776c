"""Running a saved verifier version from the web process: one verdict, the test cases, the audit, a rescore.

Only trainer.verifiers is imported (no torch): verifiers that need a library or a sandbox run it in the
trainer's timeout-pool workers, exactly as they do during training, so a verdict shown here is the
verdict a run would get. Nothing here writes to the database (services.py does).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from trainer.errors import RLVRError
from trainer.samples import Sample
from trainer.verifiers import Verifier, VerifierResult, build_verifier
from trainer.verifiers.audit import AuditReport, audit_verifier
from webapp.core.errors import ApplicationError
from webapp.experiments.models import Rollout, Run
from webapp.verification.models import VerifierTestCase, VerifierVersion

RESCORE_LIMIT = 500  # rollouts re-scored per request; the newest steps first


@dataclass(frozen=True)
class Verdict:
    """One completion's verdict as the test bench shows it."""

    reward: float
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
    """The trainer's verifier; a bad name or params becomes an ApplicationError with the trainer's message."""
    try:
        return build_verifier(verifier, params)
    except RLVRError as err:
        raise ApplicationError(str(err)) from None


def verdict_of(result: VerifierResult) -> Verdict:
    detail = dict(result.detail)
    extracted = detail.get("extracted")
    error = detail.get("error")
    return Verdict(
        reward=float(result.reward),
        correct=bool(result.correct),
        extracted=None if extracted is None else str(extracted),
        reason=str(detail.get("reason") or error or ""),
        error=None if error is None else str(error),
        detail=detail,
    )


def score(version: VerifierVersion, pairs: Sequence[tuple[str, str | None]]) -> list[Verdict]:
    """Verdicts of (completion, reference) pairs under ``version``, in one batch."""
    if not pairs:
        return []
    verifier = built(version.verifier, version.params)
    samples = [Sample(f"bench-{i}", "", reference) for i, (_, reference) in enumerate(pairs)]
    return [verdict_of(r) for r in verifier([c for c, _ in pairs], samples)]


def check_cases(version: VerifierVersion, cases: Iterable[VerifierTestCase]) -> list[dict[str, Any]]:
    """Run the saved test cases; one ``{case, name, expected, correct, passed, reason}`` per case."""
    cases = list(cases)
    verdicts = score(version, [(c.completion, c.reference) for c in cases])
    return [
        {
            "case": case.pk, "name": case.name, "expected": case.expected_correct, "correct": v.correct,
            "passed": v.correct == case.expected_correct and v.error is None, "reason": v.reason,
            "extracted": v.extracted,
        }
        for case, v in zip(cases, verdicts, strict=True)
    ]


def audit(version: VerifierVersion) -> AuditReport:
    return audit_verifier(built(version.verifier, version.params))


def rescore_rollouts(version: VerifierVersion, run: Run, *, limit: int = RESCORE_LIMIT) -> dict[str, Any]:
    """Score a run's stored rollouts (completion + reference answer) with ``version``; list changed verdicts.

    The stored verdict is the rollout's ``correct`` (from the run's primary verifier). Only the newest
    ``limit`` rollouts are scored, so the request stays short.
    """
    rows = list(
        Rollout.objects.filter(run=run)
        .order_by("-step", "group", "sample_index")
        .values("id", "step", "group", "sample_index", "prompt", "completion", "answer", "correct", "reward")[:limit]
    )
    verdicts = score(version, [(r["completion"], r["answer"]) for r in rows])
    changed = []
    for row, verdict in zip(rows, verdicts, strict=True):
        if verdict.correct != row["correct"]:
            changed.append({
                "rollout": row["id"], "step": row["step"], "group": row["group"], "sample_index": row["sample_index"],
                "prompt": row["prompt"][:300], "completion": row["completion"][-500:], "answer": row["answer"],
                "was_correct": row["correct"], "now_correct": verdict.correct, "reason": verdict.reason,
                "extracted": verdict.extracted,
            })  # fmt: skip
    newly_correct = sum(1 for c in changed if c["now_correct"])
    return {
        "run": run.pk,
        "scored": len(rows),
        "total": Rollout.objects.filter(run=run).count(),
        "changed": len(changed),
        "newly_correct": newly_correct,
        "newly_incorrect": len(changed) - newly_correct,
        "errors": sum(1 for v in verdicts if v.error),
        "rows": changed,
    }
