"""The few exception types the trainer raises on purpose.

Each message says what is wrong *and* how to fix it; callers (CLI, Celery task) catch `RLVRError` at one
boundary and show the message as it is.
"""

from __future__ import annotations


class RLVRError(Exception):
    """Base class: an error whose message is meant for the user."""


class ConfigError(RLVRError):
    """The experiment configuration is invalid (bad value, bad combination, unknown registry name)."""


class DataError(RLVRError):
    """A data file or task could not be loaded; the message names the file, row and field."""


class VerifierError(RLVRError):
    """A verifier was misconfigured (bad parameters). Crashes while *scoring* never raise: they give reward 0."""


class RewardSourceError(RLVRError):
    """Too many scores of a reward source were absent in a step under ``reward_absence.mode: fail``; the message
    names the source, the step, the absent fraction, the limit, the config field and the last reason."""


class CheckpointError(RLVRError):
    """A checkpoint is missing, incomplete or does not match the run it should resume."""


class TrainingDiverged(RLVRError):
    """The loss, the gradient norm, the weights or the sampling probabilities became NaN or infinite.

    The run stops instead of stepping on (an optimizer step on NaN gradients ruins every weight, and a
    checkpoint of them cannot be resumed); the message names the step, the figures and the usual fixes."""
