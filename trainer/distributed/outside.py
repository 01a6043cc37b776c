"""``rlvr train`` started by an outside launcher: torchrun on each node, or ``srun`` running torchrun under Slurm.

Without Celery nobody in RLVR Studio starts the other hosts, so ``rlvr train`` does not launch anything itself:
the user's launcher starts every rank (``torchrun --nnodes N --nproc-per-node P --rdzv-backend c10d
--rdzv-endpoint head:29500 --rdzv-id <job> --no-python rlvr train run.yaml``), and each rank finds its place in
torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``,
``MASTER_PORT``), joins the process group with it and trains, exactly as a rank our own launcher started
(trainer/distributed/rank_main.py). The rendezvous, membership and failure detection are torchrun's (PyTorch
elastic); none of it is ours. Global rank 0 records the run: its sinks (the console, the run folder's JSONL
files, and with ``--report-to`` the ingest client, so the run appears in the dashboard); the other ranks train
silently. The launcher's layout must be the config's: ``WORLD_SIZE`` = ``training.num_nodes x
training.num_processes`` and ``LOCAL_WORLD_SIZE`` = ``training.num_processes``, or the run is refused before it
touches anything, with the torchrun options that fit.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainer.distributed.context import RANK_ENV, in_rank, init_process_group
from trainer.errors import ConfigError
from trainer.sinks import EventSink, NullSink, TrainResult

if TYPE_CHECKING:
    from trainer.config import ExperimentConfig

_REQUIRED = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@dataclass(frozen=True)
class OutsideRank:
    """This process's place in a run an outside launcher started (torchrun's worker environment)."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int  # torchrun's GROUP_RANK: which node, in the rendezvous' order

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def outside_rank() -> OutsideRank | None:
    """This process's torchrun worker environment, or None: not started by a launcher, or started by ours
    (trainer/distributed/launch.py sets ``RLVR_DIST_RANK``, and its ranks never go through ``rlvr train``)."""
    env = os.environ
    if in_rank() or not all(env.get(name) for name in _REQUIRED):
        return None
    try:
        world = int(env["WORLD_SIZE"])
        return OutsideRank(
            rank=int(env["RANK"]),
            world_size=world,
            local_rank=int(env["LOCAL_RANK"]),
            local_world_size=int(env.get("LOCAL_WORLD_SIZE") or world),
            node_rank=int(env.get("GROUP_RANK") or 0),
        )
    except ValueError as err:
        raise ConfigError(
            f"the launcher's environment is not torchrun's (RANK, WORLD_SIZE, LOCAL_RANK must be integers): {err}"
        ) from None


def check_layout(config: ExperimentConfig, place: OutsideRank) -> None:
    """The launcher started as many processes as the config trains on, as many per node as it says."""
    t = config.training
    want = f"torchrun --nnodes {t.num_nodes} --nproc-per-node {t.num_processes}"
    if place.world_size != t.num_nodes * t.num_processes:
        raise ConfigError(
            f"the launcher started {place.world_size} process(es) (WORLD_SIZE) but the config trains on "
            f"training.num_nodes x training.num_processes = {t.num_nodes} x {t.num_processes}: start it with "
            f"{want} (srun: one torchrun per node), or change the config to match"
        )
    if place.local_world_size != t.num_processes:
        raise ConfigError(
            f"the launcher started {place.local_world_size} process(es) on this node (LOCAL_WORLD_SIZE) but "
            f"training.num_processes is {t.num_processes}: start it with {want}"
        )


def train_outside(
    config: ExperimentConfig,
    place: OutsideRank,
    main_sink: Callable[[], EventSink],
    *,
    resume_from: str | Path | None,
    overwrite_output_dir: bool,
    log: Callable[[str], None],
) -> TrainResult:
    """Train as rank ``place`` of a run an outside launcher started. ``main_sink`` is built on global rank 0
    only (the run's record: console, files, ingest); the other ranks train with no sink. Every rank returns
    the run's result (the step loop ends every rank at the same step)."""
    from trainer.models.device import resolve_device
    from trainer.step.loop import _claim_output_dir, train

    check_layout(config, place)
    if place.is_main and resume_from is None:
        # before the group forms: the others wait for rank 0 at init, so nobody writes to a folder being cleared
        _claim_output_dir(config.checkpoint.output_dir, overwrite_output_dir)
    os.environ[RANK_ENV] = str(place.rank)  # train() trains here instead of launching (context.in_rank)
    import torch
    import torch.distributed as dist

    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
    init_process_group(resolve_device(config.model.device).type, config.training.collective_timeout_s)
    try:
        if place.is_main:
            sink = main_sink()
            return train(config, sink, lambda: False, resume_from=resume_from, log=log)
        return train(config, NullSink(), lambda: False, resume_from=resume_from, log=lambda message: None)
    finally:
        dist.destroy_process_group()
        os.environ.pop(RANK_ENV, None)
