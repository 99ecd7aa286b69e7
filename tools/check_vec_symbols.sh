#!/usr/bin/env bash
# The objects of the AVX2 / AVX-512 kernel levels (backend/cpu/vec) must not define a weak symbol
# that baseline files could also define (an inline function or a template instantiation shared
# with them): the linker keeps one copy, maybe the AVX one, and a baseline caller on an older CPU
# would die of SIGILL. Allowed: symbols naming the level's own xsimd arch (batch<float, avx2>),
# the level's table and the personality reference.
#   bash tools/check_vec_symbols.sh <object>...
set -euo pipefail
bad=0
for o in "$@"; do
  shared="$(nm -C --defined-only "$o" | awk '$2 == "W" || $2 == "V" || $2 == "u"' |
    grep -v -E 'DW\.ref\.__gxx_personality|xsimd::(fma3<xsimd::)?avx|avx512|gradlab_(kernel|ieee754)_rem_pio2_' || true)"
  if [ -n "$shared" ]; then
    echo "check_vec_symbols: $o defines weak symbols other files may define too:"
    echo "$shared"
    bad=1
  else
    echo "check_vec_symbols: $o: ok ($(nm --defined-only "$o" | awk '$2 == "W"' | wc -l) weak symbols, all of its own arch)"
  fi
done
exit "$bad"
