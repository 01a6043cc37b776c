import pytest

from trainer.errors import ConfigError
from trainer.registry import Registry


def test_it_refuses_a_duplicate_name() -> None:
    reg: Registry[int] = Registry("thing")
    reg.register("a")(1)
    with pytest.raises(ValueError, match="already registered"):
        reg.register("a")(2)


def test_unknown_name_error_lists_valid_names() -> None:
    reg: Registry[int] = Registry("thing")
    reg.register("b")(1)
    reg.register("a")(2)
    with pytest.raises(ConfigError, match=r"unknown thing 'c'; valid names are: a, b"):
        reg.get("c")
