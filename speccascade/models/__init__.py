"""Getting a pair of models to run: where the shipped files are (`assets`), loading a pair
from a folder or a hub id with its tokenizer checks (`loading`), how the CPU runs linear
layers (`kernels`), a drafter with a draft vocabulary and a lookup mixture
(`drafter`), named pairs (`presets`), and a GGUF model converted once and cached
(`gguf_cache`).

Layer 1: imports speccascade.core only."""
