"""A scripted rollout engine for evaluation tests.

It implements the ``RolloutEngine`` protocol with fixed answers, so the metric pipeline (grouping samples
per problem, verification, pass@k / maj@k / avg@n, resume bookkeeping) can be checked against values
computed by hand. It stands in for the model only; the verifiers, scoring and metrics are the real ones.
A text ending in "~" is returned as truncated (finish reason 'length').
"""

from __future__ import annotations

from collections import Counter

import torch

from trainer.rollout.base import RolloutBatch, SamplingParams
from trainer.samples import Sample

EOS = 1
PROBLEMS = [Sample("p1", "1+1=", "2"), Sample("p2", "2+2=", "4"), Sample("p3", "3+3=", "6")]
SCRIPT = {
    "1+1=": ["2", "2", "3", "2"],  # c=3, majority "2" (right)
    "2+2=": ["5", "4", "5.", "4"],  # c=2, "5" and "5." tie with "4": "5" came first (wrong)
    "3+3=": ["x", "7", "8~", "x"],  # c=0, one truncated
}


class ScriptedEngine:
    """For prompt p, the i-th copy of p in one ``generate`` call gets ``script[p][i]``."""

    def __init__(self, script: dict[str, list[str]]) -> None:
        self.script = script
        self.prompts_seen: list[str] = []

    def generate(
        self, prompts: list[str], params: SamplingParams, generator: torch.Generator
    ) -> RolloutBatch:
        self.prompts_seen += prompts
        seen: Counter[str] = Counter()
        texts, rows, reasons = [], [], []
        for prompt in prompts:
            text = self.script[prompt][seen[prompt]]
            seen[prompt] += 1
            truncated = text.endswith("~")
            text = text.rstrip("~")
            ids = [ord(ch) for ch in text] + ([] if truncated else [EOS])
            texts.append(text)
            rows.append(ids)
            reasons.append("length" if truncated else "eos")
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [0] * (width - len(r)) for r in rows])  # [N, T]
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])  # [N, T]
        n = len(prompts)
        return RolloutBatch(
            prompt_ids=torch.zeros(n, 1, dtype=torch.long),
            prompt_mask=torch.ones(n, 1, dtype=torch.long),
            completion_ids=ids,
            completion_mask=mask,
            logprobs=-0.5 * mask.float(),
            entropies=torch.zeros(n, width),
            finish_reasons=reasons,
            texts=texts,
        )
