#!/usr/bin/env bash
# Prepare one cluster node: Chromium at /usr/bin/chromium (where the browser actors launch it) and this project
# with the Python stack for the node's role. Used by deploy/ray-cluster.yaml and deploy/Dockerfile.
#
#   bash deploy/node_setup.sh gpu    # learner + vLLM engines: upstream vLLM (CUDA), FlashAttention-2
#   bash deploy/node_setup.sh cpu    # head and browser machines: CPU torch, no vLLM
#
# Idempotent: a second run only re-checks. Needs network access to PyPI and the distribution's package mirror.
set -euo pipefail
ROLE=${1:?usage: deploy/node_setup.sh gpu|cpu}
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo

install_chromium() {
  [ -x /usr/bin/chromium ] && return 0
  # Debian packages a working Chromium as `chromium`. Ubuntu (the base of Ray's images) only ships a snap
  # wrapper that cannot run in a container, so there we take Playwright's build with its system libraries
  # and link it to the path the browser actors expect.
  if grep -qi '^ID=debian' /etc/os-release; then
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium
  else
    $PY -m pip install -q "playwright>=1.49"
    $SUDO env "PATH=$PATH" "$(command -v "$PY")" -m playwright install-deps chromium
    $PY -m playwright install chromium
    exe=$($PY -c 'from playwright.sync_api import sync_playwright as s; p = s().start(); print(p.chromium.executable_path); p.stop()')
    $SUDO ln -sf "$exe" /usr/bin/chromium
  fi
}

install_python() {
  if [ "$ROLE" = gpu ]; then
    # vLLM first: it pins the CUDA build of torch that everything else then reuses.
    $PY -m pip install -q "vllm>=0.10"
    $PY -m pip install -q -e ".[trackers]"  # the driver's TensorBoard (and W&B, MLflow when asked)
    # flash-attn compiles against the installed torch, so it must see it (no build isolation).
    $PY -m pip install -q --no-build-isolation "flash-attn>=2.6"
  elif [ "$ROLE" = cpu ]; then
    # The CPU wheel of torch, so DeepSpeed's dependency does not pull a multi-GB CUDA build onto CPU machines.
    $PY -m pip install -q torch --index-url https://download.pytorch.org/whl/cpu
    $PY -m pip install -q -e ".[trackers]"  # the driver's TensorBoard (and W&B, MLflow when asked)
  else
    echo "unknown role '$ROLE' (use gpu or cpu)" >&2
    exit 2
  fi
}

install_chromium
install_python
/usr/bin/chromium --version
echo "[node_setup] $ROLE node ready"
