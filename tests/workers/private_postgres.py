"""A private PostgreSQL server for tests that stop and restart it: ``initdb`` into a temporary folder, its own
port and socket folder, never the shared server. As root, the server runs as the unprivileged ``postgres``
user (initdb refuses root), who owns the folder.

``use_as_default_database`` points this process's Django ``default`` connection at it for a while (and back),
so services, selectors and the test helpers work on it unchanged, whatever back-end the session uses.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from webapp.stack import free_port, port_open

SERVER_USER = "postgres"


def initdb_binary() -> Path | None:
    """Debian's versioned ``initdb`` (the newest), else one on PATH; None when PostgreSQL's server is not installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1])
    on_path = shutil.which("initdb")
    return Path(on_path) if on_path else None


class PrivatePostgres:
    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="rlvr-pg-"))  # short: the socket path must fit 107 bytes
        self.data = self.root / "data"
        self.port = free_port()
        self.log = self.root / "server.log"

    def _as_server_user(self, *argv: str) -> list[str]:
        return ["runuser", "-u", SERVER_USER, "--", *argv] if os.geteuid() == 0 else list(argv)

    def _run(self, *argv: str, timeout: float = 60) -> None:
        result = subprocess.run(self._as_server_user(*argv), capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv)} failed:\n{result.stdout}\n{result.stderr}\n{self.server_log()}"
            )

    def server_log(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def init(self) -> PrivatePostgres:
        if os.geteuid() == 0:
            user = pwd.getpwnam(SERVER_USER)
            os.chown(self.root, user.pw_uid, user.pw_gid)
        self._run(str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--no-sync", "--no-instructions")  # fmt: skip
        return self

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "start",
        )
        deadline = time.monotonic() + 30
        while not port_open("127.0.0.1", self.port):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the private PostgreSQL did not open its port:\n{self.server_log()}")
            time.sleep(0.1)

    def stop(self) -> None:
        """A fast shutdown: open sessions are terminated ("terminating connection due to administrator command")."""
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def destroy(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str, template: str = "") -> None:
        copy = ("-T", template) if template else ()
        self._run(
            str(self.bin_dir / "createdb"),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            "postgres",
            *copy,
            name,
        )


@contextlib.contextmanager
def use_as_default_database(url: str) -> Iterator[None]:
    """This process's ``default`` connection on ``url`` (a new connection object, with the settings Django
    derives for it), then the old one back."""
    from django.db import ConnectionHandler, connections

    from webapp.env import database_from_url

    base_dir = Path(__file__).resolve().parents[2]
    new_settings = ConnectionHandler({"default": database_from_url(url, base_dir=base_dir)}).settings[
        "default"
    ]
    old_settings, old_connection = connections.settings["default"], connections["default"]
    connections.settings["default"] = new_settings
    connections["default"] = connections.create_connection("default")
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            connections["default"].close()
        connections.settings["default"] = old_settings
        connections["default"] = old_connection
