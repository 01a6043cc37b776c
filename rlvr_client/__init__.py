"""RLVR Studio's client, free of Django and torch: log runs trained elsewhere (TRL, verl, any script) with
``start_run`` and ``IngestRun``; the ``rlvr`` API commands live in ``rlvr_client.client`` and ``rlvr_client.cli``.

Imports neither Django nor torch (only httpx): it runs wherever the training script runs. The
integrations (``rlvr_client.trl``, ``.verl``) import their library when they are imported.
"""

from rlvr_client.run import IngestRun, start_run, sync_spool
from rlvr_client.wire import IngestError

__all__ = ["IngestError", "IngestRun", "start_run", "sync_spool"]
