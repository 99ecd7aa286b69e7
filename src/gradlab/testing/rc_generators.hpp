#pragma once
// RapidCheck generators for tensors, and a Draw for the op table built on them.
//
// Header-only and included by test code only: libgradlab never includes it and does not link
// RapidCheck. It lives beside the op table (and is installed with it) so that users can draw
// the same shapes and values for their own ops: include it in a test that links `rapidcheck`.
//
//   RC_GTEST_PROP(MyOp, Gradient, ()) {
//     using namespace gradlab::testing;
//     Tensor x = *rcgen::tensor(*rcgen::shape(), Domain::positive());
//     RC_ASSERT(gradcheck(my_fn, {x.requires_grad_()}, GradcheckOptions().raise_exception(false)));
//   }
//
// Shrinking understands tensors: a shape drops a dim, halves or decrements a size; values move
// to simple numbers of their domain (never into the margin around a kink); a non-contiguous
// layout becomes contiguous. Sizes grow with RapidCheck's size parameter, so early cases are small.

#include <rapidcheck.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "gradlab/core/factories.hpp"
#include "gradlab/testing/op_table.hpp"

namespace gradlab::testing::rcgen {

namespace detail {

inline double unit(rc::Random& r) { return static_cast<double>(r.next() >> 11) * 0x1.0p-53; }
inline int64_t below(rc::Random& r, int64_t n) {
  return n <= 1 ? 0 : static_cast<int64_t>(r.next() % static_cast<uint64_t>(n));
}
// Fraction of the full range that RapidCheck's size (0-100) allows: small shapes come first.
inline double grow(int size) { return std::min(1.0, (static_cast<double>(size) + 15.0) / 60.0); }

inline rc::Seq<Shape> shape_shrinks(const Shape& s, int64_t min_rank) {
  std::vector<Shape> out;
  if (static_cast<int64_t>(s.size()) > min_rank)
    for (size_t k = 0; k < s.size(); ++k) {  // drop a dim
      Shape t = s;
      t.erase(t.begin() + static_cast<int64_t>(k));
      out.push_back(std::move(t));
    }
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] <= 1) continue;
    Shape half = s;
    half[k] = std::max<int64_t>(1, s[k] / 2);  // halve a size
    out.push_back(half);
    if (s[k] - 1 != half[k]) {
      Shape dec = s;
      dec[k] = s[k] - 1;  // or take one off
      out.push_back(std::move(dec));
    }
  }
  return rc::seq::fromContainer(std::move(out));
}

/// Raw values and a layout, before the domain's spreading: what tensor() shrinks.
struct Draft {
  std::vector<double> values;
  int64_t layout = 0;
};

inline int simplicity(double v, const std::vector<double>& simple) {
  auto it = std::find(simple.begin(), simple.end(), v);
  return it == simple.end() ? static_cast<int>(simple.size())
                            : static_cast<int>(it - simple.begin());
}

inline rc::Seq<Draft> draft_shrinks(const Draft& d, const Domain& dom) {
  const std::vector<double> simple = dom.simple_values();
  std::vector<Draft> head;
  if (d.layout != 0) head.push_back({d.values, 0});  // contiguous first
  const bool all_simplest =
      std::all_of(d.values.begin(), d.values.end(), [&](double v) { return v == simple[0]; });
  if (!all_simplest && d.values.size() > 1)
    head.push_back({std::vector<double>(d.values.size(), simple[0]), d.layout});
  // Then one element at a time: to a simpler value of the domain, or rounded to one decimal.
  const auto n = static_cast<int>(d.values.size());
  const int per = static_cast<int>(simple.size()) + 1;
  auto element = rc::seq::filter(
      rc::seq::map(rc::seq::range(0, n * per),
                   [d, simple, dom, per](int idx) {
                     Draft t = d;
                     const int i = idx / per, c = idx % per;
                     const double v = d.values[i];
                     if (c < static_cast<int>(simple.size())) {
                       if (c < simplicity(v, simple)) t.values[i] = simple[c];
                     } else {
                       const double r = dom.project(std::round(v * 10.0) / 10.0);
                       if (simplicity(v, simple) == static_cast<int>(simple.size()) && r != v)
                         t.values[i] = r;
                     }
                     return t;
                   }),
      [d](const Draft& t) { return t.values != d.values; });
  return rc::seq::concat(rc::seq::fromContainer(std::move(head)), std::move(element));
}

}  // namespace detail

/// An integer uniform in [lo, hi] at every size (rc::gen::inRange narrows its range at small
/// sizes, which would pin every choice to lo early on); shrinks toward lo.
inline rc::Gen<int64_t> uniform_int(int64_t lo, int64_t hi) {
  return rc::Gen<int64_t>([=](const rc::Random& random, int) {
    rc::Random r = random;
    const int64_t v = lo + detail::below(r, hi - lo + 1);
    return rc::shrinkable::shrinkRecur(
        v, [lo](int64_t x) { return rc::shrink::towards<int64_t>(x, lo); });
  });
}

