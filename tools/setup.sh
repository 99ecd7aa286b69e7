#!/usr/bin/env bash
# Installs the Debian packages gradlab needs to build and test. Idempotent: when everything is
# already installed it only checks (no apt-get, well under a second).
set -euo pipefail

packages=(
  build-essential cmake g++ pkg-config
  libxtensor-dev libxtensor-blas-dev xtl-dev libxsimd-dev
  libopenblas-dev liblapack-dev
  librapidcheck-dev libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev python3 python3-numpy
  zlib1g-dev clang-14 libclang-rt-14-dev
  libopenmpi-dev openmpi-bin
)

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

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present; nothing to do"
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
