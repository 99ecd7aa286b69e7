#!/usr/bin/env bash
# Installs the Debian packages gradlab needs to build and test, then the project-local Python
# virtual environment .venv/ (git-ignored) with the PyPI-only test tools (tensorboard: its
# reader checks gradlab's event files; its server shows a run; onnxruntime + numpy: they run the
# models onnx::export_model writes). Idempotent: when everything is
# already there it only checks (no apt-get, no pip, well under a second). A pip failure (no
# network) does not fail setup: the tests that need the venv then skip with a message.
# GRADLAB_WITH_LIBTORCH=1 also installs libtorch-dev (opt-in; see the README's LibTorch section).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

packages=(
  build-essential cmake g++ pkg-config
  libxtensor-dev libxtensor-blas-dev xtl-dev libxsimd-dev
  libopenblas-dev liblapack-dev
  librapidcheck-dev libgtest-dev libgmock-dev libbenchmark-dev
  # bench_vecmath's SLEEF rows (vector libm, PyTorch's choice; gradlab itself uses xsimd)
  libsleef-dev
  nlohmann-json3-dev python3 python3-numpy
  zlib1g-dev clang-14 libclang-rt-14-dev
  python3-venv python3-matplotlib
  libopenmpi-dev openmpi-bin
  # the two-host tests (ctest -L netns): network namespaces and a veth pair
  iproute2
  # notebooks: the kernel xgradlab (xeus + clang 19's Interpreter, whose headers include LLVM's:
  # llvm-19-dev), clang++-19 for the C++17 header test, nbclient / jupyter_client to run them
  xeus-dev libclang-19-dev libclang-cpp19-dev llvm-19-dev clang-19
  python3-nbclient python3-jupyter-client python3-nbformat
  # rich display (gradlab::display): cairo draws the PNGs (tensor pictures, training curves),
  # Graphviz's dot renders autograd graphs to SVG
  libcairo2-dev graphviz
  # ONNX export: the ONNX protobuf schema + checker (onnxruntime comes from PyPI into .venv)
  libonnx-dev libprotobuf-dev protobuf-compiler
  # the doctor's HTML report opened in a real headless browser (diagnose_html_in_a_browser):
  # Chromium, its WebDriver and Debian's Selenium for /usr/bin/python3
  chromium chromium-driver python3-selenium
  # oneDNN (optional: float32 convolutions; without it they take the im2col + GEMM path)
  libdnnl-dev
)
# Opt-in LibTorch peer (Debian's libtorch-dev, ~510 MB): GRADLAB_WITH_LIBTORCH=1 bash tools/setup.sh
# builds gradlab_torch (gradcheck for LibTorch code) and the LibTorch halves of checks/compat;
# libgloo-dev holds the Gloo headers LibTorch's c10d ProcessGroupGloo needs (the ddp port program).
if [ "${GRADLAB_WITH_LIBTORCH:-0}" = "1" ]; then
  packages+=(libtorch-dev libgloo-dev)
fi

if ! command -v dpkg >/dev/null 2>&1; then
  echo "setup: dpkg not found (not Debian/Ubuntu?); install these yourself: ${packages[*]}" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  # `dpkg -s` also succeeds for removed-but-not-purged packages: require "install ok installed".
  if ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed$'; then
    missing+=("$p")
  fi
done

# The venv: Debian's python3 (python3-venv is its venv module; another python3 may come first on
# PATH). PyPI packages: tensorboard, onnxruntime, numpy, pillow (tensorboard_reader decodes
# add_image's PNGs with it; its module is PIL); each installed only when missing.
venv_packages=(tensorboard onnxruntime numpy pillow)
setup_venv() {
  local venv="$root/.venv" py=/usr/bin/python3 want=() p
  if [ -x "$venv/bin/python" ]; then
    for p in "${venv_packages[@]}"; do
      local mod="$p"
      [ "$p" = pillow ] && mod=PIL
      compgen -G "$venv/lib/python3*/site-packages/$mod/__init__.py" >/dev/null || want+=("$p")
    done
    if [ "${#want[@]}" -eq 0 ]; then
      echo "setup: .venv has ${venv_packages[*]}; nothing to do"
      return 0
    fi
  else
    want=("${venv_packages[@]}")
    [ -x "$py" ] || py="$(command -v python3 || true)"
    if [ -z "$py" ] || ! "$py" -m venv "$venv"; then
      echo "setup: WARNING: could not create $venv; tests that need ${want[*]} will be skipped" >&2
      return 0
    fi
  fi
  echo "setup: pip install ${want[*]} into $venv"
  if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${want[@]}"; then
    echo "setup: WARNING: pip could not install ${want[*]} (offline?); tests that need them" \
         "will be skipped" >&2
  fi
  return 0
}

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present; nothing to do"
  setup_venv
  exit 0
fi

echo "setup: missing ${#missing[@]} package(s): ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "setup: not root and no sudo; run as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

echo "setup: apt-get update"
"${sudo_cmd[@]}" apt-get update
echo "setup: apt-get install ${missing[*]}"
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing[@]}"
echo "setup: installed ${missing[*]}"
setup_venv
