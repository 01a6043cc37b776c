"""Build the rlvr-studio-client wheel (clients/pyproject.toml) from this repository's rlvr_client/ package.

Usage: python clients/build_wheel.py OUT_DIR    -> OUT_DIR/rlvr_studio_client-<version>-py3-none-any.whl

The package lives at the repository root (the platform ships it too), so the build copies it and this
folder's pyproject.toml into a scratch folder and builds there: the wheel holds rlvr_client/ and nothing else.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def build(out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rlvr-client-build-") as scratch:
        root = Path(scratch)
        shutil.copy(HERE / "pyproject.toml", root / "pyproject.toml")
        shutil.copy(REPO / "rlvr_client" / "README.md", root / "README.md")
        shutil.copytree(
            REPO / "rlvr_client", root / "rlvr_client", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "--no-build-isolation",
                "-w",
                str(out_dir),
                str(root),
            ],
            check=True,
        )
    return max(out_dir.glob("rlvr_studio_client-*.whl"), key=lambda p: p.stat().st_mtime)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(build(Path(sys.argv[1])))
