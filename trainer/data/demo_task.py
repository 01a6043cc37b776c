"""The built-in demo task: two-digit addition (``"37+58="`` -> ``"95"``).

It is what ``make demo`` trains the tiny local model on, so it has to be learnable in minutes on a CPU.
The tiny model's SFT warm start builds its examples with :func:`addition_prompt`, so the format it was
warmed up on and the format RL samples here are the same string by construction.
"""

from __future__ import annotations

import random

from trainer.samples import Sample


def addition_prompt(a: int, b: int) -> str:
    """The demo prompt for ``a + b``: no spaces, ending in ``=`` so the answer is the continuation."""
    return f"{a}+{b}="


def demo_samples(size: int, seed: int) -> list[Sample]:
    """``size`` addition problems with operands drawn uniformly from 0..99; the same for the same seed.

    >>> [(s.id, s.prompt, s.answer) for s in demo_samples(2, seed=0)]
    [('demo-0', '49+97=', '146'), ('demo-1', '53+5=', '58')]
    """
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    rng = random.Random(seed)
    samples = []
    for i in range(size):
        a, b = rng.randint(0, 99), rng.randint(0, 99)
        samples.append(Sample(id=f"demo-{i}", prompt=addition_prompt(a, b), answer=str(a + b)))
    return samples
