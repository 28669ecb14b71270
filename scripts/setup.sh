#!/usr/bin/env bash
# Sets up a fresh Debian machine for kforge and builds it.
#   scripts/setup.sh            install what is missing, then configure and build into build/
#   scripts/setup.sh --deps     install only
#   scripts/setup.sh --test-deps  install only, with what the tests alone need (a headless
#                                 Chromium that renders kforge report's pages; scripts/test.sh)
# Idempotent: packages already present are not fetched again.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libfmt-dev
  libsqlite3-dev sqlite3 libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcurl4-openssl-dev libcpp-httplib-dev
  libseccomp-dev libpython3-dev
  libjs-chart.js libjs-d3 libjs-highlight.js
)
[ "${1:-}" = "--test-deps" ] && APT_PACKAGES+=(chromium-headless-shell python3-venv)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# CUTLASS/CuTe headers for CUDA candidates, from the nvidia-cutlass wheel (PyPI), unpacked
# into third_party/cutlass/include (ignored by git); nvcc builds get -I to it.
CUTLASS_VERSION=4.2.0.0
if [ ! -f third_party/cutlass/VERSION ] || [ "$(cat third_party/cutlass/VERSION)" != "$CUTLASS_VERSION" ]; then
  echo "setup: fetching CUTLASS $CUTLASS_VERSION headers"
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps "nvidia-cutlass==$CUTLASS_VERSION" -d "$tmp"
  rm -rf third_party/cutlass && mkdir -p third_party/cutlass
  python3 - "$tmp"/nvidia_cutlass-*.whl third_party/cutlass <<'PY'
import sys, zipfile, os
whl, dest = sys.argv[1], sys.argv[2]
prefix = "cutlass_library/source/include/"
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        if n.startswith(prefix) and not n.endswith("/"):
            out = os.path.join(dest, "include", n[len(prefix):])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "wb") as f:
                f.write(z.read(n))
PY
  echo "$CUTLASS_VERSION" > third_party/cutlass/VERSION
  rm -rf "$tmp"
fi

# cuobjdump and nvdisasm (static SASS evidence for kforge profile) from NVIDIA's wheels on
# PyPI, unpacked into third_party/cudatools/bin (the toolkit here has neither).
CUDATOOLS_VERSION=13.5.37
if [ ! -x third_party/cudatools/bin/cuobjdump ] || [ "$(cat third_party/cudatools/VERSION 2>/dev/null)" != "$CUDATOOLS_VERSION" ]; then
  echo "setup: fetching cuobjdump and nvdisasm $CUDATOOLS_VERSION"
  tmp=$(mktemp -d)
  if python3 -m pip download -q --no-deps "nvidia-cuda-cuobjdump==$CUDATOOLS_VERSION" "nvidia-cuda-nvdisasm==$CUDATOOLS_VERSION" -d "$tmp"; then
    rm -rf third_party/cudatools && mkdir -p third_party/cudatools/bin
    python3 - "$tmp" third_party/cudatools/bin <<'PY'
import sys, zipfile, glob, os
src, dest = sys.argv[1], sys.argv[2]
for whl in glob.glob(os.path.join(src, "*.whl")):
    with zipfile.ZipFile(whl) as z:
        for n in z.namelist():
            if n.endswith("/bin/cuobjdump") or n.endswith("/bin/nvdisasm"):
                out = os.path.join(dest, os.path.basename(n))
                with open(out, "wb") as f:
                    f.write(z.read(n))
                os.chmod(out, 0o755)
PY
    echo "$CUDATOOLS_VERSION" > third_party/cudatools/VERSION
  else
    echo "setup: cuobjdump/nvdisasm wheels unavailable; kforge profile will skip the SASS mix"
  fi
  rm -rf "$tmp"
fi

# PyTorch for the bridge (kforge import kernelbench, [torch] problems, export --torch): a
# virtual environment in .venv (ignored by git) with torch from PyPI, ninja for
# torch.utils.cpp_extension, and what KernelBench's problem files import besides torch
# (numpy: level 3's SwinTransformerV2; einops: its two Mamba2 files). About 5 GB with torch's
# CUDA libraries; CPU-only machines run it on the CPU. KFORGE_NO_TORCH=1 skips it: the bridge
# then says torch is missing, and its tests skip saying so. (Level 4's transformers is left
# out: those files fetch their models from the Hugging Face hub, which needs the network.)
if [ -z "${KFORGE_NO_TORCH:-}" ] && ! .venv/bin/python3 -c "import torch, numpy, einops" >/dev/null 2>&1; then
  echo "setup: installing torch, numpy and einops into .venv (PyPI)"
  if ! { { [ -x .venv/bin/python3 ] || python3 -m venv .venv; } && .venv/bin/python3 -m pip install -q --upgrade pip &&
         .venv/bin/python3 -m pip install -q torch ninja numpy einops; }; then
    echo "setup: torch could not be installed; the PyTorch bridge's tests will skip (set KFORGE_PYTHON to use another)"
  fi
fi

# The official MCP Python SDK, with which the tests drive kforge mcp as agents' tools do
# (tests/agent/mcp_sdk_client.py), in .venv-test (ignored by git).
if [ "${1:-}" = "--test-deps" ] && ! .venv-test/bin/python3 -c "import mcp" >/dev/null 2>&1; then
  echo "setup: installing the MCP Python SDK into .venv-test (PyPI)"
  { python3 -m venv .venv-test && .venv-test/bin/python3 -m pip install -q mcp; } ||
    echo "setup: could not install the MCP Python SDK; its test will be skipped" >&2
fi

case "${1:-}" in --deps|--test-deps) exit 0;; esac

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
# The main job needs kforge and the helpers it starts (kforge-worker, kforge-confine,
# kforge-nvrtc: kforge depends on each); the tests are built by scripts/test.sh.
cmake --build build -j"$(nproc)" --target kforge
echo "setup: built build/kforge and its helpers (scripts/test.sh builds the tests)"
