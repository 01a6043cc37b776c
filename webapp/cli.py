"""The one ``rlvr`` entry point: sends each subcommand to the layer it drives, imported only when used.

- trainer commands (``train``, ``demo``, ``init-model``, ``config-schema``) -> ``trainer.cli``
  (torch, no Django);
- stack commands (``stack``/``serve``, ``createuser``) -> ``webapp.stack`` (Django, no torch in this
  process: training happens in the worker it starts);
- API client commands (``login``, ``logout``, ``runs``, ``launch``, ``tail``, ``sync``, ``import``) ->
  ``rlvr_client.cli`` (the top-level client package, HTTP only: neither Django nor torch).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from rlvr_client.cli import COMMAND_HELP

TRAINER_COMMANDS = frozenset(
    {"train", "eval", "export", "demo", "init-model", "train-rm", "train-prm", "config-schema", "methods"}
)
STACK_COMMANDS = frozenset({"stack", "serve", "createuser"})

USAGE = (
    """usage: rlvr <command> [options]     (rlvr <command> --help for its options)

training (this machine, no server):
  train CONFIG        train from a YAML/JSON experiment file
  demo                build the tiny model and train it with GRPO on 2-digit addition
  init-model          build and warm-start the built-in tiny model (cached)
  eval                evaluate a model or checkpoint on a benchmark (Avg@n, Pass@k, maj@k)
  train-rm            train a Bradley-Terry reward model from pairs (--recipe chain: the tiny chain RM)
  train-prm           train a process reward model from step labels (--recipe chain: the tiny chain PRM)
  export CKPT OUT     write a plain Hugging Face model from a checkpoint (merges LoRA adapters)
  config-schema       print the experiment config's JSON schema
  methods             list every training method by the config field that chooses it

the platform (this machine):
  stack [--demo]      start the web server, a worker and (unless REDIS_URL is set) Redis; Ctrl-C stops all
  serve               same as stack
  createuser NAME     create a user (and optionally add them to a project)

API client (a running server):
"""
    + COMMAND_HELP
)


def _layer(command: str) -> Callable[[Sequence[str]], int] | None:
    if command in TRAINER_COMMANDS:
        from trainer.cli import main as trainer_main

        return trainer_main
    if command in STACK_COMMANDS:
        from webapp.stack import main as stack_main

        return stack_main
    from rlvr_client.cli import command_main

    return command_main(command)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0
    run = _layer(args[0])
    if run is None:
        print(f"rlvr: unknown command {args[0]!r}\n\n{USAGE}", end="", file=sys.stderr)
        return 2
    return int(run(args))


if __name__ == "__main__":
    sys.exit(main())
