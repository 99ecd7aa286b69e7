#pragma once
// Runtime ISA dispatch for the CPU sum kernels (backend/cpu/reduce.cpp), as vec.hpp does for the
// elementwise ones: vec/reduce_level.hpp is compiled into each vec_<level>.cpp with that level's
// -m flags, and reduce_kernels() uses the level kernels() picked (cpuid, GRADLAB_CPU_CAPABILITY).
//
// Summation order of sum_f32 / sum_f64 over one run p[0..n) (n <= reduce.cpp's block of 16384):
//   32 double lanes l[0..32), all 0; p[i] (widened to double) is added to l[i mod 32], i ascending;
//   then the lanes fold in halves: l[j] += l[j + w] for w = 16, 8, 4, 2, 1 (j < w); l[0] is the sum.
// Every level keeps exactly this order (AVX-512: 4 registers of 8 lanes; AVX2: 8 of 4; SSE2: 16 of
// 2) and uses only additions (no FMA to contract), so the bits are the same at every level and
// for any thread count. (The fold is what a lane tree does; it is written out on 32 numbers.)
// The loops take two chunks of 32 per trip and prefetch ahead (reduce_level.hpp): each lane still
// adds its elements one at a time in ascending i, so neither changes a bit.
// Error: each lane adds at most 512 values of a block, so |error| <= ~(512 + 5) eps Σ|p_i| per
// block in double, before the blocks are combined left to right (reduce.cpp).

#include <cstdint>

#include "gradlab/backend/cpu/vec/vec.hpp"

namespace gradlab::cpu::vec {

/// Lanes of the fixed summation pattern above.
inline constexpr int64_t kSumLanes = 32;

struct ReduceKernels {
  const char* name;  // "default", "avx2", "avx512"
  // Σ p[0..n) in the fixed pattern above, accumulated in double (float32 values widened exactly).
  double (*sum_f32)(const float* p, int64_t n);
  double (*sum_f64)(const double* p, int64_t n);
  // acc[j] += row[j] for j < n (each column on its own: the same bits as the scalar loop).
  void (*add_row_f32)(const float* row, double* acc, int64_t n);
  void (*add_row_f64)(const double* row, double* acc, int64_t n);
  // max (is_max) or min of p[0..n), n > 0, with math::reduce_combine's rule (NaN wins), in the
  // same 32-lane pattern (lanes start at p[0]; the fold combines l[j] with l[j + w]). The value
  // is exact at any order; the pattern only fixes which of -0 / +0 (or which NaN) comes out.
  double (*minmax_f32)(bool is_max, const float* p, int64_t n);
  double (*minmax_f64)(bool is_max, const double* p, int64_t n);
};

/// The table in use: the level kernels() picked.
const ReduceKernels& reduce_kernels();
/// The table of `level` when this CPU runs it, else nullptr (the checks test each level).
const ReduceKernels* reduce_kernels_for(Capability level);

// Defined in vec_<level>.cpp (through reduce_level.hpp); reach them through reduce_kernels_for.
extern const ReduceKernels kReduceDefault;
extern const ReduceKernels kReduceAvx2;
extern const ReduceKernels kReduceAvx512;

}  // namespace gradlab::cpu::vec
