// CPU vs CUDA parity over every row of the op table (prop_cuda; on a GPU again under label cuda).
//
// For each row, RapidCheck draws cases with the row's own sampler through ParityDraw: its shapes,
// a third of the time with one dim of 17..300 elements (warp and block boundaries, never a
// multiple of 32), for most rows now and then with a dim of size 0; inputs keep the layout the
// sampler drew (contiguous, transposed storage, every other element) on both devices. The row's
// forward runs on CPU tensors and on the same values moved with .cuda(); outputs must agree, and
// so must the CPU leaves' gradients after a backward with one random upstream gradient from each
// run (the CUDA run's gradients flow back through .cuda()). Float64 and float32 (inputs cast).
// Tolerances and the "sum of magnitudes" scale: parity_util.hpp. New CUDA blocks are poisoned
// (0x7F bytes), so an element a kernel forgets to write fails.
//
//   OpTable/CudaParity.{Float64,Float32}/<row>   100 cases per row and dtype
//   OpTable/CudaParitySlow.*                      1000 (label slow)
//   Kernels/CudaParityLarge.*                     20 cases at sizes the samplers never draw
//   CudaParityCoverage.*                          every row runs on CUDA, or is listed with why
//   CudaParityHarness.*                           the check catches wrong CUDA results
//
// Every property prints its seed and the command that reruns it:
//   RC_PARAMS="seed=<seed>" build/.../prop_cuda --gtest_filter='OpTable/CudaParity.Float64/add'

#include <cstdio>

#include "cuda/cuda_env.hpp"
#include "cuda/parity_util.hpp"
#include "testing/prop_support.hpp"

