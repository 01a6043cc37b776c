"""One run across several hosts (``training.num_nodes`` > 1): torchrun's c10d rendezvous, not a scheduler of ours.

Each host runs one torchrun agent (``--nnodes N --rdzv-backend c10d --rdzv-endpoint host:port --rdzv-id
run-<id>``); PyTorch's elastic launcher does the membership, assigns global ranks and notices a node that
dies (the c10d backend keeps a heartbeat per node, as in the TorchElastic design). The first
node to start hosts the rendezvous store on its advertised address (``is_host``); the others connect to it.
Who is first, and the address, is decided by whoever starts the nodes: the Celery node tasks through the
database (workers/nodes.py), or the user's own launcher (``srun`` / torchrun on each node, docs/multi_node.md).

A node that does not arrive within ``training.node_join_timeout_s`` makes every waiting agent fail its
rendezvous (``join_timeout``), so no node holds its devices waiting forever; ``join_failure_message`` turns
that into a message naming who joined and who did not.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ADDRESS_ENV = "RLVR_NODE_ADDRESS"  # the address other nodes reach this host at (a worker setting)
PORT_ENV = "RLVR_NODE_PORT"  # the rendezvous port a host node listens on; 0 or unset: a free port
_RENDEZVOUS_TIMEOUT = re.compile(r"RendezvousTimeoutError|RendezvousClosedError|rendezvous.*timed out", re.I)
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.@-]+")


@dataclass(frozen=True)
class NodeSpec:
    """This host's part in a multi-node run: how its torchrun agent finds the others.

    ``membership`` says, when the rendezvous timed out, which nodes had joined and which had not (the Celery
    node tasks read it from the database); without it the message names only the endpoint."""

    num_nodes: int
    endpoint: str
    rdzv_id: str
    is_host: bool
    name: str
    local_addr: str
    join_timeout_s: int
    membership: Callable[[], str] | None = field(default=None, compare=False)

    def workdir_name(self) -> str:
        """This node's work directory under ``<output_dir>/distributed/`` (the output directory is shared)."""
        return "node-" + (_SAFE_NAME.sub("_", self.name)[:100] or "unnamed")

    def torchrun_args(self) -> list[str]:
        """The torchrun options that replace ``--standalone``."""
        conf = f"is_host={'true' if self.is_host else 'false'},join_timeout={self.join_timeout_s}"
        return [
            f"--nnodes={self.num_nodes}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={self.endpoint}",
            f"--rdzv-id={self.rdzv_id}",
            f"--rdzv-conf={conf}",
            f"--local-addr={self.local_addr}",
        ]


def advertised_address() -> str:
    """This host's address for other nodes: ``RLVR_NODE_ADDRESS``, else its fully qualified name."""
    return (os.environ.get("RLVR_NODE_ADDRESS") or "").strip() or socket.getfqdn()


def rendezvous_port(address: str) -> int:
    """``RLVR_NODE_PORT`` if set (a port opened in the firewall), else a port free on ``address`` now."""
    fixed = (os.environ.get("RLVR_NODE_PORT") or "").strip()
    if fixed and fixed != "0":
        if not fixed.isdigit() or not 0 < int(fixed) < 65536:
            raise ValueError(f"{PORT_ENV} must be a port number (1-65535), got {fixed!r}")
        return int(fixed)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


def endpoint_of(address: str, port: int) -> str:
    """``host:port``, bracketing an IPv6 address as torchrun expects."""
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def timed_out_joining(torchrun_log: Path) -> bool:
    """Whether this node's torchrun agent gave up at the rendezvous (the others never all arrived)."""
    if not torchrun_log.exists():
        return False
    return bool(_RENDEZVOUS_TIMEOUT.search(torchrun_log.read_text(encoding="utf-8", errors="replace")))


def join_failure_message(node: NodeSpec, output_dir: str) -> str:
    """The run's error when the nodes did not all meet within ``node_join_timeout_s``."""
    who = node.membership() if node.membership is not None else f"this node: {node.name}"
    return (
        f"the {node.num_nodes} nodes did not all join the rendezvous at {node.endpoint} within "
        f"training.node_join_timeout_s ({node.join_timeout_s}s); {who}. Start enough training workers (one per "
        "node, each with RLVR_NODE_ADDRESS set to an address the others reach) or lower training.num_nodes, "
        f"then resume the run (it goes on from its last checkpoint in {output_dir})"
    )
