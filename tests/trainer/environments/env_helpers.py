"""Shared pieces of the environment tests: the chain task's scorer, an engine that keeps what it was asked and
returned, and a tiny model taught to call a tool (the built-in tiny models never write a tool call)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from trainer.environments import AnswerScorer, verifier_scorer
from trainer.environments.tool_calls import render_tool_call
from trainer.models.tiny_model import build_tiny_model
from trainer.rollout import HFRolloutEngine, RolloutBatch, SamplingParams
from trainer.verifiers import build_verifiers

CALLER_PROMPT = "Q:"
CALLER_ANSWER = "#### 5"
NAP_CALL = render_tool_call("nap", {})
TIMEOUT_S = 0.5


def chain_scorer() -> AnswerScorer:
    """The chain task's own verifier, as a run would build it."""
    spec = SimpleNamespace(name="chain_arithmetic", params={}, key="chain_arithmetic")
    return verifier_scorer(build_verifiers([spec]), [1.0])


class RecordingEngine:
    """The real hf engine; every call's contexts and result are kept, to compare the trajectory against."""

    def __init__(self, engine: HFRolloutEngine) -> None:
        self.engine = engine
        self.calls: list[tuple[list[list[int]], RolloutBatch]] = []

    def generate_from_ids(
        self,
        contexts: list[list[int]],
        params: SamplingParams,
        generator: torch.Generator,
        stop: Sequence[str] = (),
    ) -> RolloutBatch:
        out = self.engine.generate_from_ids(contexts, params, generator, stop)
        self.calls.append(([list(c) for c in contexts], out))
        return out


def caller_dialogue(result: str, eos: str) -> str:
    """The episode the caller model learns: a call to ``nap``, its response, then the answer."""
    return f"{CALLER_PROMPT}{NAP_CALL}\n<tool_response>\n{result}\n</tool_response>\n{CALLER_ANSWER}{eos}"


def tool_calling_model(directory: Path) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A random tiny model fine-tuned (a second or two) to answer ``Q:`` with a ``nap`` call, then ``#### 5``."""
    torch.manual_seed(0)
    path = build_tiny_model(directory, hidden=64, layers=2, heads=2)
    tok: Any = AutoTokenizer.from_pretrained(path)
    model: Any = AutoModelForCausalLM.from_pretrained(path)
    texts = [caller_dialogue(r, tok.eos_token) for r in ("napped", f"error: timed out after {TIMEOUT_S:g}s")]
    batch = [tok(t, return_tensors="pt", add_special_tokens=False)["input_ids"] for t in texts]
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one short sequence: a second thread only waits on cores other jobs hold
    try:
        for step in range(300):
            ids = batch[step % len(batch)]
            model(input_ids=ids, labels=ids).loss.backward()
            opt.step()
            opt.zero_grad()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    return model, tok
