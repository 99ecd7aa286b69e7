#pragma once
// What conv_onednn.cpp (float32) and bf16_native.cpp (bfloat16) share about oneDNN: one CPU
// engine, a cached primitive with its buffers, the convolution primitives for a geometry and a
// data type, and running one primitive on gradlab tensors' memory. Only compiled with oneDNN
// (GRADLAB_HAVE_DNNL); internal to backend/cpu (it includes dnnl.hpp).

#include <array>
#include <cstdint>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "gradlab/backend/cpu/cpu.hpp"
#include "gradlab/backend/cpu/parallel.hpp"

namespace gradlab::cpu::onednn {

dnnl::engine& engine();

// One cached primitive: its argument descriptors in the layouts it wants (a = src / diff_dst,
// b = weights / src, out = the result), the plain ones gradlab's tensors have, and buffers in
// the wanted layouts where they differ (allocated once, reused by every call: no new pages per
// step). `mu` serializes two threads running the same shape.
struct Entry {
  dnnl::primitive prim;
  dnnl::memory::desc a, b, out, a_plain, b_plain, out_plain;
  dnnl::memory ma, mb, mo;
  std::mutex mu;
};

// The process-wide cache of one kind of primitive: build(k) once per key AND per OpenMP thread
// count (a oneDNN primitive keeps the count it was built with, so after set_num_threads, or in
// a forked child where only 1 thread exists, another one is built). A key oneDNN has no
// implementation for (build throws dnnl::error) is cached as null: the caller's fallback runs it.
template <class Key>
std::shared_ptr<Entry> cached(const Key& k, std::shared_ptr<Entry> (*build)(const Key&)) {
  static std::mutex mu;
  static std::map<std::pair<Key, int>, std::shared_ptr<Entry>> cache;
  cpu::detail::sync_runtime_threads();  // build and run with set_num_threads' count (1 in a fork)
  const std::pair<Key, int> key{k, cpu::detail::runtime_threads()};
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::shared_ptr<Entry> e;
  try {
    e = build(k);
  } catch (const dnnl::error&) {
  }
  return cache.emplace(key, e).first->second;
}

enum class Dir : int64_t { Forward, BackwardData, BackwardWeights };
// direction, bias, N C H W O oh ow groups, kh kw sh sw ph pw dh dw, data type
using ConvKey = std::array<int64_t, 19>;
ConvKey conv_key(Dir dir, const Conv2dGeom& g, bool bias, dnnl::memory::data_type dt);
// The primitive of one direction for NCHW tensors (weights OIHW, or GOIHW when grouped), in the
// layouts oneDNN picks ("any"): Forward a = x, b = w, out = y; BackwardData a = dy, b = w,
// out = dx; BackwardWeights a = dy, b = x, out = dw.
std::shared_ptr<Entry> build_conv(const ConvKey& k);

// Runs e on plain memory: a and b read, the result written to out (reordered from / to e's
// layouts where they differ); bias (n_bias elements of type dt) when not null.
void run(Entry& e, int arg_a, const void* a, int arg_b, const void* b, int arg_out, void* out,
         const void* bias, int64_t n_bias, dnnl::memory::data_type dt);

}  // namespace gradlab::cpu::onednn
