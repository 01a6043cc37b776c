"""The command line sent with an outside run (its page shows it to every member), with secrets taken out.

A trainer is often started with a secret among its arguments (``--hub_token hf_...``, ``--wandb-api-key``,
Hydra's ``actor.api_key=...``, ``HF_TOKEN=... python train.py`` under ``env``). Values are replaced by
``***`` when:

- the option or assignment names a secret: a part of its name (split at ``-``, ``_`` and ``.``) ends with
  token, key, secret, password, passwd, pwd, credential(s) or auth (``--hub_token``, ``--api-key``,
  ``AWS_SECRET_ACCESS_KEY=``), in the ``--name=value``, ``--name value`` and ``NAME=value`` forms; counts such
  as ``--max_tokens`` and names such as ``--tokenizer`` are left alone;
- the value itself looks like a credential, whatever names it: a Hugging Face, OpenAI, GitHub, Slack or AWS
  access key, or a URL with a password (``https://user:***@host``).

``RLVR_SEND_COMMAND=0`` (or ``start_run(send_command=False)``) sends no command at all. The server redacts
again when it stores and shows the command (webapp/ingest/services.py, webapp/experiments/selectors.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

MASK = "***"
MAX_CHARS = 1000
_SECRET_PART = re.compile(r"(token|key|secret|password|passwd|pwd|credentials?|auth)$", re.IGNORECASE)
_OPTION = re.compile(r"^(--?)([A-Za-z][\w.\-]*)(=(.*))?$", re.DOTALL)
_ASSIGNMENT = re.compile(r"^([A-Za-z_+~][\w.\-]*)=(.*)$", re.DOTALL)  # NAME=value, Hydra's +a.b=value
_CREDENTIAL = re.compile(
    r"(hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_\-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|"
    r"xox[abposr]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16})"
)
_URL_PASSWORD = re.compile(r"(://[^/\s:@]+:)[^/\s@]+@")


def names_a_secret(name: str) -> bool:
    """``hub_token``, ``api-key``, ``AWS_SECRET_ACCESS_KEY``, ``actor.api_key``: yes; ``max_tokens``: no."""
    return any(_SECRET_PART.search(part) for part in re.split(r"[-_.]", name.lstrip("+~")) if part)


def _scrub(value: str) -> str:
    return _URL_PASSWORD.sub(rf"\g<1>{MASK}@", _CREDENTIAL.sub(MASK, value))


def redact_args(args: Sequence[str]) -> list[str]:
    """``args`` with every secret value replaced by ``***`` (the names stay, so the command still reads)."""
    out: list[str] = []
    mask_next = False
    for arg in args:
        if not arg:  # two spaces in a joined command line
            out.append(arg)
            continue
        if mask_next and not arg.startswith("--"):
            out.append(MASK)
            mask_next = False
            continue
        mask_next = False
        option = _OPTION.match(arg)
        assignment = None if option else _ASSIGNMENT.match(arg)
        if option and names_a_secret(option.group(2)):
            if option.group(3) is None:
                out.append(arg)
                mask_next = True  # --hub_token VALUE
            else:
                out.append(f"{option.group(1)}{option.group(2)}={MASK}")
        elif assignment and names_a_secret(assignment.group(1)):
            out.append(f"{assignment.group(1)}={MASK}")
        else:
            out.append(_scrub(arg))
    return out


def redact_command(command: str) -> str:
    """A command line already joined into one string (as the server receives it), redacted word by word the
    same way; the spacing is kept."""
    return " ".join(redact_args(command.split(" ")))[:MAX_CHARS]


def command_to_send(argv: Sequence[str], send: bool | None = None) -> str | None:
    """The redacted command line for a run's ``source_info``, or None when sending it is turned off
    (``send=False``, or ``RLVR_SEND_COMMAND`` set to 0/false/no/off)."""
    if send is None:
        send = os.environ.get("RLVR_SEND_COMMAND", "1").strip().lower() not in ("0", "false", "no", "off")
    if not send:
        return None
    return " ".join(redact_args(argv))[:MAX_CHARS]