/// A shape of rank [min_rank, max_rank] with sizes in [1, max_size] (both grow with the size).
inline rc::Gen<Shape> shape(int64_t min_rank = 0, int64_t max_rank = 4, int64_t max_size = 5) {
  return rc::Gen<Shape>([=](const rc::Random& random, int size) {
    rc::Random r = random;
    const double g = detail::grow(size);
    const int64_t rmax =
        min_rank + static_cast<int64_t>(std::lround(static_cast<double>(max_rank - min_rank) * g));
    const int64_t smax =
        1 + static_cast<int64_t>(std::lround(static_cast<double>(max_size - 1) * g));
    Shape s(static_cast<size_t>(min_rank + detail::below(r, rmax - min_rank + 1)));
    for (auto& v : s) v = 1 + detail::below(r, smax);
    return rc::shrinkable::shrinkRecur(
        std::move(s), [min_rank](const Shape& v) { return detail::shape_shrinks(v, min_rank); });
  });
}

/// float64 values of `shape` in `domain`, contiguous or (when allowed) a non-contiguous view.
inline rc::Gen<Tensor> tensor(Shape shape, Domain domain, bool allow_views = true) {
  return rc::Gen<Tensor>([=](const rc::Random& random, int) {
    rc::Random r = random;
    detail::Draft d;
    d.values.resize(static_cast<size_t>(numel_of(shape)));
    for (double& v : d.values)
      v = domain.project(domain.lo + (domain.hi - domain.lo) * detail::unit(r));
    d.layout = allow_views ? detail::below(r, 3) : 0;
    auto draft = rc::shrinkable::shrinkRecur(std::move(d), [domain](const detail::Draft& x) {
      return detail::draft_shrinks(x, domain);
    });
    return rc::shrinkable::map(std::move(draft), [shape, domain](const detail::Draft& x) {
      std::vector<double> v = x.values;
      domain.spread(v);
      return make_layout(v, shape, x.layout);
    });
  });
}

/// int64 values in [0, high) (shrink toward 0).
inline rc::Gen<Tensor> indices(Shape shape, int64_t high) {
  return rc::gen::map(rc::gen::container<std::vector<int64_t>>(static_cast<size_t>(numel_of(shape)),
                                                               uniform_int(0, high - 1)),
                      [shape](const std::vector<int64_t>& v) { return from_vector(v, shape); });
}

/// A bool mask (shrinks toward all false).
inline rc::Gen<Tensor> mask(Shape shape) {
  return rc::gen::map(rc::gen::container<std::vector<bool>>(static_cast<size_t>(numel_of(shape)),
                                                            rc::gen::arbitrary<bool>()),
                      [shape](const std::vector<bool>& v) { return from_vector(v, shape); });
}

/// The op table's Draw on RapidCheck: every choice is a pick inside the running property, so a
/// failing case shrinks through all of them (shape first, then parameters, then values).
/// Use it only inside a property (RC_GTEST_PROP, rc::check or rc::gen::exec).
class RcDraw : public Draw {
 public:
  explicit RcDraw(bool allow_views = true, int64_t max_size = 5)
      : views_(allow_views), max_size_(max_size) {}
  int64_t integer(int64_t lo, int64_t hi) override { return hi <= lo ? lo : *uniform_int(lo, hi); }
  Shape shape(int64_t min_rank = 0, int64_t max_rank = 4, int64_t max_size = 5) override {
    return *rcgen::shape(min_rank, max_rank, std::min(max_size, max_size_));
  }
  Tensor values(const Shape& shape, const Domain& domain, bool allow_views = true) override {
    return *rcgen::tensor(shape, domain, views_ && allow_views);
  }
  Tensor indices(const Shape& shape, int64_t high) override { return *rcgen::indices(shape, high); }
  Tensor mask(const Shape& shape) override { return *rcgen::mask(shape); }
  uint64_t seed() override { return *rc::gen::noShrink(rc::gen::arbitrary<uint64_t>()); }

 protected:
  std::array<int64_t, 3> matmul_sizes(int64_t max_size) override {
    return Draw::matmul_sizes(std::min(max_size, max_size_));
  }

 private:
  bool views_;
  int64_t max_size_;
};

/// Two shapes that broadcast together (Draw::broadcast_pair; both shrink toward the plain shape).
inline rc::Gen<std::pair<Shape, Shape>> broadcast_pair(int64_t max_rank = 4, int64_t max_size = 5) {
  return rc::gen::exec([=] { return RcDraw(true, max_size).broadcast_pair(max_rank, max_size); });
}

/// Shapes a, b with matmul(a, b) defined: ranks 1-4, broadcasting batch dims (Draw::matmul_pair).
inline rc::Gen<std::pair<Shape, Shape>> matmul_pair(int64_t max_size = 5) {
  return rc::gen::exec([=] { return RcDraw(true, max_size).matmul_pair(max_size); });
}

}  // namespace gradlab::testing::rcgen
