"""Models and devices: the tiny built-in models, LoRA, checkpoints, logprobs, CUDA, memory sizing."""
