"""What a user reads (the pages' templates and scripts, the API docs, the config and verifier help) names
papers and settings, never this project's internal notes: no "issue 15", no "shared/seeds", no seed-file
line like "001:L43". tests/trainer/test_help_texts_cite_papers_by_name.py checks the trainer's schemas;
this checks what the web app serves on top of them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
INTERNAL = re.compile(
    r"\b\d{3}:L\d+\b|shared/seeds|shared/METHODS|METHODS\.md|\bissues? #?\d+", re.IGNORECASE
)
PAGE_FILES = sorted(p for root in ("templates", "static") for p in (REPO / root).rglob("*") if p.is_file())


def internal_references(text: str) -> list[str]:
    """Each hit with a little context, so a failure says where to look."""
    return [text[max(0, m.start() - 40) : m.end() + 20].replace("\n", " ") for m in INTERNAL.finditer(text)]


def test_the_pattern_catches_each_kind_of_internal_reference() -> None:
    text = "see issue 15, Issue #3, shared/seeds/001.md and (001:L43); not 'an issue' or 10:30"
    assert len(internal_references(text)) == 4


def test_there_are_page_files_to_scan() -> None:
    assert any(p.suffix == ".html" for p in PAGE_FILES) and any(p.suffix == ".js" for p in PAGE_FILES)


@pytest.mark.parametrize("path", PAGE_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_template_or_static_file_cites_an_issue_or_a_seed_line(path: Path) -> None:
    assert internal_references(path.read_text(encoding="utf-8", errors="replace")) == []


def test_the_api_docs_cite_no_issue_or_seed_line(db: None) -> None:
    """Every summary, description and help text of the OpenAPI schema, which /api/docs/ shows."""
    from drf_spectacular.generators import SchemaGenerator

    schema: Any = SchemaGenerator().get_schema(request=None, public=True)
    assert internal_references(json.dumps(schema)) == []


def test_the_config_schema_the_experiment_form_reads_cites_no_issue_or_seed_line() -> None:
    from webapp.experiments.api_experiments import config_schema

    assert internal_references(json.dumps(config_schema())) == []


def test_the_verifier_help_on_the_verifier_form_cites_no_issue_or_seed_line() -> None:
    from webapp.verification.selectors import registry_schema

    assert internal_references(json.dumps(registry_schema())) == []
