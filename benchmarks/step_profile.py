"""Where one synchronous training step spends its time, on the shipped presets (trainer/presets/*.yaml).

Each preset is built as ``rlvr train`` builds it (``build_run``) and stepped with ``training_step``, the same
function the training loop calls; each step's report then goes through a ``JsonlSink`` (what ``rlvr train``
writes), timed as persistence. Periodic evaluation and checkpoints are left out: they are not part of a step.

The split comes from the step's own always-on timers (``perf/<stage>_s``, trainer/step/step.py; the update's
``perf/update_forward_s``, ``perf/update_backward_s``, ``perf/optimizer_s``, trainer/step/optimize.py) and from
forward hooks on the policy and the teacher (host seconds inside their ``forward``, and inside the hf engine's decode
steps, which run the policy's modules without its ``forward``), which split generation into
the model's forward passes and everything else the engine does per token (sampling, stopping, the KV-cache copy,
Python). Gradient-free policy forwards are counted as generation: in a synchronous run with the hf engine the
policy runs without gradients only to sample (policy rescoring is for vLLM and asynchronous runs).

Every figure is the median over the steps after the warm-up ones, in milliseconds, with its share of the sum of
the medians; ``step (wall)`` is the median of the whole step with its persistence, for comparison.

    python benchmarks/step_profile.py                              # both presets, 40 steps each (~2 min)
    python benchmarks/step_profile.py --presets addition --steps 12 --out /tmp/profile.json   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's trainer and benchmarks, whatever is installed
DEFAULT_OUT = REPO / "benchmarks" / "results" / "step_profile.json"
PRESETS = ("addition", "demo")

# (row, how it is computed from one step's measurements) in the order printed; see _rows
ROWS = (
    "generation: model forward",
    "generation: per-token overhead",
    "verification",
    "collect: prompts, assembly",
    "policy scoring (rescoring)",
    "teacher forward",
    "shaping, advantages, loss mask, credit",
    "update: forward + loss",
    "update: backward",
    "update: optimizer (clip, step, check)",
    "update: other",
    "reporting (metrics, rollout records)",
    "persistence (JSONL sink)",
    "other",
)


class ForwardClock:
    """Host seconds inside a module's ``forward``, split by whether gradients were on (a forward hook pair)."""

    def __init__(self, module: Any) -> None:
        import torch

        self._torch = torch
        self.no_grad_s = 0.0
        self.grad_s = 0.0
        self._start = 0.0
        self._handles = [
            module.register_forward_pre_hook(self._before),
            module.register_forward_hook(self._after),
        ]
        self._restore: list[Any] = []

    def _before(self, *_: Any) -> None:
        self._start = time.perf_counter()

    def _after(self, *_: Any) -> None:
        elapsed = time.perf_counter() - self._start
        if self._torch.is_grad_enabled():
            self.grad_s += elapsed
        else:
            self.no_grad_s += elapsed

    def count_calls(self, owner: Any, name: str) -> None:
        """Also count the seconds inside ``owner.name(...)`` as the module's: the hf engine's decode steps
        (trainer/rollout/cached_decoder.py) run the model's modules without its ``forward``."""
        method = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            self._before()
            try:
                return method(*args, **kwargs)
            finally:
                self._after()

        setattr(owner, name, timed)
        self._restore.append(lambda: delattr(owner, name))

    def take(self) -> tuple[float, float]:
        """(no-grad seconds, grad seconds) since the last take."""
        out = (self.no_grad_s, self.grad_s)
        self.no_grad_s = self.grad_s = 0.0
        return out

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()
        for restore in self._restore:
            restore()


