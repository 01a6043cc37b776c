"""One host with 2 processes against 2 "hosts" with 1 process each (a c10d rendezvous on loopback), same work.

    .venv/bin/python benchmarks/multi_node.py                 # 20 steps per layout, 2 rounds (~3 min on 2 cores)
    .venv/bin/python benchmarks/multi_node.py --steps 5 --rounds 1 --out /tmp/quick.json

Both layouts train the warm-started tiny model (``tiny:addition``) on the demo addition task with the same
config, seed and global batch (8 prompts x 8 generations, 8 new tokens) and differ only in
``training.num_nodes`` x ``training.num_processes``: 1 x 2 (torchrun ``--standalone``) or 2 x 1 (two torchrun
agents meeting at a c10d rendezvous on 127.0.0.1, as trainer/distributed/rendezvous.py runs them on two hosts).
On one machine both layouts run two ranks talking gloo over loopback, so the figures show what the rendezvous
and the second agent cost, not what a network between hosts costs. The layouts alternate (``--rounds``) and
the medians are reported, because the shared machine's load moves between runs.

Measured per layout: steady-state steps/s (between the first and last step report the caller's sink gets);
the time from calling ``train`` to the first step report (launch, rendezvous, imports, model load, step 1);
and the bytes each rank hands to collectives per step, counted in the ranks by wrapping torch.distributed's
collectives (a ``sitecustomize`` module this script puts on the ranks' ``PYTHONPATH``; the product code is
not changed). With gloo's ring all-reduce each rank sends about ``2 (N - 1) / N`` times an all-reduced
payload over the wire; the analytic gradient payload (trainable parameters x 4 bytes) is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from trainer.config import ExperimentConfig, config_from_dict  # noqa: E402
from trainer.distributed.rendezvous import NodeSpec, endpoint_of, rendezvous_port  # noqa: E402
from trainer.sinks import NullSink, StepReport  # noqa: E402
from trainer.step.loop import train  # noqa: E402

COUNT_DIR_ENV = "RLVR_BENCH_COLLECTIVE_BYTES_DIR"
# Loaded by every rank's interpreter (Python imports ``sitecustomize`` from sys.path at start-up): wraps the
# collectives trainer/distributed/context.py calls and writes, at exit, the bytes this rank handed to each.
SITECUSTOMIZE = """
import os
ENV = "RLVR_BENCH_COLLECTIVE_BYTES_DIR"
if os.environ.get(ENV) and os.environ.get("RANK") is not None:  # a rank, not torchrun's agent
    import atexit, json, pickle
    import torch.distributed as dist
    counts = {}

    def _add(name, n):
        c = counts.setdefault(name, [0, 0]); c[0] += 1; c[1] += int(n)

    def _size(t):
        return t.numel() * t.element_size()

    def _wrap(name, size_of):
        original = getattr(dist, name)
        def wrapped(*args, **kwargs):
            _add(name, size_of(*args, **kwargs))
            return original(*args, **kwargs)
        setattr(dist, name, wrapped)

    _wrap("all_reduce", lambda t, *a, **k: _size(t))
    _wrap("broadcast", lambda t, *a, **k: _size(t))
    _wrap("all_gather", lambda out, t, *a, **k: _size(t))
    _wrap("all_gather_object", lambda out, obj, *a, **k: len(pickle.dumps(obj)))
    _wrap("gather_object", lambda obj, *a, **k: len(pickle.dumps(obj)))

    def _write():
        path = os.path.join(os.environ[ENV], "rank%s-%s.json" % (os.environ.get("RANK", "0"), os.getpid()))
        with open(path, "w") as fh:
            json.dump(counts, fh)

    atexit.register(_write)
