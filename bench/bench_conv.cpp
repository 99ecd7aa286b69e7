// Convolution, float32: gradlab's fast path through oneDNN (backend/cpu/conv_onednn.cpp, when the
// build found Debian libdnnl-dev) and through im2col + GEMM per image (conv_gemm.cpp, what
// float64 and builds without oneDNN run), against the readable reference (unfold + matmul +
// fold, set_conv_reference(true)) in the same run, with a raw sgemm of the same FLOPs as the
// baseline and oneDNN's primitives called directly (onednn_raw: what the integration costs).
//
//   cnn_step/sgemm_same_flops   raw cblas_sgemm 576x576x576 (2*576^3 = 382 MFLOP = the convs +
//                               linear of one CNN step: forward, and dx / dweight where needed)
//   cnn_step/<path>             one SGD step of the CNN: conv 3x3 1->16 (pad 1), relu,
//                               max-pool 2, conv 3x3 16->32, relu, max-pool 2, linear 1568->10;
//                               batch 64 of 28x28, float32. Counter: minor page faults per step.
//   conv1|conv2|deconv/<path>   one layer: forward + backward (input and weight gradient) with a
//                               fixed upstream gradient. conv1 [64,1,28,28] 3x3 ->16, conv2
//                               [64,16,14,14] 3x3 ->32 (pad 1), deconv (DCGAN-like
//                               ConvTranspose2d 4x4 stride 2 pad 1) [64,64,8,8] -> [64,32,16,16].
//                               onednn_raw = forward + backward-data + backward-weights primitives
//                               (built once, cached), blocked layouts chosen by oneDNN ("any")
//                               plus the reorders from / to gradlab's NCHW that an integration
//                               would pay per call.
// One thread (the table is per thread): run as
//   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 taskset -c 0 build/release/bench/bench_conv
//     (add --benchmark_repetitions=5 --benchmark_report_aggregates_only=true)

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <sys/resource.h>

#include <gradlab/gradlab.hpp>
#include <vector>

#include "gradlab/backend/cpu/conv_onednn.hpp"

#if GRADLAB_BENCH_DNNL
#include <dnnl.hpp>
#endif