namespace {

using namespace parity;
using proptest::check_property;
using proptest::row_param_name;

/// Rows that cannot run on CUDA, with the reason. Each must still fail there (the coverage test
/// checks it), so a row comes off this list as soon as it works.
const std::map<std::string, std::string>& not_on_cuda() {
  static const std::map<std::string, std::string> m = {};
  return m;
}

/// Rows never drawn with a size-0 dim, and why: their samplers cannot make such a case. Every
/// other row gets one in about 1 case in 8 (both devices must then agree, or reject it alike: max
/// over an empty dim, an index into one ...).
const std::map<std::string, std::string>& no_empty() {
  static const std::map<std::string, std::string> m = {
      {"reshape", "the sampler picks the target among the divisors of numel: none for 0 (throws)"},
      {"view", "the sampler picks the target among the divisors of numel: none for 0 (throws)"},
      {"index_put_", "the sampler draws 1..n distinct rows of dim 0 (reads past an empty list)"},
      {"batch_norm", "the sampler divides numel by the channel count (SIGFPE when it is 0)"},
  };
  return m;
}

struct PoisonGuard {
  bool prev = cuda::poison_allocations();
  PoisonGuard() { cuda::set_poison_allocations(true); }
  ~PoisonGuard() { cuda::set_poison_allocations(prev); }
  PoisonGuard(const PoisonGuard&) = delete;
  PoisonGuard& operator=(const PoisonGuard&) = delete;
};

struct Stats {
  int cases = 0, big = 0, empty = 0, empty_rejected = 0, forward = 0, backward = 0;
  int64_t max_numel = 0;
  double used = 0;
};

void parity_property(const OpSpec& spec, ScalarType dt, Stats& st) {
  // Both shrink toward the plain case (0).
  const bool big = *rcgen::uniform_int(0, 2) == 2;
  const bool empty = !no_empty().count(spec.name) && *rcgen::uniform_int(0, 7) == 7;
  ParityDraw d(big, empty);
  const OpCase c = spec.sample(d);
  const Outcome o = check_case(spec, c, dt, d);
  if (!o.failure.empty()) RC_FAIL(o.failure);
  if (o.cpu_rejected && !empty)
    RC_FAIL("[cuda-parity:harness] the CPU rejects a drawn case: " + c.describe + "\n  " +
            o.cpu_error);
  ++st.cases;
  st.big += o.max_dim > 5;
  st.empty += o.empty_input;
  st.empty_rejected += o.cpu_rejected;
  st.forward += o.forward_compared;
  st.backward += o.backward_compared;
  st.max_numel = std::max(st.max_numel, o.max_numel);
  st.used = std::max(st.used, o.used);
}

void run_row(const std::string& row, ScalarType dt, int cases) {
  const OpSpec& spec = op_spec(row);
  PoisonGuard poison;
  Stats st;
  check_property([&] { parity_property(spec, dt, st); }, cases);
  if (::testing::Test::HasFailure()) return;
  std::printf(
      "[cuda-parity] %s %s on the %s: %d cases (%d with a dim > 5, largest input %lld elements; %d "
      "with an empty input, %d of them rejected by CPU and CUDA alike); forward compared %d, "
      "backward %d; largest "
      "difference %.3g of the tolerance\n",
      row.c_str(), dt == kFloat32 ? "float32" : "float64", testing_cuda::backend_name(), st.cases,
      st.big, static_cast<long long>(st.max_numel), st.empty, st.empty_rejected, st.forward,
      st.backward, st.used);
  // A property that compared nothing proves nothing.
  EXPECT_EQ(st.forward + st.empty_rejected, st.cases) << row << ": cases without a comparison";
  EXPECT_GT(st.backward, 0) << row << ": no case compared gradients";
}

std::vector<std::string> cuda_rows() {
  std::vector<std::string> r;
  for (const auto& s : op_table())
    if (!not_on_cuda().count(s.name)) r.push_back(s.name);
  return r;
}

class CudaParity : public ::testing::TestWithParam<std::string> {};
TEST_P(CudaParity, Float64) {
  GRADLAB_USE_CUDA_BACKEND();
  run_row(GetParam(), kFloat64, 100);
}
TEST_P(CudaParity, Float32) {
  GRADLAB_USE_CUDA_BACKEND();
  run_row(GetParam(), kFloat32, 100);
}
INSTANTIATE_TEST_SUITE_P(OpTable, CudaParity, ::testing::ValuesIn(cuda_rows()), row_param_name);

class CudaParitySlow : public ::testing::TestWithParam<std::string> {};
TEST_P(CudaParitySlow, Float64) {
  GRADLAB_USE_CUDA_BACKEND();
  run_row(GetParam(), kFloat64, 1000);
}
TEST_P(CudaParitySlow, Float32) {
  GRADLAB_USE_CUDA_BACKEND();
  run_row(GetParam(), kFloat32, 1000);
}
INSTANTIATE_TEST_SUITE_P(OpTable, CudaParitySlow, ::testing::ValuesIn(cuda_rows()), row_param_name);

// ---- coverage -----------------------------------------------------------------------------------

/// Every row runs on CUDA (forward and backward, seeded cases from the table's GeneratorDraw), or
/// is listed in not_on_cuda() with its reason and still fails there. Whether the numbers agree is
/// the properties' job; here a row only has to run.
TEST(CudaParityCoverage, EveryRowRunsOnCudaOrIsListedWithItsReason) {
  GRADLAB_USE_CUDA_BACKEND();
  PoisonGuard poison;
  {
    // The move every CUDA run starts with is the node op_struct_exemptions() sends here.
    Tensor x = ones({2}).requires_grad_(true);
    Tensor y = x.cuda();
    ASSERT_TRUE(y.grad_fn());
    EXPECT_EQ(y.grad_fn()->name(), "ToCopyBackward0");
  }
  std::set<std::string> names;
  for (const auto& s : op_table()) names.insert(s.name);
  for (const auto& [row, why] : not_on_cuda()) {
    EXPECT_TRUE(names.count(row)) << "not_on_cuda() lists '" << row
                                  << "', which is no op-table row";
    EXPECT_FALSE(why.empty()) << "not_on_cuda() gives no reason for '" << row << "'";
  }
  for (const auto& spec : op_table()) {
    const bool listed = not_on_cuda().count(spec.name) > 0;
    int ran = 0, with_backward = 0;
    std::string cuda_error;
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      GeneratorDraw d(seed);
      const OpCase c = spec.sample(d);
      const Outcome o = check_case(spec, c, kFloat64, d);
      // A CUDA exception (a missing kernel, a device mismatch) means the row did not run.
      const bool threw = o.failure.find("CUDA threw") != std::string::npos ||
                         o.failure.find("CUDA backward threw") != std::string::npos;
      if (threw) {
        if (cuda_error.empty()) cuda_error = o.failure;
        continue;
      }
      ++ran;
      with_backward += o.backward_compared || !o.failure.empty();  // a mismatch: it ran
    }
    if (listed) {
      EXPECT_GT(cuda_error.size(), 0u)
          << spec.name << " is listed in not_on_cuda() (" << not_on_cuda().at(spec.name)
          << ") but runs on CUDA now: take it off the list";
      continue;
    }
    EXPECT_EQ(ran, 6) << spec.name << " does not run on CUDA (" << testing_cuda::backend_name()
                      << "):\n"
                      << cuda_error << "\nfix it, or list it in not_on_cuda() with the reason";
    EXPECT_GT(with_backward, 0) << spec.name << ": no seeded case reached the CUDA backward";
  }
}

}  // namespace

