"""Held-out evaluation of one checkpoint on the fixed problem set of the reasoning task.

The set is ``EVAL.greedy_problems`` chain-arithmetic problems (mixed levels) drawn under a seed no training
run uses, with any problem whose prompt is also a training prompt removed, so every arm and every seed is
scored on the same problems and paired differences carry no problem-sampling noise of their own:

- greedy accuracy on the whole set (per-problem outcomes kept, so the harness can give the evaluation's own
  standard error of a paired difference);
- sampled accuracy at the training temperature (one sample per problem of the first ``sampled_problems``,
  under a fixed generator seed): the distribution GRPO trains;
- curve points (checkpoints between the first and the last) use the first ``curve_problems`` greedily.

A completion is right when the integer after its first ``####`` equals the answer, as the chain_arithmetic
verifier reads it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

EVAL_SEED = 987_654  # training data uses data.data_seed (0 by default); no run here uses this one
MAX_NEW_TOKENS = 96  # the longest built-in scratchpad is 68 tokens


@dataclass(frozen=True)
class EvalSpec:
    greedy_problems: int = 2000
    sampled_problems: int = 1000
    curve_problems: int = 500
    temperature: float = 1.0
    batch: int = 256

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


EVAL = EvalSpec()


@cache
def problems(n: int, exclude: frozenset[str]) -> tuple[tuple[str, str], ...]:
    """The first ``n`` held-out (prompt, answer) pairs, none of them a prompt in ``exclude``."""
    from trainer.data.chain_arithmetic import chain_arithmetic_samples

    out: list[tuple[str, str]] = []
    size = n + len(exclude) // 4 + 64
    while len(out) < n:
        out = [
            (s.prompt, s.answer)
            for s in chain_arithmetic_samples(size, seed=EVAL_SEED, level="mixed")
            if s.prompt not in exclude
        ][:n]
        size *= 2
    return tuple(out)


def _answers_right(texts: list[str], answers: list[str]) -> list[bool]:
    from trainer.models.tiny_recipes import chain_answer

    return [chain_answer(t) == a for t, a in zip(texts, answers, strict=True)]


def evaluate(model_dir: str, spec: EvalSpec, exclude: frozenset[str], final: bool) -> dict[str, Any]:
    """{'greedy', 'greedy_n', 'bare'[, 'sampled', 'sampled_n', 'greedy_bits']} of the checkpoint at ``model_dir``.

    ``final`` scores the whole set and the sampled accuracy; otherwise the curve subset only. ``bare`` is the
    share of greedy completions that answer without working (start with ``####``).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.models.tiny_model import greedy_completions

    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    tok = AutoTokenizer.from_pretrained(model_dir)
    pool = problems(spec.greedy_problems, exclude)
    chosen = pool if final else pool[: spec.curve_problems]
    texts = greedy_completions(model, tok, [p for p, _ in chosen], MAX_NEW_TOKENS, batch=spec.batch)
    right = _answers_right(texts, [a for _, a in chosen])
    out: dict[str, Any] = {
        "greedy": sum(right) / len(right),
        "greedy_n": len(right),
        "bare": sum(t.lstrip().startswith("####") for t in texts) / len(texts),
    }
    if not final:
        return out
    out["greedy_bits"] = "".join("1" if r else "0" for r in right)
    sampled = pool[: spec.sampled_problems]
    generator = torch.Generator().manual_seed(EVAL_SEED)
    texts = []
    with torch.no_grad():
        for start in range(0, len(sampled), spec.batch):
            chunk = sampled[start : start + spec.batch]
            enc = tok([p for p, _ in chunk], return_tensors="pt", padding=True, padding_side="left")
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
            ids = model.generate(  # type: ignore[operator]
                **enc,
                max_new_tokens=MAX_NEW_TOKENS,
                do_sample=True,
                temperature=spec.temperature,
                top_k=0,
                top_p=1.0,
                pad_token_id=tok.pad_token_id,
                eos_token_id=tok.eos_token_id,
            )
            texts += tok.batch_decode(ids[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    right = _answers_right(texts, [a for _, a in sampled])
    out.update(sampled=sum(right) / len(right), sampled_n=len(right))
    return out
