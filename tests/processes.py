"""Finding live processes of a test's own making by their command line (Linux /proc)."""

from __future__ import annotations

import os
from pathlib import Path


def live_processes(*markers: str) -> list[int]:
    """Live (not zombie) processes whose command line contains every one of ``markers``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if state != "Z" and all(m in cmdline for m in markers):
            found.append(int(pid))
    return found
