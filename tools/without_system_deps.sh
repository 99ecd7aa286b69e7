#!/usr/bin/env bash
# without_system_deps.sh CMD...: runs CMD with this machine's own copies of the packages in
# tools/gpu_deps.txt made unusable, to show that `tools/gpu_check.sh --deps DIR` builds from the
# unpacked .debs alone, as it must on a bare GPU machine. Needs root (Linux mount namespaces).
#
# Inside a private mount namespace, every regular file those packages installed (headers, CMake
# configs, libraries; not their docs) gets /dev/null bind-mounted over it: a build that still
# reached a system copy would read an empty header, an empty CMake config or an empty .so and
# fail loudly. Nothing outside the namespace changes, and it all goes away when CMD ends.
#
#   bash tools/fetch_gpu_deps.sh /tmp/gpu-deps
#   bash tools/without_system_deps.sh bash tools/gpu_check.sh --dry-run --deps /tmp/gpu-deps
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[[ $# -gt 0 ]] || { echo "usage: without_system_deps.sh CMD..." >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "without_system_deps: needs root (mount namespaces)" >&2; exit 2; }
command -v unshare >/dev/null || { echo "without_system_deps: unshare (util-linux) not found" >&2; exit 2; }

list=$(mktemp)
trap 'rm -f "$list"' EXIT
for p in $(sed -e 's/#.*//' "$here/gpu_deps.txt"); do
  dpkg -L "$p" 2>/dev/null || true
done | grep -vE '^/usr/share/(doc|lintian|man)/' | sort -u | while IFS= read -r f; do
  if [[ -f "$f" && ! -L "$f" ]]; then printf "%s\n" "$f"; fi
done >"$list"
echo "without_system_deps: hiding $(wc -l <"$list") files of $(sed -e 's/#.*//' "$here/gpu_deps.txt" | grep -c .) packages"

# The namespace's shell reads the list, hides each file, checks one, then runs CMD.
exec unshare -m --propagation private bash -c '
  set -euo pipefail
  while IFS= read -r f; do mount --bind /dev/null "$f"; done <"$1"
  probe=$(grep -m1 "/xtensor/xarray.hpp$" "$1" || true)
  [[ -z "$probe" || ! -s "$probe" ]] || { echo "without_system_deps: hiding failed ($probe)" >&2; exit 2; }
  shift
  exec "$@"
' without_system_deps "$list" "$@"