def _preset_config(name: str, steps: int, output_dir: str, overrides: dict[str, str]) -> Any:
    """The preset as it ships, with the step count, output directory, no evaluation or checkpoints, and
    ``overrides`` (dotted keys, "model.name_or_path" or for one preset "demo:model.name_or_path", to a YAML value;
    only keys the preset has)."""
    from trainer.bounds import safe_yaml_load
    from trainer.config import config_from_dict

    data = safe_yaml_load((REPO / "trainer" / "presets" / f"{name}.yaml").read_text(encoding="utf-8"))
    data["training"] = {**data.get("training", {}), "max_steps": steps}
    data["checkpoint"] = {"output_dir": output_dir, "save_steps": 0}
    data.pop("evaluation", None)
    for scoped, value in overrides.items():
        preset, _, key = scoped.rpartition(":")
        if preset and preset != name:
            continue
        *path, last = key.split(".")
        section = data
        for part in path:
            section = section.get(part) if isinstance(section, dict) else None
        if isinstance(section, dict) and last in section:
            section[last] = yaml.safe_load(value)
    return config_from_dict(data, source=f"trainer/presets/{name}.yaml")


@contextmanager
def _built(name: str, steps: int, overrides: dict[str, str]) -> Iterator[tuple[Any, Any, str]]:
    from trainer.step.run_setup import build_run

    with tempfile.TemporaryDirectory(prefix=f"step-profile-{name}-") as work:
        config = _preset_config(name, steps, work, overrides)
        run = build_run(config, log=lambda _: None)
        try:
            yield config, run, work
        finally:
            run.close()


def _rows(m: dict[str, float], gen_forward: float, teacher_forward: float, sink_s: float) -> dict[str, float]:
    """One step's seconds per row of ``ROWS``, from its metrics and the forward clocks."""
    update_parts = m["perf/update_forward_s"] + m["perf/update_backward_s"] + m["perf/optimizer_s"]
    credit = sum(
        m[f"perf/{s}_s"]
        for s in (
            "score_steps",
            "shape_rewards",
            "estimate_advantages",
            "build_loss_mask",
            "assign_token_credit",
        )
    )
    return {
        "generation: model forward": gen_forward,
        "generation: per-token overhead": m["perf/gen_s"] - gen_forward,
        "verification": m["perf/verify_s"],
        "collect: prompts, assembly": m["perf/collect_s"] - m["perf/gen_s"] - m["perf/verify_s"],
        "policy scoring (rescoring)": m["perf/score_with_policy_s"],
        "teacher forward": teacher_forward,
        "shaping, advantages, loss mask, credit": credit + m["perf/score_with_teacher_s"] - teacher_forward,
        "update: forward + loss": m["perf/update_forward_s"],
        "update: backward": m["perf/update_backward_s"],
        "update: optimizer (clip, step, check)": m["perf/optimizer_s"],
        "update: other": m["perf/update_policy_s"] - update_parts,
        "reporting (metrics, rollout records)": m["perf/report_s"],
        "persistence (JSONL sink)": sink_s,
    }


