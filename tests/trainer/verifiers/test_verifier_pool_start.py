"""The verifier process pool starts from any script, and says so clearly when it really cannot start.

Its workers used to be multiprocessing (forkserver) children, which import the caller's ``__main__``: a
script calling a verifier at top level, without an ``if __name__ == "__main__":`` guard, ran itself again
inside the pool, where no worker could start, and that copy scored every sample 0.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from trainer.samples import Sample
from trainer.verifiers import build_verifier, score_batch
from trainer.verifiers import timeout_pool as tp
from trainer.verifiers.timeout_pool import PoolStartError, TimeoutPool

REPO = Path(__file__).resolve().parents[3]

UNGUARDED = textwrap.dedent(
    """
    from trainer.samples import Sample
    from trainer.verifiers import build_verifier

    verifier = build_verifier("math", {})
    results = verifier([r"\\boxed{3}", "so x = 1/2"], [Sample("a", "q", "3"), Sample("b", "q", "0.5")])
    print("REWARDS", [r.reward for r in results], [r.detail.get("error") for r in results], flush=True)
    """
)


def test_a_script_without_a_main_guard_scores_correctly_and_runs_once(tmp_path: Path) -> None:
    script = tmp_path / "score_unguarded.py"
    script.write_text(UNGUARDED)
    done = subprocess.run(
        [sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("REWARDS") == 1, done.stdout
    assert "REWARDS [1.0, 1.0] [None, None]" in done.stdout


def test_a_pool_whose_interpreter_cannot_start_raises_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python3")
    with TimeoutPool(max_workers=1) as pool, pytest.raises(PoolStartError, match="could not start"):
        pool.run(abs, [(-1,)], timeout_s=5)


def test_a_worker_that_exits_before_it_is_ready_raises_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")
    with TimeoutPool(max_workers=1) as pool, pytest.raises(PoolStartError, match="exited with code 1"):
        pool.run(abs, [(-1,)], timeout_s=5)


def test_a_verifier_whose_pool_cannot_start_raises_instead_of_scoring_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tp, "_default_pool", TimeoutPool(max_workers=1))
    monkeypatch.setattr(sys, "executable", "/nonexistent/python3")
    verifier = build_verifier("math", {})
    with pytest.raises(PoolStartError, match="the verifier process pool could not start"):
        score_batch([("math", verifier)], [1.0], [r"\boxed{3}"], [Sample("a", "q", "3")])
