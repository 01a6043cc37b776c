"""``code``: run the completion's Python program against test cases in a sandbox; reward = tests passed.

The "code execution / unit-test reward" of shared/METHODS.md §3a (001:L99, 001:L63; 004:L77, 004:L443):
run the program on hidden tests and reward passing all of them (``reward: all``) or the fraction passed
(``reward: fraction``). Test cases are either stdin -> expected stdout pairs (APPS / CodeContests style)
or assert statements run after the program (MBPP / HumanEval style).

How it differs from the papers' harnesses:

- Every test runs in ``trainer.sandbox.run_python``: bubblewrap namespaces plus a seccomp filter (no
  network, no host files, processes or environment) and CPU, memory, output-size, process-count and
  wall-clock limits (see that package for what guarantees what). A program that hangs, forks, allocates
  10 GB or opens a socket fails its test; training goes on. Where the sandbox cannot be built (no
  bubblewrap, user namespaces disabled) the verifier refuses: every completion gets an error saying
  what is missing; nothing runs unsandboxed.
- Completions are scored in parallel in timeout-pool workers (each worker starts sandboxes), with a hard
  per-completion budget ``max_tests x wall_s`` plus a margin, so no completion can stall a batch.
- Tests come from ``sample.meta[tests_field]`` (the data file's column) or, when absent, from the reference
  answer parsed as JSON; accepted shapes: a list of ``{"input", "output"}`` / ``{"assert"}`` objects,
  ``{"inputs": [...], "outputs": [...]}`` (APPS), or a string of assert statements.
- Outputs are compared line by line with trailing whitespace and trailing blank lines ignored (``lines``),
  token by token (``tokens``), or exactly (``exact``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field

from trainer.samples import Sample
from trainer.verifiers.base import (
    VERIFIERS,
    VerifierParams,
    VerifierResult,
    error_result,
    score_whole_batch,
    shown,
)
from trainer.verifiers.timeout_pool import run_with_timeout

_FENCE_RE = re.compile(r"```[ \t]*(python3?|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_DETAIL_TESTS = 10  # per-test outcomes kept in a detail record


class CodeParams(VerifierParams):
    extract: Literal["auto", "fenced", "full"] = Field(
        "auto",
        description="Where the program is: fenced = the last ```python block (nothing found -> reward 0); "
        "full = the whole completion; auto = the last fenced block if there is one, else the whole completion.",
    )
    tests_field: str = Field(
        "tests",
        min_length=1,
        description="Key of sample.meta (a data-file column) holding the test cases; without it the reference "
        "answer is read as JSON test cases.",
    )
    reward: Literal["all", "fraction"] = Field(
        "all",
        description="all: 1 only when every test passes (the usual unit-test reward); fraction: the "
        "share of tests passed.",
    )
    output_match: Literal["lines", "tokens", "exact"] = Field(
        "lines",
        description="How stdout is compared with the expected output: lines (trailing spaces and blank lines "
        "ignored), tokens (any whitespace), exact.",
    )
    wall_s: float = Field(5.0, gt=0, le=120, description="Wall-clock limit per test (seconds).")
    cpu_s: int = Field(4, ge=1, le=120, description="CPU-time limit per test (seconds, RLIMIT_CPU).")
    memory_mb: int = Field(512, ge=64, le=16384, description="Address-space limit per test (MB, RLIMIT_AS).")
    output_kb: int = Field(256, ge=1, le=65536, description="Output-size limit per test (KB, RLIMIT_FSIZE).")
    max_tests: int = Field(
        50, ge=1, le=1000, description="Run at most this many test cases per completion (the first ones)."
    )


def extract_program(completion: str, mode: str) -> str | None:
    """The program text of a completion: its last ```python fenced block, or the whole text (see ``extract``)."""
    blocks = _FENCE_RE.findall(completion)
    if blocks:
        return str(blocks[-1][1])
    if mode == "fenced":
        return None
    text = completion.strip()
    return text or None


def parse_tests(raw: Any) -> list[dict[str, str]]:
    """Normalise test cases to ``[{"input", "output"} | {"assert"}]``; ValueError says what shape is expected."""
    if isinstance(raw, str):
        stripped = raw.strip()
        if stripped.startswith(("[", "{")):
            try:
                raw = json.loads(stripped)
            except json.JSONDecodeError as err:
                raise ValueError(f"test cases are not valid JSON ({err})") from None
        elif stripped:
            return [{"assert": stripped}]
    if isinstance(raw, dict) and "inputs" in raw and "outputs" in raw:
        inputs, outputs = raw["inputs"], raw["outputs"]
        if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
            raise ValueError("'inputs' and 'outputs' must be lists of the same length")
        raw = [{"input": i, "output": o} for i, o in zip(inputs, outputs, strict=True)]
    if not isinstance(raw, list) or not raw:
        raise ValueError(
            'expected a non-empty list of test cases such as [{"input": "1 2\\n", "output": "3"}] or '
            '[{"assert": "assert add(1, 2) == 3"}], {"inputs": [...], "outputs": [...]}, or assert statements'
        )
    tests = []
    for n, case in enumerate(raw, 1):
        if isinstance(case, str) and case.strip():
            tests.append({"assert": case})
        elif isinstance(case, dict) and isinstance(case.get("assert"), str):
            tests.append({"assert": case["assert"]})
        elif isinstance(case, dict) and "output" in case:
            tests.append({"input": _text(case.get("input", "")), "output": _text(case["output"])})
        else:
            raise ValueError(
                f"test case {n} needs 'input' and 'output', or 'assert' (got {str(case)[:80]!r})"
            )
    return tests


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return str(value)


def outputs_match(actual: str, expected: str, mode: str) -> bool:
    if mode == "exact":
        return actual == expected
    if mode == "tokens":
        return actual.split() == expected.split()
    return [line.rstrip() for line in actual.rstrip().splitlines()] == [
        line.rstrip() for line in expected.rstrip().splitlines()
    ]


def run_tests(
    program: str, tests: list[dict[str, str]], limits: dict[str, Any], output_match: str
) -> list[dict[str, str]]:
    """Run every test in its own sandbox (called in a timeout-pool worker); one ``{status, reason}`` each."""
    from trainer.sandbox import Limits, run_python

    box = Limits(**limits)
    outcomes = []
    for case in tests:
        if "assert" in case:
            result = run_python(program + "\n\n" + case["assert"] + "\n", limits=box)
            passed = result.ok
            reason = "assertions passed" if passed else result.reason
        else:
            result = run_python(program, stdin=case["input"], limits=box)
            passed = result.ok and outputs_match(result.stdout, case["output"], output_match)
            reason = result.reason if not result.ok else "output matches"
            if result.ok and not passed:
                reason = f"wrong output: got {shown(result.stdout.strip(), 80)!r}, expected {shown(case['output'].strip(), 80)!r}"
        status = "passed" if passed else ("wrong_output" if result.ok else result.status)
        outcomes.append({"status": status, "reason": reason})
    return outcomes


@VERIFIERS.register("code")
class CodeVerifier:
    """Reward from running the completion's Python program on the sample's test cases in a sandbox.

    The code-execution / unit-test reward of shared/METHODS.md §3a (001:L99, 001:L63); how it differs
    (sandbox, test-case shapes, output matching) is in the module docstring.

    >>> v = CodeVerifier(CodeParams())
    >>> tests = '[{"input": "2 3", "output": "5"}]'
    >>> [r.reward for r in v(["```python\\na, b = map(int, input().split())\\nprint(a + b)\\n```", "print(6)"],
    ...                       [Sample("s", "add", tests)] * 2)]
    [1.0, 0.0]
    """

    name: ClassVar[str] = "code"
    Params: ClassVar[type[VerifierParams]] = CodeParams

    def __init__(self, params: CodeParams) -> None:
        self.params = params

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        return score_whole_batch(completions, samples, self._score_batch)

    def _tests_of(self, sample: Sample) -> list[dict[str, str]]:
        raw = sample.meta.get(self.params.tests_field)
        where = f"meta[{self.params.tests_field!r}]"
        if raw is None:
            raw, where = sample.answer, "the reference answer"
        if raw is None:
            raise ValueError(
                f"sample {sample.id!r} has no test cases: add a {self.params.tests_field!r} column to the data "
                "or put JSON test cases in the answer column"
            )
        try:
            return parse_tests(raw)[: self.params.max_tests]
        except ValueError as err:
            raise ValueError(f"sample {sample.id!r}: test cases in {where}: {err}") from None

    def _score_batch(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        from trainer.sandbox import SandboxUnavailable, require_sandbox

        try:
            require_sandbox()  # fail closed: never run a completion without the sandbox
        except SandboxUnavailable as err:
            return [error_result(str(err)) for _ in completions]
        p = self.params
        results: list[VerifierResult | None] = [None] * len(completions)
        jobs: list[tuple[int, str, int]] = []
        args: list[tuple[Any, ...]] = []
        limits = {"wall_s": p.wall_s, "cpu_s": p.cpu_s, "memory_mb": p.memory_mb, "output_kb": p.output_kb}
        for i, (completion, sample) in enumerate(zip(completions, samples, strict=True)):
            try:
                tests = self._tests_of(sample)
            except ValueError as err:
                results[i] = error_result(str(err))
                continue
            program = extract_program(completion, p.extract)
            if program is None:
                reason = "no ```python block found" if p.extract == "fenced" else "empty completion"
                results[i] = VerifierResult(
                    0.0, False, {"extracted": None, "expected": f"{len(tests)} tests", "reason": reason}
                )
                continue
            jobs.append((i, program, len(tests)))
            args.append((program, tests, limits, p.output_match))
        budget = max(len(a[1]) for a in args) * (p.wall_s + 2.0) + 10.0 if args else 1.0
        outcomes = run_with_timeout(run_tests, args, budget)
        for (i, program, n_tests), outcome in zip(jobs, outcomes, strict=True):
            detail: dict[str, Any] = {"extracted": shown(program), "expected": f"{n_tests} tests"}
            if not outcome.ok:
                results[i] = error_result(outcome.error or "unknown error", **detail)
                continue
            results[i] = self._result(outcome.value, detail)
        return [r if r is not None else error_result("not scored") for r in results]

    def _result(self, tests: list[dict[str, str]], detail: dict[str, Any]) -> VerifierResult:
        passed = sum(t["status"] == "passed" for t in tests)
        total = len(tests)
        all_passed = passed == total
        reward = float(all_passed) if self.params.reward == "all" else passed / total
        first_failure = next(
            (f"test {n}: {t['reason']}" for n, t in enumerate(tests, 1) if t["status"] != "passed"), ""
        )
        reason = f"passed {passed}/{total} tests" + (f"; {first_failure}" if first_failure else "")
        return VerifierResult(
            reward, all_passed, {**detail, "reason": reason, "passed": passed, "tests": tests[:_DETAIL_TESTS]}
        )
