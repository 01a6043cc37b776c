"""Judge throughput: the ``judge`` reward source with ``concurrency`` 8 against serial calls (concurrency 1).

Both score the same completions through the same ``EndpointJudge`` (trainer/verifiers/judge_endpoint.py)
against a real OpenAI-compatible server: vLLM's server (what ``vllm serve`` runs, from .venv-vllm, vLLM's CPU
build) on the warm-started tiny model, started here as the judge's tests start it
(tests/trainer/rewards/vllm_server.py). Two endpoints:

- ``local``: the server itself, on this machine's cores (concurrency helps only as far as vLLM batches the calls
  and the cores are free);
- ``remote_200ms``: the same server behind the tests' proxy, which adds a fixed 200 ms before every answer, as a
  judge across a network or a busy provider would: there concurrency hides the waiting.

Reported per endpoint and concurrency: completions/s (median of --repeats alternating runs after one warm-up
batch), the ratio concurrency 8 / serial, and how many scores came back absent (should be 0). Written to
benchmarks/results/judge_throughput.json with the git revision, the machine's CPU count and load average.

    .venv/bin/python benchmarks/judge_throughput.py                 # 64 completions, 3 repeats (~3 min on 2 cores)
    .venv/bin/python benchmarks/judge_throughput.py --n 16 --repeats 1 --out /tmp/judge.json   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks.provenance import code_revision  # noqa: E402 -- after the path

RESULTS = REPO / "benchmarks" / "results" / "judge_throughput.json"
LATENCY_S = 0.2


def _judge(base_url: str, concurrency: int) -> Any:
    from tests.trainer.rewards.vllm_server import SERVED_NAME
    from trainer.verifiers.base import build_verifier

    judge = build_verifier(
        "judge",
        {
            "base_url": base_url,
            "model": SERVED_NAME,
            "api_key_secret": "bench-judge",
            "prompt_template": "{completion}",
            "parse": {"kind": "score", "pattern": r"(\d+)", "min": 0, "max": 1e6},
            "concurrency": concurrency,
            "max_tokens": 8,
        },
    )
    judge.load()  # type: ignore[attr-defined]
    return judge


def _timed(judge: Any, completions: list[str], samples: list[Any]) -> tuple[float, int]:
    started = time.perf_counter()
    results = judge(completions, samples)
    return len(completions) / (time.perf_counter() - started), sum(r.absent for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=64, help="completions scored per run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    import trainer.verifiers.judge_endpoint  # noqa: F401 -- registers "judge"
    from tests.trainer.rewards.vllm_server import FaultProxy, VLLMServer
    from trainer.models.tiny_model import ensure_tiny_model
    from trainer.samples import Sample
    from trainer.verifiers.secrets import provide_secrets

    rng = random.Random(0)
    completions = [f"{rng.randint(0, 99)}+{rng.randint(0, 99)}=" for _ in range(args.n)]
    samples = [Sample(f"s{i}", "q", None) for i in range(args.n)]
    key = secrets.token_urlsafe(24)
    provide_secrets({"bench-judge": key})
    load_before = os.getloadavg()
    server = VLLMServer(ensure_tiny_model(log=print), Path(tempfile.mkdtemp(prefix="judge-bench-")), key)
    proxy = FaultProxy(server.base_url, latency_s=LATENCY_S)
    endpoints = {"local": server.base_url, f"remote_{LATENCY_S * 1000:.0f}ms": proxy.base_url}
    rows: dict[str, dict[str, Any]] = {}
    try:
        for name, url in endpoints.items():
            judges = {c: _judge(url, c) for c in (1, 8)}
            judges[8](completions[:8], samples[:8])  # warm-up
            runs: dict[int, list[float]] = {1: [], 8: []}
            absent = 0
            for _ in range(args.repeats):
                for concurrency, judge in judges.items():  # alternating: load drift hits both alike
                    per_s, missing = _timed(judge, completions, samples)
                    runs[concurrency].append(per_s)
                    absent += missing
            serial, parallel = statistics.median(runs[1]), statistics.median(runs[8])
            rows[name] = {
                "serial_completions_per_s": round(serial, 2),
                "concurrency8_completions_per_s": round(parallel, 2),
                "ratio": round(parallel / serial, 2),
                "runs": {str(c): [round(r, 2) for r in v] for c, v in runs.items()},
                "absent": absent,
            }
            print(f"{name:>14}: serial {serial:7.2f}/s  concurrency 8 {parallel:7.2f}/s  ratio {parallel / serial:5.2f}x"
                  f"  absent {absent}")  # fmt: skip
    finally:
        proxy.close()
        server.close()
    report = {
        "revision": code_revision(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_before": load_before,
                    "load_after": os.getloadavg()},
        "model": "tiny:addition through vLLM's OpenAI-compatible server (CPU build)",
        "completions": args.n,
        "repeats": args.repeats,
        "added_latency_s": LATENCY_S,
        "endpoints": rows,
        "command": "python benchmarks/judge_throughput.py " + " ".join(sys.argv[1:]),
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
