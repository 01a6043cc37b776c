"""Data-parallel and sharded (FSDP) training on one host: collectives, sharding, the torchrun launcher."""