def profile_preset(
    name: str, steps: int, warmup: int, overrides: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``steps`` steps of the preset; per-row medians (ms) over the steps after ``warmup``."""
    from trainer.models.device import autocast
    from trainer.sinks import JsonlSink
    from trainer.step.step import training_step

    per_step: list[dict[str, float]] = []
    with _built(name, steps, overrides or {}) as (config, run, work):
        sink = JsonlSink(work)  # the run directory rlvr train writes into
        policy = ForwardClock(run.model)
        decoder = getattr(run.engine, "decoder", None)
        if (
            decoder is not None
        ):  # decode steps outside the model's forward (trainer/rollout/cached_decoder.py)
            policy.count_calls(decoder, "step")
        external = (
            run.teacher is not None and run.teacher.model is not run.model
        )  # 'self': the policy's clock
        teacher = ForwardClock(run.teacher.model) if external else None
        try:
            for step in range(1, steps + 1):
                policy.take()
                if teacher is not None:
                    teacher.take()
                t0 = time.perf_counter()
                with autocast(run.device, config.model.autocast_bf16):
                    report = training_step(run, step)
                t1 = time.perf_counter()
                sink.on_step(report)
                t2 = time.perf_counter()
                gen_forward, _ = policy.take()
                teacher_forward = sum(teacher.take()) if teacher is not None else 0.0
                rows = _rows(report.metrics, gen_forward, teacher_forward, t2 - t1)
                rows["other"] = (t2 - t0) - sum(rows.values())
                rows["step (wall)"] = t2 - t0
                rows["completions"] = report.metrics["budget/rollouts_used"]
                rows["completion tokens"] = report.metrics["budget/tokens_generated"]
                per_step.append(rows)
        finally:
            policy.close()
            if teacher is not None:
                teacher.close()
    timed = per_step[warmup:] or per_step
    median = {k: statistics.median(s[k] for s in timed) for k in per_step[0]}
    total = sum(median[k] for k in ROWS)
    return {
        "preset": name,
        "model": config.model.name_or_path,
        "steps": steps,
        "warmup_steps": warmup,
        "completions_per_step": median.pop("completions"),
        "completion_tokens_per_step": median.pop("completion tokens"),
        "step_wall_ms": median.pop("step (wall)") * 1000,
        "rows": [{"stage": k, "ms": median[k] * 1000, "share": median[k] / total} for k in ROWS],
        "per_step_ms": [{k: round(v * 1000, 3) for k, v in s.items() if k in ROWS} for s in per_step],
    }


def _table(result: dict[str, Any]) -> str:
    lines = [
        f"{result['preset']} ({result['model']}): {result['completions_per_step']:.0f} completions, "
        f"{result['completion_tokens_per_step']:.0f} completion tokens a step; step {result['step_wall_ms']:.1f} ms "
        f"(median of {result['steps'] - result['warmup_steps']} steps)",
        f"  {'stage':<40} {'ms':>8} {'share':>6}",
    ]
    for row in result["rows"]:
        lines.append(f"  {row['stage']:<40} {row['ms']:>8.2f} {row['share']:>6.1%}")
    return "\n".join(lines)


def _markdown(results: list[dict[str, Any]], header: dict[str, Any]) -> str:
    from benchmarks.provenance import timing_sentence

    out = [
        "# Where a synchronous step's time goes",
        "",
        timing_sentence(header)
        + " Median over the steps after the warm-up ones (ms), share of the sum of the medians. "
        "benchmarks/step_profile.py says how each row is measured.",
        "",
    ]
    if header.get("overrides"):
        out += ["Preset keys changed: " + ", ".join(f"`{k}={v}`" for k, v in header["overrides"].items()), ""]
    for r in results:
        out += [
            f"## {r['preset']} ({r['model']})",
            "",
            f"{r['completions_per_step']:.0f} completions, {r['completion_tokens_per_step']:.0f} completion tokens a "
            f"step; the whole step {r['step_wall_ms']:.1f} ms.",
            "",
            "| stage | ms | share |",
            "|---|---:|---:|",
        ]
        out += [f"| {row['stage']} | {row['ms']:.2f} | {row['share']:.1%} |" for row in r["rows"]]
        out.append("")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", choices=PRESETS, default=list(PRESETS))
    parser.add_argument("--steps", type=int, default=40, help="steps per preset")
    parser.add_argument("--warmup", type=int, default=5, help="steps left out of the medians")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="JSON results; a .md beside it")
    parser.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="change a preset key where the preset has it, e.g. demo:teacher.name_or_path=/path/to/model",
    )
    args = parser.parse_args()
    if args.steps <= args.warmup:
        parser.error("--steps must be larger than --warmup")
    import torch

    from benchmarks.provenance import timing_header

    torch.set_num_threads(args.threads)
    header = timing_header(torch.get_num_threads(), torch.__version__)
    overrides = dict(item.split("=", 1) for item in args.set)
    header["overrides"] = overrides
    results = []
    for name in args.presets:
        result = profile_preset(name, args.steps, args.warmup, overrides)
        print(_table(result), flush=True)
        results.append(result)
    header["load_after"] = os.getloadavg()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**header, "presets": results}, indent=1) + "\n")
    out.with_suffix(".md").write_text(_markdown(results, header))
    print(f"wrote {out} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
