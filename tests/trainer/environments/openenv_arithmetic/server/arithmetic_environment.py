"""The arithmetic environment: answer a + b within a few attempts."""

import random
import time
from typing import Any
from uuid import uuid4

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State

try:
    from ..models import ArithmeticAction, ArithmeticObservation
except ImportError:
    from models import ArithmeticAction, ArithmeticObservation


class ArithmeticEnvironment(Environment):
    """Each session has its own instance and no shared state, so sessions may run at once."""

    SUPPORTS_CONCURRENT_SESSIONS: bool = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid4()), step_count=0)
        self._a = self._b = 0
        self._attempts_left = 0
        self._delay_s = 0.0
        self._filler = ""

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        a: int | None = None,
        b: int | None = None,
        max_attempts: int = 3,
        delay_s: float = 0.0,
        pad_chars: int = 0,
        **kwargs: Any,
    ) -> ArithmeticObservation:
        rng = random.Random(seed)
        self._a = a if a is not None else rng.randint(10, 99)
        self._b = b if b is not None else rng.randint(10, 99)
        self._attempts_left = max_attempts
        self._delay_s = min(float(delay_s), 30.0)
        self._filler = "x" * min(int(pad_chars), 1_000_000)
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return ArithmeticObservation(
            question=f"What is {self._a} + {self._b}?",
            attempts_left=self._attempts_left,
            filler=self._filler,
            done=False,
            reward=None,
        )

    def step(
        self, action: ArithmeticAction, timeout_s: float | None = None, **kwargs: Any
    ) -> ArithmeticObservation:
        time.sleep(self._delay_s)
        self._state.step_count += 1
        self._attempts_left -= 1
        right = action.answer.strip() == str(self._a + self._b)
        guess = action.answer.strip()
        if right:
            feedback = "Correct."
        else:
            hint = "not a number"
            if guess.isdigit() and len(guess) < 10:
                hint = "too high" if int(guess) > self._a + self._b else "too low"
            feedback = f"Wrong ({hint}). {self._attempts_left} attempts left."
        return ArithmeticObservation(
            question=f"What is {self._a} + {self._b}?",
            feedback=feedback,
            attempts_left=self._attempts_left,
            done=right or self._attempts_left == 0,
            reward=1.0 if right else 0.0,
            metadata={"step": self._state.step_count},
        )

    @property
    def state(self) -> State:
        return self._state