"""


class _Timer(NullSink):
    def __init__(self) -> None:
        self.arrivals: list[float] = []

    def on_step(self, report: StepReport) -> None:
        self.arrivals.append(time.perf_counter())


def _config(nodes: int, processes: int, steps: int, out: Path) -> ExperimentConfig:
    return config_from_dict(
        {
            "name": f"multi-node-bench-{nodes}x{processes}",
            "seed": 0,
            "model": {"name_or_path": "tiny:addition"},
            "data": {"source": "demo", "size": 256},
            "rollout": {"num_generations": 8, "max_completion_length": 8, "seed_per_prompt": True},
            "verifiers": [{"name": "exact"}],
            "training": {
                "max_steps": steps,
                "prompts_per_step": 8,
                "micro_batch_size": 32,
                "learning_rate": 1e-4,
                "num_nodes": nodes,
                "num_processes": processes,
                "node_join_timeout_s": 120,
            },
            "checkpoint": {"output_dir": str(out), "save_steps": 0},
        }
    )


def _train_two_nodes(config: ExperimentConfig, timer: _Timer) -> None:
    """Two torchrun agents (one per thread of this process) meeting at a c10d rendezvous on loopback."""
    endpoint = endpoint_of("127.0.0.1", rendezvous_port("127.0.0.1"))
    specs = [
        NodeSpec(2, endpoint, "bench", i == 0, f"bench-{i}", "127.0.0.1", config.training.node_join_timeout_s)
        for i in range(2)
    ]
    errors: list[BaseException] = []

    def node(i: int) -> None:
        try:
            train(config, timer, log=lambda m: None, overwrite_output_dir=i == 0, node=specs[i])
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=node, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def run_once(nodes: int, processes: int, steps: int, work: Path) -> dict[str, Any]:
    counts_dir = work / "bytes"
    counts_dir.mkdir(parents=True)
    os.environ[COUNT_DIR_ENV] = str(counts_dir)
    config = _config(nodes, processes, steps, work / "out")
    timer = _Timer()
    t0 = time.perf_counter()
    if nodes == 1:
        train(config, timer, log=lambda m: None, overwrite_output_dir=True)
    else:
        _train_two_nodes(config, timer)
    total = time.perf_counter() - t0
    os.environ.pop(COUNT_DIR_ENV)
    window = timer.arrivals[-1] - timer.arrivals[0]
    per_rank = [json.loads(p.read_text()) for p in sorted(counts_dir.glob("rank*.json"))]
    sent = [sum(v[1] for v in c.values()) for c in per_rank]
    reduced = [c.get("all_reduce", [0, 0])[1] for c in per_rank]
    return {
        "layout": f"{nodes} node(s) x {processes} process(es)",
        "num_nodes": nodes,
        "num_processes": processes,
        "steps": len(timer.arrivals),
        "total_s": total,
        "launch_to_first_step_s": timer.arrivals[0] - t0,
        "steps_per_s": (len(timer.arrivals) - 1) / window if window > 0 else float("nan"),
        "ranks_counted": len(per_rank),
        "collective_payload_bytes_per_step_per_rank": statistics.mean(sent) / steps if sent else None,
        "all_reduce_bytes_per_step_per_rank": statistics.mean(reduced) / steps if reduced else None,
        "collectives_per_rank": per_rank[0] if per_rank else {},
    }


def _trainable_parameters() -> int:
    from transformers import AutoModelForCausalLM

    from trainer.models.tiny_model import ensure_tiny_model

    model = AutoModelForCausalLM.from_pretrained(str(ensure_tiny_model("tiny:addition")))
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2, help="alternations of the two layouts")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "multi_node.json"))
    args = parser.parse_args()
    load_before = os.getloadavg()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [tmp, os.environ.get("PYTHONPATH")]))
        for r in range(args.rounds):
            for nodes, processes in ((1, 2), (2, 1)):
                row = run_once(nodes, processes, args.steps, Path(tmp) / f"r{r}-{nodes}x{processes}")
                results.append({"round": r, **row})
                print(
                    f"round {r}: {row['layout']}: {row['steps_per_s']:.2f} steps/s, launch to first step "
                    f"{row['launch_to_first_step_s']:.1f} s, {row['collective_payload_bytes_per_step_per_rank']:.0f} "
                    "bytes to collectives per step per rank",
                    flush=True,
                )
    params = _trainable_parameters()

    def median(layout_nodes: int, key: str) -> float:
        return statistics.median(r[key] for r in results if r["num_nodes"] == layout_nodes)

    summary = {
        layout: {
            key: median(nodes, key)
            for key in (
                "steps_per_s",
                "launch_to_first_step_s",
                "collective_payload_bytes_per_step_per_rank",
                "all_reduce_bytes_per_step_per_rank",
            )
        }
        for layout, nodes in (("1 node x 2 processes", 1), ("2 nodes x 1 process", 2))
    }
    ratio = summary["2 nodes x 1 process"]["steps_per_s"] / summary["1 node x 2 processes"]["steps_per_s"]
    grad_bytes = params * 4
    print(
        f"2 nodes x 1 / 1 node x 2 steps/s: {ratio:.2f}; gradient payload {grad_bytes} bytes per step per rank"
    )
    payload = {
        "settings": {
            "model": "tiny:addition",
            "steps": args.steps,
            "rounds": args.rounds,
            "prompts_per_step": 8,
            "num_generations": 8,
            "max_completion_length": 8,
            "threads_per_process": int(os.environ["OMP_NUM_THREADS"]),
            "backend": "gloo over 127.0.0.1",
        },
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_before": load_before,
            "load_avg_after": os.getloadavg(),
            "python": platform.python_version(),
        },
        "trainable_parameters": params,
        "gradient_payload_bytes_per_step_per_rank": grad_bytes,
        "ring_all_reduce_wire_bytes_per_step_per_rank_2_ranks": grad_bytes * 2 * (2 - 1) / 2,
        "summary_medians": summary,
        "steps_per_s_ratio_2x1_over_1x2": ratio,
        "results": results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
