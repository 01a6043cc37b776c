"""What one benchmark is: a dataset, a prompt template, verifiers, sampling settings and the metrics to report.

Importable without torch (the web process builds and validates these for its benchmark form); the engine
that runs one is ``trainer.evaluation.engine``. Metric choices follow the seed papers' tables (METHODS.md §EVAL):
Avg@k (`001:L3`), Pass@k (`001:L13`, `001:L93`; the unbiased estimator is the standard one of Chen et al.
2021, marked [ext] in METHODS.md) and majority vote / self-consistency (`001:L47`, `004:L357`).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, ValidationError, model_validator

from trainer.bounds import MAX_SEED, BoundedModel
from trainer.data.config import DataConfig
from trainer.errors import ConfigError
from trainer.verifiers.spec import VerifierSpec

# The one metric of a greedy benchmark (``greedy: true``): named with its decoding, as "pass@4 (n=8)" is with its n.
GREEDY_ACCURACY = "accuracy (greedy)"


def _default_eval_data() -> DataConfig:
    return DataConfig(source="demo", size=100, data_seed=1, shuffle=False)


class BenchmarkConfig(BoundedModel):
    """One benchmark: problems, how they are shown and scored, how many samples each, which metrics."""

    name: str = Field(
        min_length=1,
        max_length=100,
        description="Benchmark name; metrics are reported as eval/<name>/<metric> (DESIGN.md stable names).",
    )
    data: DataConfig = Field(
        default_factory=_default_eval_data,
        description="The problems: built-in addition ('demo'), a local JSONL/JSON/CSV/Parquet file ('file', "
        "GSM8K / MATH500 style rows) or a reasoning-gym task (Stojanovski et al. 2025), with the prompt "
        "template. data.shuffle is ignored: problems are evaluated in file / generation order.",
    )
    verifiers: list[VerifierSpec] = Field(
        default_factory=lambda: [VerifierSpec(name="exact")],
        max_length=64,
        description="Verifiers as in training; the first one decides 'correct' (what Pass@k and maj@k "
        "count) and gives the extracted answer that majority voting compares.",
    )
    n_samples: int = Field(
        8,
        ge=1,
        le=1024,
        description="Samples per problem: the n of Avg@n and of the unbiased Pass@k estimator (n >= k; "
        "RLVR papers commonly report Avg@12 and Pass@8).",
    )
    temperature: float = Field(
        1.0, gt=0, le=100, description="Sampling temperature (Pass@k is evaluated with sampling)."
    )
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass (Holtzman et al. 2020).")
    top_k: int = Field(0, ge=0, le=1_000_000, description="Top-k sampling; 0 disables it.")
    max_tokens: int = Field(
        16, ge=1, le=131_072, description="Maximum new tokens per sample; longer samples count as truncated."
    )
    seed: int = Field(
        0,
        ge=0,
        le=MAX_SEED,
        description="Sampling seed; seed i of num_seeds uses seed + i. The same seed gives the same "
        "samples on CPU, interrupted or not.",
    )
    pass_k: list[Annotated[int, Field(ge=1, le=1024)]] = Field(
        default_factory=list,
        max_length=64,
        description="The k of Pass@k (probability that one of k samples is correct), "
        "each 1 <= k <= n_samples; empty means [1, n_samples]. Estimated without bias from all n samples "
        "as 1 - C(n-c, k) / C(n, k) (Chen et al. 2021).",
    )
    maj_k: list[Annotated[int, Field(ge=1, le=1024)]] = Field(
        default_factory=list,
        max_length=64,
        description="The k of maj@k: majority vote over the normalised extracted answers of the first k "
        "samples (self-consistency), ties broken by first occurrence; each "
        "1 <= k <= n_samples; empty means [n_samples].",
    )
    batch_size: int = Field(
        256,
        ge=1,
        le=65_536,
        description="Samples generated together in one batch (bounds memory); a batch holds "
        "whole problems (max(1, batch_size // n_samples) of them).",
    )
    num_seeds: int = Field(
        1,
        ge=1,
        le=32,
        description="Independent repetitions with seeds seed .. seed+num_seeds-1; the metrics average "
        "them and the confidence intervals resample seeds too (multi-seed confidence intervals).",
    )
    bootstrap_samples: int = Field(
        1000,
        ge=0,
        le=100_000,
        description="Bootstrap resamples (over problems, and seeds) for the 95% confidence intervals; 0 "
        "skips them (Efron & Tibshirani 1993, percentile method).",
    )
    confidence: float = Field(0.95, gt=0, lt=1, description="Coverage of the bootstrap confidence intervals.")
    max_problems: int | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="Evaluate only the first N problems (quick looks, periodic evaluation).",
    )
    greedy: bool = Field(
        False,
        description="Greedy decoding (the most likely token at every position) instead of sampling: one completion "
        "per problem, reported as 'accuracy (greedy)', the share of problems answered correctly (the figure RLVR "
        "papers quote before and after training). Needs n_samples 1; temperature, top_p, top_k, pass_k and maj_k "
        "do not apply.",
    )

    @model_validator(mode="after")
    def _check(self) -> BenchmarkConfig:
        n = self.n_samples
        if self.greedy and n != 1:
            raise ValueError(
                f"greedy decoding gives one completion per problem, but n_samples is {n}: set n_samples to 1"
            )
        # Resolved here (not hidden in the engine) so model_dump() shows exactly what will be reported.
        object.__setattr__(self, "pass_k", sorted(set(self.pass_k or [1, n])))
        object.__setattr__(self, "maj_k", sorted(set(self.maj_k or [n])))
        for field, ks in (("pass_k", self.pass_k), ("maj_k", self.maj_k)):
            bad = [k for k in ks if not 1 <= k <= n]
            if bad:
                raise ValueError(
                    f"{field} has {bad}, but every k must be between 1 and n_samples={n}: raise n_samples "
                    f"or drop those k"
                )
        if (
            self.greedy
        ):  # pass@1 and maj@1 of one greedy completion are its accuracy: reported once, by that name
            object.__setattr__(self, "pass_k", [])
            object.__setattr__(self, "maj_k", [])
        _check_verifiers(self.verifiers)
        return self

    def sampling(self) -> tuple[float, float, int]:
        """(temperature, top_p, top_k) the engine samples with; greedy is top-k 1, which leaves the engine's
        sampling step only the most likely token (the completions of ``generate(do_sample=False)``)."""
        return (1.0, 1.0, 1) if self.greedy else (self.temperature, self.top_p, self.top_k)

    @property
    def reward_weights(self) -> list[float]:
        return [1.0] * len(self.verifiers)

    @property
    def problems_per_batch(self) -> int:
        return max(1, self.batch_size // self.n_samples)


def _check_verifiers(specs: list[VerifierSpec]) -> None:
    from trainer.verifiers import VERIFIERS, build_verifier

    if not specs:
        raise ValueError("verifiers is empty: add at least one, e.g. {name: exact}")
    keys = [v.key for v in specs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"verifier labels must be unique, got {keys}: set 'label' to tell them apart")
    for spec in specs:
        if spec.name not in VERIFIERS:
            raise ValueError(f"verifier {spec.name!r} is unknown; valid: {', '.join(VERIFIERS.names())}")
        build_verifier(spec.name, spec.params)


def benchmark_from_dict(data: dict[str, Any], source: str = "benchmark") -> BenchmarkConfig:
    """Validate a plain dict (YAML, JSON, a form) into a BenchmarkConfig, or raise ConfigError saying where."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a benchmark must be a mapping of fields, got {type(data).__name__}")
    try:
        return BenchmarkConfig.model_validate(data)
    except ValidationError as err:
        lines = [f"invalid benchmark in {source}:"]
        for e in err.errors():
            loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
            lines.append(f"  {loc}: {e['msg'].removeprefix('Value error, ')}")
        raise ConfigError("\n".join(lines)) from None
