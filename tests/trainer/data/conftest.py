from pathlib import Path

import pytest

DATA_DIR = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture
def data_dir() -> Path:
    """tests/data: small hand-written data files, good and malformed."""
    return DATA_DIR
