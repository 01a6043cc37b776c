"""Step segmenters on the tiny chain model's real tokenisation of chain-arithmetic scratchpads."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from trainer.data.chain_arithmetic import chain_arithmetic_samples
from trainer.errors import ConfigError
from trainer.process.steps import MAX_STEPS, SEGMENTERS, segment, spans_from_ends
from trainer.verifiers.chain_arithmetic import split_scratchpad


@pytest.fixture(scope="module")
def tok() -> object:
    from transformers import AutoTokenizer

    from trainer.models.tiny_model import ensure_tiny_model

    path: Path = ensure_tiny_model("tiny:chain", log=lambda m: None)
    return AutoTokenizer.from_pretrained(path)


def _ids(tok: object, text: str, eos: bool = True) -> list[int]:
    ids = list(tok(text, add_special_tokens=False)["input_ids"])  # type: ignore[operator]
    return [*ids, tok.eos_token_id] if eos else ids  # type: ignore[attr-defined]


def _spec(name: str, **params: object) -> SimpleNamespace:
    return SimpleNamespace(name=name, params=params)


def _covers(spans: list[tuple[int, int]], n: int) -> bool:
    return (
        bool(spans)
        and spans[0][0] == 0
        and spans[-1][1] == n
        and all(a[1] == b[0] and a[0] < a[1] for a, b in zip(spans, [*spans[1:], (n, n + 1)], strict=True))
    )


def test_lines_steps_are_the_verifiers_lines_then_the_answer(tok: object) -> None:
    samples = chain_arithmetic_samples(40, seed=3, level="mixed")
    texts = [s.meta["solution"] for s in samples]
    ids = [_ids(tok, t) for t in texts]
    spans = segment(ids, tok, texts, None, _spec("lines"))
    for text, row, spn in zip(texts, ids, spans, strict=True):
        assert _covers(spn, len(row))
        pieces = [tok.decode(row[s:e], skip_special_tokens=True) for s, e in spn]  # type: ignore[attr-defined]
        lines, _ = split_scratchpad(text, len(text))
        assert len(spn) == len(lines) + 1  # every verifier line, then "#### answer" (with the end token)
        for piece, line in zip(pieces, lines, strict=False):
            assert piece.rstrip("=;\n") == line.text  # type: ignore[union-attr]
        assert pieces[-1].startswith("####") and spn[-1][1] == len(row)  # the end token is in the last step


def test_the_documented_example(tok: object) -> None:
    text = "15*4-5=60-5=55;#### 55"
    row = _ids(tok, text)
    (spn,) = segment([row], tok, [text], None, _spec("lines"))
    assert [tok.decode(row[s:e], skip_special_tokens=True) for s, e in spn] == [  # type: ignore[attr-defined]
        "15*4-5=",
        "60-5=",
        "55;",
        "#### 55",
    ]


def test_blank_lines_and_doubled_separators_join_the_step_before(tok: object) -> None:
    text = "15*4-5==\n60-5= ;55;\n#### 55"
    row = _ids(tok, text)
    (spn,) = segment([row], tok, [text], None, _spec("lines"))
    lines, _ = split_scratchpad(text, len(text))
    assert len(spn) == len(lines) + 1 == 4


def test_pattern_segmenter_ends_steps_where_matches_end(tok: object) -> None:
    text = "15*4-5=60-5=55;#### 55"
    row = _ids(tok, text, eos=False)
    (spn,) = segment([row], tok, [text], None, _spec("pattern", pattern=";"))
    assert spn == [(0, 15), (15, len(row))]
    (spn,) = segment([row], tok, [text], None, _spec("pattern", pattern="[0-9]+"))
    assert spn == [
        (0, 2),
        (2, 4),
        (4, 6),
        (6, 9),
        (9, 11),
        (11, 14),
        (14, len(row)),
    ]  # 15 *4 -5 =60 -5 =55 ;#### 55


def test_pattern_segmenter_refuses_a_bad_pattern_when_validated() -> None:
    from trainer.config import config_from_dict

    with pytest.raises(ConfigError, match="pattern"):
        config_from_dict({"process_reward": {"segmenter": {"name": "pattern", "params": {"pattern": "(a"}}}})


def test_entropy_segmenter_ends_after_high_entropy_tokens(tok: object) -> None:
    text = "15*4-5=60-5=55;#### 55"
    row = _ids(tok, text)
    ent = [0.1] * len(row)
    for t in (3, 4, 10, 11, 12):
        ent[t] = 5.0
    (spn,) = segment([row], tok, [text], [ent], _spec("entropy", quantile=0.8, min_tokens=3))
    # 3 ends a step (0..3 is 4 tokens); 4 is too close; 10 ends one; 11 and 12 are too close
    assert spn == [(0, 4), (4, 11), (11, len(row))]
    (spn,) = segment([row], tok, [text], [ent], _spec("entropy", quantile=0.8, min_tokens=1))
    assert spn == [(0, 4), (4, 5), (5, 11), (11, 12), (12, 13), (13, len(row))]
    (spn,) = segment([row], tok, [text], [[0.5] * len(row)], _spec("entropy"))
    assert spn == [(0, len(row))]  # equal entropies: no token stands out, one step


def test_at_most_max_steps_the_rest_merged_into_the_last(tok: object) -> None:
    text = "=".join(["1"] * 100)
    row = _ids(tok, text)
    (spn,) = segment([row], tok, [text], None, _spec("lines"))
    assert len(spn) == MAX_STEPS and _covers(spn, len(row)) and spn[-1] == (2 * (MAX_STEPS - 1), len(row))


def test_spans_from_ends_edge_cases() -> None:
    assert spans_from_ends([], 0) == []
    assert spans_from_ends([0, 5, 9], 5) == [(0, 5)]
    assert spans_from_ends([3, 3, 1], 5) == [(0, 1), (1, 3), (3, 5)]


def test_the_registry_lists_three_segmenters() -> None:
    assert SEGMENTERS.names() == ["entropy", "lines", "pattern"]
    with pytest.raises(ConfigError, match="valid names are"):
        SEGMENTERS.get("sentences")
