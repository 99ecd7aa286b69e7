// Op-table rows of ops/linalg.cpp: matmul (ranks 1-4, broadcast batch dims), mm, bmm. Their
// reference is the composite matmul_ref (support.hpp).

#include "gradlab/testing/op_table/support.hpp"

namespace gradlab::testing::table {

namespace {

OpFn matmul_reference() {
  return [](const TensorList& in, const OpParams&) { return TensorList{matmul_ref(in[0], in[1])}; };
}

}  // namespace

void add_linalg_rows(std::vector<OpSpec>& t) {
  const Domain any = Domain::any();
  t.push_back(row(
      "matmul", 2, "any", "matmul-compatible pair (ranks 1-4, broadcast batch dims)",
      [any](Draw& d) {
        auto [sa, sb] = d.matmul_pair();
        Tensor a = d.values(sa, any), b = d.values(sb, any);
        return make({a, b}, {}, "matmul(a " + sh(a) + ", b " + sh(b) + ")");
      },
      [](const TensorList& in, const OpParams&) { return TensorList{matmul(in[0], in[1])}; },
      matmul_reference()));
  t.push_back(row(
      "mm", 2, "any", "[M, K] and [K, N]",
      [any](Draw& d) {
        const int64_t m = d.integer(1, 5), k = d.integer(1, 5), n = d.integer(1, 5);
        Tensor a = d.values({m, k}, any), b = d.values({k, n}, any);
        return make({a, b}, {}, "mm(a " + sh(a) + ", b " + sh(b) + ")");
      },
      [](const TensorList& in, const OpParams&) { return TensorList{mm(in[0], in[1])}; },
      matmul_reference()));
  t.push_back(row(
      "bmm", 2, "any", "[B, M, K] and [B, K, N]",
      [any](Draw& d) {
        const int64_t bb = d.integer(1, 4), m = d.integer(1, 5), k = d.integer(1, 5),
                      n = d.integer(1, 5);
        Tensor a = d.values({bb, m, k}, any), b = d.values({bb, k, n}, any);
        return make({a, b}, {}, "bmm(a " + sh(a) + ", b " + sh(b) + ")");
      },
      [](const TensorList& in, const OpParams&) { return TensorList{bmm(in[0], in[1])}; },
      matmul_reference()));
}

}  // namespace gradlab::testing::table
