#!/usr/bin/env bash
# Installs gradlab's Jupyter kernel (xgradlab: xeus + clang 19's incremental Interpreter) as the
# kernelspec "xcpp17", the name xeus-cling's C++17 kernel has, so notebooks/*.ipynb open unchanged
# in either. Build the kernel first: cmake --build build/release --target xgradlab
#
#   tools/install_kernel.sh                 # for this user (~/.local/share/jupyter/kernels/xcpp17)
#   tools/install_kernel.sh --prefix DIR    # into DIR/share/jupyter/kernels/xcpp17 (a venv, /usr/local)
#   tools/install_kernel.sh --kernel PATH   # another xgradlab executable
#
# NOTE: an installed xeus-cling kernelspec of the same name is replaced (for this user or prefix).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kernel="$root/build/release/kernel/xgradlab"
dest="${JUPYTER_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/jupyter}/kernels/xcpp17"
while [ $# -gt 0 ]; do
  case "$1" in
    --kernel) kernel="$2"; shift 2 ;;
    --prefix) dest="$2/share/jupyter/kernels/xcpp17"; shift 2 ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "install_kernel: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ ! -x "$kernel" ]; then
  echo "install_kernel: no kernel at $kernel; build it: cmake --build build/release --target xgradlab" >&2
  exit 1
fi
kernel="$(cd "$(dirname "$kernel")" && pwd)/$(basename "$kernel")"
mkdir -p "$dest"
# Written to a temporary file and renamed: an interrupted install keeps the previous spec.
tmp="$(mktemp "$dest/kernel.json.XXXXXX")"
cat > "$tmp" <<JSON
{
  "argv": ["$kernel", "-f", "{connection_file}"],
  "display_name": "C++17 (gradlab's clang-based kernel)",
  "language": "C++17",
  "interrupt_mode": "signal",
  "env": {"GRADLAB_DATA_DIR": "$root/data"},
  "metadata": {"implementation": "xgradlab (xeus 2.4 + clang 19 Interpreter)"}
}
JSON
chmod 644 "$tmp"
mv "$tmp" "$dest/kernel.json"
echo "install_kernel: kernelspec xcpp17 -> $dest/kernel.json (runs $kernel)"
