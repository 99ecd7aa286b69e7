#pragma once
// Helpers of the DDP checks that run under mpirun (ddp_mpi.cpp, netns_ddp.cpp): weights as one
// vector, their largest difference, and every rank's copy.

#include <algorithm>
#include <cmath>
#include <gradlab/gradlab.hpp>
#include <vector>

namespace gradlab::checks {

/// The tensors' values, one after another, as doubles.
inline std::vector<double> flat(const std::vector<Tensor>& ts) {
  std::vector<double> v;
  for (const Tensor& t : ts)
    for (double x : t.to_vector<double>()) v.push_back(x);
  return v;
}

/// max |a - b|; +inf when the sizes differ.
inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

/// Every rank's copy of `v`, in rank order (an all_gather: every rank must call it).
inline std::vector<std::vector<double>> gather(const std::vector<double>& v) {
  Tensor mine = empty({static_cast<int64_t>(v.size())}, TensorOptions().dtype(kFloat64));
  std::copy(v.begin(), v.end(), mine.data_ptr<double>());
  std::vector<Tensor> all(static_cast<size_t>(distributed::get_world_size()));
  distributed::all_gather(all, mine);
  std::vector<std::vector<double>> out;
  for (const Tensor& t : all) out.push_back(t.to_vector<double>());
  return out;
}

}  // namespace gradlab::checks
