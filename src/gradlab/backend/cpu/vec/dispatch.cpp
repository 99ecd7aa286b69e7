// Picks the elementwise kernels' level once, by cpuid (vec.hpp). Baseline code: nothing from a
// vec_<level>.cpp runs before best_capability() has said the CPU runs it.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gradlab/backend/cpu/vec/reduce.hpp"
#include "gradlab/backend/cpu/vec/vec.hpp"
#include "gradlab/core/cpu_capability.hpp"

namespace gradlab::cpu::vec {

namespace {
const char* name_of(Capability c) { return c == Capability::Avx512 ? "avx512" : c == Capability::Avx2 ? "avx2" : "default"; }

// GRADLAB_CPU_CAPABILITY (PyTorch: ATEN_CPU_CAPABILITY) lowers the level; a level above what
// the CPU runs, or an unknown name, is reported once on stderr and the best level is used.
Capability pick() {
  const Capability best = best_capability();
  const char* env = std::getenv("GRADLAB_CPU_CAPABILITY");
  if (!env || !*env) return best;
  const std::string want = env;
  Capability c;
  if (want == "default") c = Capability::Default;
  else if (want == "avx2") c = Capability::Avx2;
  else if (want == "avx512") c = Capability::Avx512;
  else {
    std::fprintf(stderr, "gradlab: GRADLAB_CPU_CAPABILITY=%s is not a level; expected default, avx2 or avx512; using %s\n",
                 env, name_of(best));
    return best;
  }
  if (c > best) {
    std::fprintf(stderr, "gradlab: GRADLAB_CPU_CAPABILITY=%s, but this CPU runs at most %s; using %s\n", env,
                 name_of(best), name_of(best));
    return best;
  }
  return c;
}
}  // namespace

Capability best_capability() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // NOTE: libgcc's check includes the OS side (XGETBV: the kernel saves the ymm / zmm state).
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
    return Capability::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
    return Capability::Avx2;
#endif
  return Capability::Default;
}

const Kernels* kernels_for(Capability level) {
  if (level > best_capability()) return nullptr;
#if defined(__x86_64__) || defined(__i386__)
  switch (level) {
    case Capability::Avx512: return &kAvx512;
    case Capability::Avx2: return &kAvx2;
    case Capability::Default: break;
  }
#endif
  // not x86: best_capability() is Default, the only table vec_<level>.cpp builds there
  return &kDefault;
}

const Kernels& kernels() {
  static const Kernels* const k = kernels_for(pick());
  return *k;
}

const ReduceKernels* reduce_kernels_for(Capability level) {
  if (level > best_capability()) return nullptr;
#if defined(__x86_64__) || defined(__i386__)
  switch (level) {
    case Capability::Avx512: return &kReduceAvx512;
    case Capability::Avx2: return &kReduceAvx2;
    case Capability::Default: break;
  }
#endif
  return &kReduceDefault;
}

// The sums run at the level the elementwise kernels run at (one pick, one message).
const ReduceKernels& reduce_kernels() {
#if defined(__x86_64__) || defined(__i386__)
  static const ReduceKernels* const k = reduce_kernels_for(&kernels() == &kAvx512 ? Capability::Avx512
                                                           : &kernels() == &kAvx2 ? Capability::Avx2
                                                                                  : Capability::Default);
  return *k;
#else
  return kReduceDefault;
#endif
}

// Picked at load time (so a forced level's message comes first, not at the first op).
[[maybe_unused]] const Kernels& kPickedAtLoad = kernels();

}  // namespace gradlab::cpu::vec

namespace gradlab {
std::string cpu_capability() { return cpu::vec::kernels().name; }
}  // namespace gradlab