namespace {

namespace gl = gradlab;

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// The path under test: reference, or the fast path with or without oneDNN (float32).
enum class Path { Reference, Gemm, OneDnn };
struct PathGuard {
  bool ref_before = gl::conv_reference(), dnnl_before;
  explicit PathGuard(Path p) : dnnl_before(gl::cpu::onednn::set_enabled(p == Path::OneDnn)) {
    gl::set_conv_reference(p == Path::Reference);
  }
  ~PathGuard() {
    gl::set_conv_reference(ref_before);
    gl::cpu::onednn::set_enabled(dnnl_before);
  }
};

// ---- the CNN step ------------------------------------------------------------------------------

struct CnnImpl : gl::nn::Module {
  gl::nn::Conv2d c1{gl::nn::Conv2dOptions(1, 16, 3).padding(1)};
  gl::nn::Conv2d c2{gl::nn::Conv2dOptions(16, 32, 3).padding(1)};
  gl::nn::Linear fc{32 * 7 * 7, 10};
  CnnImpl() {
    register_module("c1", c1);
    register_module("c2", c2);
    register_module("fc", fc);
  }
  gl::Tensor forward(const gl::Tensor& x) {
    gl::Tensor h = gl::max_pool2d(gl::relu(c1(x)), 2);
    h = gl::max_pool2d(gl::relu(c2(h)), 2);
    return fc(h.flatten(1));
  }
};

void cnn_step(benchmark::State& state, Path p) {
  PathGuard path(p);
  gl::manual_seed(0);
  auto model = std::make_shared<CnnImpl>();
  gl::optim::SGD opt(model->parameters(), gl::optim::SGDOptions(0.01));
  const gl::Tensor x = gl::randn({64, 1, 28, 28});
  const gl::Tensor y = gl::randint(0, 10, {64});
  auto step = [&] {
    opt.zero_grad();
    gl::Tensor loss = gl::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
  step();  // warm: caches and workspaces
  const long f0 = minor_faults();
  for (auto _ : state) benchmark::DoNotOptimize(step().impl());
  state.counters["faults_per_step"] =
      static_cast<double>(minor_faults() - f0) / static_cast<double>(state.iterations());
}

void sgemm_same_flops(benchmark::State& state) {
  const int n = 576;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
}

// ---- one layer ---------------------------------------------------------------------------------

struct Layer {
  int64_t N, C, H, W, O, k, s, p;
  bool transposed;
  int64_t oh() const { return transposed ? (H - 1) * s - 2 * p + k : (H + 2 * p - k) / s + 1; }
  int64_t ow() const { return transposed ? (W - 1) * s - 2 * p + k : (W + 2 * p - k) / s + 1; }
};
const Layer kConv1{64, 1, 28, 28, 16, 3, 1, 1, false};
const Layer kConv2{64, 16, 14, 14, 32, 3, 1, 1, false};
const Layer kDeconv{64, 64, 8, 8, 32, 4, 2, 1, true};

void gradlab_layer(benchmark::State& state, const Layer& l, Path p) {
  PathGuard path(p);
  gl::manual_seed(0);
  gl::Tensor x = gl::randn({l.N, l.C, l.H, l.W}).requires_grad_();
  gl::Tensor w = (l.transposed ? gl::randn({l.C, l.O, l.k, l.k}) : gl::randn({l.O, l.C, l.k, l.k}))
                     .requires_grad_();
  gl::Tensor b = gl::randn({l.O}).requires_grad_();
  const gl::Tensor gy = gl::randn({l.N, l.O, l.oh(), l.ow()});
  auto run = [&] {
    gl::Tensor y =
        l.transposed ? gl::conv_transpose2d(x, w, b, l.s, l.p) : gl::conv2d(x, w, b, l.s, l.p);
    y.backward(gy);
    x.zero_grad();
    w.zero_grad();
    b.zero_grad();
  };
  run();
  for (auto _ : state) run();
}

#if GRADLAB_BENCH_DNNL
// oneDNN: forward, backward data and backward weights (+ bias), blocked layouts of its choice,
// and the reorders from / to plain NCHW / OIHW (IOHW for the transposed weight) on every call.
void onednn_layer(benchmark::State& state, const Layer& l) {
  using namespace dnnl;
  using tag = memory::format_tag;
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  const memory::dims src{l.N, l.C, l.H, l.W}, dst{l.N, l.O, l.oh(), l.ow()}, bias{l.O},
      wts{l.O, l.C, l.k, l.k}, strides{l.s, l.s}, pad{l.p, l.p}, dil{0, 0};
  const auto f32 = memory::data_type::f32;
  auto md = [&](const memory::dims& d, tag t) { return memory::desc(d, f32, t); };
  const tag wtag = l.transposed ? tag::iohw : tag::oihw;
  memory u_src(md(src, tag::nchw), eng), u_dst(md(dst, tag::nchw), eng), u_w(md(wts, wtag), eng),
      u_b(md(bias, tag::x), eng), u_dsrc(md(src, tag::nchw), eng), u_ddst(md(dst, tag::nchw), eng),
      u_dw(md(wts, wtag), eng), u_db(md(bias, tag::x), eng);
  for (memory* m : {&u_src, &u_w, &u_b, &u_ddst}) {
    float* p = static_cast<float*>(m->get_data_handle());
    const size_t n = m->get_desc().get_size() / sizeof(float);
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>((i * 7919) % 13) * 0.1f - 0.6f;
  }
  const auto any_src = md(src, tag::any), any_dst = md(dst, tag::any), any_w = md(wts, tag::any);
  const auto b_md = md(bias, tag::x);
  // The three primitive descriptors (deconvolution_* for the transposed layer).
  primitive fwd, bwd_d, bwd_w;
  memory::desc src_m, dst_m, w_m, dsrc_m, ddst_m, dw_m, ddst_w_m, src_w_m;
  if (!l.transposed) {
    auto fpd = convolution_forward::primitive_desc(
        convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct,
                                  any_src, any_w, b_md, any_dst, strides, dil, pad, pad),
        eng);
    auto dpd = convolution_backward_data::primitive_desc(
        convolution_backward_data::desc(algorithm::convolution_direct, any_src, any_w, any_dst,
                                        strides, dil, pad, pad),
        eng, fpd);
    auto wpd = convolution_backward_weights::primitive_desc(
        convolution_backward_weights::desc(algorithm::convolution_direct, any_src, any_w, b_md,
                                           any_dst, strides, dil, pad, pad),
        eng, fpd);
    fwd = convolution_forward(fpd), bwd_d = convolution_backward_data(dpd),
    bwd_w = convolution_backward_weights(wpd);
    src_m = fpd.src_desc(), dst_m = fpd.dst_desc(), w_m = fpd.weights_desc();
    dsrc_m = dpd.diff_src_desc(), ddst_m = dpd.diff_dst_desc();
    dw_m = wpd.diff_weights_desc(), ddst_w_m = wpd.diff_dst_desc(), src_w_m = wpd.src_desc();
  } else {
    auto fpd = deconvolution_forward::primitive_desc(
        deconvolution_forward::desc(prop_kind::forward_training, algorithm::deconvolution_direct,
                                    any_src, any_w, b_md, any_dst, strides, dil, pad, pad),
        eng);
    auto dpd = deconvolution_backward_data::primitive_desc(
        deconvolution_backward_data::desc(algorithm::deconvolution_direct, any_src, any_w, any_dst,
                                          strides, dil, pad, pad),
        eng, fpd);
    auto wpd = deconvolution_backward_weights::primitive_desc(
        deconvolution_backward_weights::desc(algorithm::deconvolution_direct, any_src, any_w, b_md,
                                             any_dst, strides, dil, pad, pad),
        eng, fpd);
    fwd = deconvolution_forward(fpd), bwd_d = deconvolution_backward_data(dpd),
    bwd_w = deconvolution_backward_weights(wpd);
    src_m = fpd.src_desc(), dst_m = fpd.dst_desc(), w_m = fpd.weights_desc();
    dsrc_m = dpd.diff_src_desc(), ddst_m = dpd.diff_dst_desc();
    dw_m = wpd.diff_weights_desc(), ddst_w_m = wpd.diff_dst_desc(), src_w_m = wpd.src_desc();
  }
  memory m_src(src_m, eng), m_dst(dst_m, eng), m_w(w_m, eng), m_dsrc(dsrc_m, eng),
      m_ddst(ddst_m, eng), m_dw(dw_m, eng), m_ddst_w(ddst_w_m, eng), m_src_w(src_w_m, eng);
  auto to = [&](memory& from, memory& into) { reorder(from, into).execute(st, from, into); };
  auto run = [&] {
    to(u_src, m_src);
    to(u_w, m_w);
    fwd.execute(st, {{DNNL_ARG_SRC, m_src},
                     {DNNL_ARG_WEIGHTS, m_w},
                     {DNNL_ARG_BIAS, u_b},
                     {DNNL_ARG_DST, m_dst}});
    to(m_dst, u_dst);
    to(u_ddst, m_ddst);
    bwd_d.execute(
        st, {{DNNL_ARG_DIFF_DST, m_ddst}, {DNNL_ARG_WEIGHTS, m_w}, {DNNL_ARG_DIFF_SRC, m_dsrc}});
    to(m_dsrc, u_dsrc);
    to(u_ddst, m_ddst_w);
    to(u_src, m_src_w);
    bwd_w.execute(st, {{DNNL_ARG_SRC, m_src_w},
                       {DNNL_ARG_DIFF_DST, m_ddst_w},
                       {DNNL_ARG_DIFF_WEIGHTS, m_dw},
                       {DNNL_ARG_DIFF_BIAS, u_db}});
    to(m_dw, u_dw);
    st.wait();
  };
  run();
  for (auto _ : state) run();
}
#endif

void register_all() {
  const auto ms = benchmark::kMillisecond;
  benchmark::RegisterBenchmark("cnn_step/sgemm_same_flops", sgemm_same_flops)->Unit(ms);
  if (gl::cpu::onednn::built())
    benchmark::RegisterBenchmark("cnn_step/gradlab_onednn", cnn_step, Path::OneDnn)->Unit(ms);
  benchmark::RegisterBenchmark("cnn_step/gradlab_gemm", cnn_step, Path::Gemm)->Unit(ms);
  benchmark::RegisterBenchmark("cnn_step/reference", cnn_step, Path::Reference)->Unit(ms);
  const std::pair<const char*, const Layer*> layers[] = {
      {"conv1", &kConv1}, {"conv2", &kConv2}, {"deconv", &kDeconv}};
  for (const auto& [name, l] : layers) {
    const std::string n(name);
#if GRADLAB_BENCH_DNNL
    benchmark::RegisterBenchmark((n + "/onednn_raw").c_str(), onednn_layer, *l)->Unit(ms);
#endif
    if (gl::cpu::onednn::built())
      benchmark::RegisterBenchmark((n + "/gradlab_onednn").c_str(), gradlab_layer, *l, Path::OneDnn)
          ->Unit(ms);
    benchmark::RegisterBenchmark((n + "/gradlab_gemm").c_str(), gradlab_layer, *l, Path::Gemm)
        ->Unit(ms);
    benchmark::RegisterBenchmark((n + "/reference").c_str(), gradlab_layer, *l, Path::Reference)
        ->Unit(ms);
  }
}

const bool kRegistered = [] {
  register_all();
  return true;
}();

}  // namespace