namespace {

// ---- the harness can fail -----------------------------------------------------------------------

/// A one-input row whose op is `f` (applied on either device).
OpSpec mutant(const std::string& name, std::function<Tensor(const Tensor&)> f) {
  OpSpec s;
  s.name = name;
  s.arity = 1;
  s.sample = [name](Draw& d) {
    Tensor x = d.values({37, 3}, Domain::any());
    return OpCase{{x}, {}, name + "(x [37, 3])"};
  };
  s.op = [f](const TensorList& in, const OpParams&) { return TensorList{f(in[0])}; };
  return s;
}

/// check_case must catch a CUDA result off by a few rtol (forward, then gradient only), an
/// element a kernel never writes (poisoned memory), and a result left on the CPU.
TEST(CudaParityHarness, CatchesWrongCudaResults) {
  GRADLAB_USE_CUDA_BACKEND();
  PoisonGuard poison;
  for (ScalarType dt : {kFloat64, kFloat32}) {
    const double off = 4 * rtol_for("mutant", dt);
    const std::vector<std::pair<OpSpec, std::string>> mutants = {
        {mutant("honest", [](const Tensor& x) { return x * 1.5; }), ""},
        {mutant("scaled",
                [off](const Tensor& x) { return x * (x.is_cuda() ? 1.5 * (1 + off) : 1.5); }),
         "[cuda-parity:forward]"},
        // same values, gradient 1 + off on CUDA: (x - x.detach()) is 0 with gradient 1
        {mutant(
             "grad",
             [off](const Tensor& x) { return x.is_cuda() ? x + (x - x.detach()) * off : x * 1.0; }),
         "[cuda-parity:backward]"},
        {mutant("unwritten",
                [](const Tensor& x) {
                  if (!x.is_cuda()) return x * 1.0;
                  NoGradGuard ng;
                  Tensor y = empty_like(x);  // poisoned
                  y.narrow(0, 0, x.size(0) - 1).copy_(x.narrow(0, 0, x.size(0) - 1));
                  return y;
                }),
         "[cuda-parity:forward]"},
        {mutant("stays_on_cpu", [](const Tensor& x) { return x.cpu() * 1.0; }),
         "is on cpu, not on CUDA"},
    };
    for (const auto& [spec, expect] : mutants) {
      GeneratorDraw d(7);
      const Outcome o = check_case(spec, spec.sample(d), dt, d);
      if (expect.empty())
        EXPECT_EQ(o.failure, "") << spec.name;
      else
        EXPECT_NE(o.failure.find(expect), std::string::npos)
            << spec.name << " (" << to_string(dt) << ") should fail with '" << expect
            << "', got: " << (o.failure.empty() ? "a pass" : o.failure);
    }
  }
}

}  // namespace

