"""The ``rlvr`` commands that talk HTTP to a running server, routed without Django or torch.

``webapp/cli.py`` (the ``rlvr`` entry point) sends these commands here; ``python -m rlvr_client COMMAND``
runs them on a machine that has only this package and its few dependencies.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence

# command -> the module whose ``main(argv)`` runs it (argv starts with the command's own name)
COMMANDS = {
    "login": "rlvr_client.client",
    "logout": "rlvr_client.client",
    "runs": "rlvr_client.client",
    "launch": "rlvr_client.client",
    "tail": "rlvr_client.client",
    "sync": "rlvr_client.sync_cli",
    "import": "rlvr_client.import_cli",
}

# One line a command; ``rlvr --help`` (webapp/cli.py) lists the same lines under "API client".
COMMAND_HELP = """\
  login               get an API token and store it in ~/.config/rlvr-studio/credentials.json
  logout              revoke the stored token and forget it
  runs                list runs
  launch FILE         create an experiment from a YAML/JSON file and launch a run of it
  tail RUN_ID         print a run's metrics as they arrive
  sync                send the runs an ingest client left in its spool (server was unreachable)
  import PATH         send a finished run: an ingest .jsonl file, `rlvr train`'s run dir, verl's rollout dump
"""
USAGE = (
    "usage: python -m rlvr_client <command> [options]     (<command> --help for its options)\n\n"
    + COMMAND_HELP
)


def command_main(command: str) -> Callable[[Sequence[str]], int] | None:
    """The ``main`` that runs ``command``, imported only now; None when it is not a client command."""
    if command not in COMMANDS:
        return None
    found: Callable[[Sequence[str]], int] = importlib.import_module(COMMANDS[command]).main
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0
    run = command_main(args[0])
    if run is None:
        print(f"rlvr: unknown command {args[0]!r}\n\n{USAGE}", end="", file=sys.stderr)
        return 2
    return int(run(args))
