"""Log runs trained elsewhere (TRL, verl, any script) to RLVR Studio: ``start_run`` and ``IngestRun``.

Imports neither Django nor torch (only httpx): it runs wherever the training script runs. The
integrations (``webapp.ingest_client.trl``, ``.verl``) import their library when they are imported.
"""

from webapp.ingest_client.run import IngestRun, start_run, sync_spool
from webapp.ingest_client.wire import IngestError

__all__ = ["IngestError", "IngestRun", "start_run", "sync_spool"]
