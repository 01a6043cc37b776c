"""The ingest API: runs trained elsewhere (TRL, verl, scripts, imported files) send their metrics,
rollouts, checkpoints and outcome here, and become ordinary Run / Rollout records."""
