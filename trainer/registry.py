"""A tiny name -> implementation registry used by every pluggable axis (DESIGN.md, "Registries").

One signature per registry, a decorator that refuses duplicate names, and a getter whose error lists the
valid names, so a typo in a config tells the user what they could have written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from trainer.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to implementations of one kind (e.g. advantage estimators)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: ``@ADVANTAGES.register("grpo")``. Refuses a name that is already taken."""

        def decorate(item: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is already registered ({self._items[name]!r})")
            self._items[name] = item
            return item

        return decorate

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            valid = ", ".join(sorted(self._items)) or "(none registered)"
            raise ConfigError(f"unknown {self.kind} {name!r}; valid names are: {valid}") from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def __len__(self) -> int:
        return len(self._items)