namespace {

// ---- sizes the table's samplers never draw ------------------------------------------------------
// Rows that size their tensors with integer() (mm, bmm, embedding, the class-index losses, the
// window ops, index lengths) only see sizes <= 5 above. These cases run the same kernels through
// the same check (check_case, the row's name choosing tolerance and magnitude rule) at sizes across
// warp and block boundaries: K up to 300, 1000 classes, 40x40 images, 300 repeated indices.

struct LargeCase {
  std::string row;  ///< the op-table row whose op (and kernels) it runs
  std::function<OpCase(Draw&)> sample;
};

// A case of `row` with named parameters, described by them.
OpCase large(const std::string& row, TensorList in, OpParams p) {
  std::string d = row + "(";
  for (size_t i = 0; i < in.size(); ++i) d += (i ? ", " : "") + shape_str(in[i].sizes());
  d += p.empty() ? ")" : "; " + p.str() + ")";
  return OpCase{std::move(in), std::move(p), d};
}

// logits / log-probabilities [N, C] (C large), targets, reduction, smoothing, ignore_index
OpCase class_case(Draw& d, const std::string& name) {
  const int64_t n = d.integer(1, 70), c = d.integer(2, 1000);
  Tensor x = d.values({n, c}, Domain::any());
  Tensor t = d.indices({n}, c);
  int64_t ignore = -100;
  if (d.integer(0, 2) == 2) {
    const auto tv = t.to_vector<int64_t>();
    if (std::any_of(tv.begin(), tv.end(), [&](int64_t v) { return v != tv[0]; })) ignore = tv[0];
  }
  const std::string reduction = d.choose(std::vector<std::string>{"mean", "sum", "none"});
  const double smoothing = d.integer(0, 1) ? 0.1 : 0.0;
  return large(name, {x, t},
               OpParams()
                   .set("reduction", reduction)
                   .set("ignore_index", ignore)
                   .set("label_smoothing", smoothing));
}

// A 2-D window (kernel_size, dilation, padding, stride) and an H x W image it fits ("hw"), H, W
// up to ~40.
OpParams window(Draw& d, bool pool) {
  const int64_t kh = d.integer(1, 5), kw = d.integer(1, 5);
  const int64_t dh = pool ? 1 : d.integer(1, 2), dw = pool ? 1 : d.integer(1, 2);
  const int64_t ph = d.integer(0, kh / 2), pw = d.integer(0, kw / 2);
  const int64_t sh = d.integer(1, 3), sw = d.integer(1, 3);
  const int64_t H = std::max<int64_t>(1, dh * (kh - 1) + 1 - 2 * ph) + d.integer(0, 36);
  const int64_t W = std::max<int64_t>(1, dw * (kw - 1) + 1 - 2 * pw) + d.integer(0, 36);
  return OpParams()
      .set("kernel_size", {kh, kw})
      .set("dilation", {dh, dw})
      .set("padding", {ph, pw})
      .set("stride", {sh, sw})
      .set("hw", {H, W});
}
int64_t out_size(const OpParams& p, size_t k) {
  const int64_t n = p.dims("hw")[k], kk = p.dims("kernel_size")[k], dd = p.dims("dilation")[k],
                pp = p.dims("padding")[k], ss = p.dims("stride")[k];
  return (n + 2 * pp - dd * (kk - 1) - 1) / ss + 1;
}

const std::vector<LargeCase>& large_cases() {
  static const std::vector<LargeCase> v = {
      {"mm",
       [](Draw& d) {
         const int64_t m = d.integer(1, 130), k = d.integer(1, 300), n = d.integer(1, 130);
         return large("mm", {d.values({m, k}, Domain::any()), d.values({k, n}, Domain::any())}, {});
       }},
      {"bmm",
       [](Draw& d) {
         const int64_t bb = d.integer(1, 5), m = d.integer(1, 70), k = d.integer(1, 70),
                       n = d.integer(1, 70);
         return large(
             "bmm", {d.values({bb, m, k}, Domain::any()), d.values({bb, k, n}, Domain::any())}, {});
       }},
      {"embedding",
       [](Draw& d) {
         Tensor w = d.values({d.integer(1, 300), d.integer(1, 129)}, Domain::any());
         Tensor idx = d.indices({d.integer(1, 40), d.integer(1, 8)}, w.size(0));
         return large("embedding", {w, idx}, {});
       }},
      {"index_select",
       [](Draw& d) {
         Tensor x = d.values({d.integer(1, 300), d.integer(1, 17)}, Domain::any());
         Tensor idx = d.indices({d.integer(1, 300)}, x.size(0));
         return large("index_select", {x, idx}, OpParams().set("dim", 0));
       }},
      {"index_add",
       [](Draw& d) {
         Tensor self = d.values({d.integer(1, 300), d.integer(1, 17)}, Domain::any());
         Tensor idx = d.indices({d.integer(1, 300)}, self.size(0));
         Tensor src = d.values({idx.size(0), self.size(1)}, Domain::any());
         return large("index_add", {self, idx, src}, OpParams().set("dim", 0));
       }},
      {"gather",
       [](Draw& d) {
         Tensor x = d.values({d.integer(1, 9), d.integer(1, 300)}, Domain::any());
         Tensor idx = d.indices({x.size(0), d.integer(1, 300)}, x.size(1));
         return large("gather", {x, idx}, OpParams().set("dim", 1));
       }},
      {"scatter_add",
       [](Draw& d) {
         Tensor self = d.values({d.integer(1, 9), d.integer(1, 300)}, Domain::any());
         Tensor idx = d.indices({self.size(0), d.integer(1, 300)}, self.size(1));
         Tensor src = d.values(idx.sizes(), Domain::any());
         return large("scatter_add", {self, idx, src}, OpParams().set("dim", 1));
       }},
      {"softmax",
       [](Draw& d) {
         Tensor x = d.values({d.integer(1, 4), d.integer(257, 2048)}, Domain::any(-8, 8));
         return large("softmax", {x}, OpParams().set("dim", -1));
       }},
      {"log_softmax",
       [](Draw& d) {
         Tensor x = d.values({d.integer(1, 4), d.integer(257, 2048)}, Domain::any(-8, 8));
         return large("log_softmax", {x}, OpParams().set("dim", -1));
       }},
      {"cross_entropy_loss_fused", [](Draw& d) { return class_case(d, "cross_entropy_loss_fused"); }},
      {"cross_entropy_loss", [](Draw& d) { return class_case(d, "cross_entropy_loss"); }},
      {"nll_loss", [](Draw& d) { return class_case(d, "nll_loss"); }},
      {"conv2d",
       [](Draw& d) {
         OpParams p = window(d, false);
         const int64_t g = d.integer(1, 3), C = g * d.integer(1, 4), O = g * d.integer(1, 8);
         p.set("groups", g);
         const Dims &hw = p.dims("hw"), &k = p.dims("kernel_size");
         Tensor x = d.values({d.integer(1, 2), C, hw[0], hw[1]}, Domain::any());
         Tensor w = d.values({O, C / g, k[0], k[1]}, Domain::any()), b = d.values({O}, Domain::any());
         return large("conv2d", {x, w, b}, p);
       }},
      {"max_pool2d",
       [](Draw& d) {
         OpParams p = window(d, true);
         const Dims& hw = p.dims("hw");
         Tensor x = d.values({d.integer(1, 2), d.integer(1, 3), hw[0], hw[1]},
                             Domain::any().distinct_values(0.001));
         return large("max_pool2d", {x}, p);
       }},
      {"unfold",
       [](Draw& d) {
         OpParams p = window(d, false);
         const Dims& hw = p.dims("hw");
         Tensor x = d.values({d.integer(1, 2), d.integer(1, 4), hw[0], hw[1]}, Domain::any());
         return large("unfold", {x}, p);
       }},
      {"fold",
       [](Draw& d) {
         OpParams p = window(d, false);
         const int64_t L = out_size(p, 0) * out_size(p, 1);
         const Dims& k = p.dims("kernel_size");
         Tensor x = d.values({d.integer(1, 2), d.integer(1, 4) * k[0] * k[1], L}, Domain::any());
         return large("fold", {x}, p.set("output_size", p.dims("hw")));
       }},
  };
  return v;
}

std::vector<std::string> large_names() {
  std::vector<std::string> r;
  for (const auto& c : large_cases()) r.push_back(c.row);
  return r;
}

void run_large(const std::string& row, ScalarType dt, int cases) {
  const LargeCase* lc = nullptr;
  for (const auto& c : large_cases())
    if (c.row == row) lc = &c;
  ASSERT_TRUE(lc);
  OpSpec spec;
  spec.name = lc->row;
  spec.sample = lc->sample;
  spec.op = op_spec(lc->row).op;  // the row's own op, on these cases' named parameters
  PoisonGuard poison;
  Stats st;
  check_property(
      [&] {
        ParityDraw d(false, false);
        const OpCase c = spec.sample(d);
        const Outcome o = check_case(spec, c, dt, d);
        if (!o.failure.empty()) RC_FAIL(o.failure);
        if (o.cpu_rejected)
          RC_FAIL("[cuda-parity:harness] the CPU rejects " + c.describe + ": " + o.cpu_error);
        ++st.cases;
        st.backward += o.backward_compared;
        st.max_numel = std::max(st.max_numel, o.max_numel);
        st.used = std::max(st.used, o.used);
      },
      cases);
  if (::testing::Test::HasFailure()) return;
  std::printf(
      "[cuda-parity] %s %s, large shapes, on the %s: %d cases (largest input %lld elements), "
      "backward compared %d; largest difference %.3g of the tolerance\n",
      row.c_str(), dt == kFloat32 ? "float32" : "float64", testing_cuda::backend_name(), st.cases,
      static_cast<long long>(st.max_numel), st.backward, st.used);
  EXPECT_EQ(st.backward, st.cases) << row << ": cases without a gradient comparison";
}

class CudaParityLarge : public ::testing::TestWithParam<std::string> {};
TEST_P(CudaParityLarge, Float64) {
  GRADLAB_USE_CUDA_BACKEND();
  run_large(GetParam(), kFloat64, 20);
}
TEST_P(CudaParityLarge, Float32) {
  GRADLAB_USE_CUDA_BACKEND();
  run_large(GetParam(), kFloat32, 20);
}
INSTANTIATE_TEST_SUITE_P(Kernels, CudaParityLarge, ::testing::ValuesIn(large_names()),
                         row_param_name);

}  // namespace

namespace {
TEST(CudaParityCoverage, LargeShapeCasesNameOpTableRows) {
  GRADLAB_USE_CUDA_BACKEND();  // every test here skips without a GPU (run_on_gpu.sh reads that)
  for (const auto& c : large_cases())
    EXPECT_NO_THROW(op_spec(c.row))
        << "large_cases() names '" << c.row << "', which is no op-table row";
}
}  // namespace
