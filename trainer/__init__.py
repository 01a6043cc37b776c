"""RLVR Studio's training library: GRPO-family RL with verifiable rewards on causal LMs.

Plain Python + PyTorch + transformers. Nothing here imports Django, Celery, Channels, webapp or workers
(tests/trainer/test_import_boundary.py enforces it).
"""

__version__ = "0.1.0"
