#!/usr/bin/env bash
# fetch_gpu_deps.sh DIR: downloads the .deb files of tools/gpu_deps.txt into DIR (run on a Debian
# 12 machine with apt, e.g. this project's dev machine), for `tools/gpu_check.sh --deps DIR` on a
# GPU machine that has no network and none of those packages. Only downloads: installs nothing.
#
#   bash tools/fetch_gpu_deps.sh /tmp/gpu-deps      # ~22 MB, 22 files
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:?usage: fetch_gpu_deps.sh DIR}"
mkdir -p "$dir"
mapfile -t pkgs < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$here/gpu_deps.txt" | grep -v '^$')
command -v apt-get >/dev/null || { echo "fetch_gpu_deps: apt-get not found: run this on Debian 12" >&2; exit 1; }
cd "$dir"
rm -f ./*.deb
if ! apt-get download "${pkgs[@]}" >/dev/null 2>apt.err; then
  # The package lists may be missing or stale on a fresh machine.
  echo "fetch_gpu_deps: apt-get download failed ($(tail -n1 apt.err)); running apt-get update once"
  apt-get update >/dev/null
  apt-get download "${pkgs[@]}" >/dev/null
fi
rm -f apt.err
n=$(ls ./*.deb | wc -l)
[[ $n -eq ${#pkgs[@]} ]] || { echo "fetch_gpu_deps: expected ${#pkgs[@]} .deb files, got $n" >&2; exit 1; }
echo "fetch_gpu_deps: $n packages, $(du -sh . | cut -f1) in $dir"
