"""``rlvr sync``: send the batches an ingest client left in its spool (the training process crashed or
ended while the server was unreachable). HTTP only: imports neither Django nor torch."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from rlvr_client.run import sync_spool
from rlvr_client.spool import default_spool_dir
from rlvr_client.wire import IngestError


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="rlvr sync", description=__doc__)
    parser.add_argument(
        "--spool-dir", default=None, help=f"the spool (default $RLVR_SPOOL_DIR or {default_spool_dir()})"
    )
    parser.add_argument("--url", default=None, help="the server (default $RLVR_URL, else `rlvr login`'s)")
    args = parser.parse_args(list(argv)[1:])
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        left = sync_spool(spool_dir=args.spool_dir, url=args.url)
    except IngestError as err:
        print(f"rlvr sync: {err}", file=sys.stderr)
        return 2
    if not left:
        print("nothing to send: the spool is empty")
        return 0
    for key, waiting in left.items():
        print(
            f"{key}: {'sent' if waiting == 0 else f'{waiting} batch(es) still waiting (server unreachable)'}"
        )
    return 0 if all(v == 0 for v in left.values()) else 1
