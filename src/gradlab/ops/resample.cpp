// Pooling and resampling of images and sequences, composed from index_select, where, mul and add
// one spatial dim at a time (their backward comes from the pieces; no node of their own):
// avg_pool2d, adaptive_avg_pool1d / 2d, upsample_nearest1d / 2d, upsample_linear1d,
// upsample_bilinear2d, group_norm.
//
// Every one of them is separable: a window or an interpolation stencil over [H, W] is a product of
// one along H and one along W, so the 2-D op is the 1-D op along W, then along H.
//   window sum along a dim:  s[i] = Σ_{j<k} x[start_i + j]   (only taps inside [start_i, end_i))
//   linear stencil:          y[i] = (1 - λ_i) x[i0_i] + λ_i x[i1_i]
// NOTE: taps outside a window are dropped with where(), not multiplied by 0, so an inf or NaN
// reaches exactly the outputs whose window holds it (0 * inf would be NaN everywhere on the row).

#include <cmath>

#include "gradlab/ops/internal/nn_ops.hpp"
#include "gradlab/ops/nn_ops.hpp"

namespace gradlab {
using namespace ops_detail;

namespace {

// A 1-D windowing of n input positions into the outputs: output i sums the taps
// start[i] + j, j < k, that fall in [start[i], end[i]); divisor[i] is what it divides by.
struct Windows {
  std::vector<int64_t> start, end;
  std::vector<double> divisor;
  int64_t k = 0;  // the widest window
};

// x with the windows of `w` summed along `dim` (then divided by w.divisor when `average`).
Tensor window_reduce(const Tensor& x, int64_t dim, const Windows& w, bool average,
                     const Site& site) {
  const auto o = static_cast<int64_t>(w.start.size());
  Shape bshape(static_cast<size_t>(x.dim()), 1);  // [o] placed at `dim`, to broadcast
  bshape[static_cast<size_t>(dim)] = o;
  const TensorOptions on = TensorOptions().device(x.device());
  Tensor sum;
  for (int64_t j = 0; j < w.k; ++j) {
    std::vector<int64_t> idx(static_cast<size_t>(o));
    std::vector<bool> in(static_cast<size_t>(o));
    bool all = true;
    for (int64_t i = 0; i < o; ++i) {
      const int64_t p = w.start[i] + j;
      in[i] = p < w.end[i];
      all = all && in[i];
      idx[i] = in[i] ? p : w.start[i];  // an index inside the window: only `where` drops it
    }
    Tensor tap = index_select(x, dim, from_vector(idx, {o}, on.dtype(kInt64)), site);
    if (!all) tap = where(from_vector(in, bshape, on), tap, 0.0, site);
    sum = sum.defined() ? add(sum, tap, site) : tap;
  }
  if (!average) return sum;
  return div(sum, from_vector(w.divisor, bshape, on.dtype(x.dtype())), site);
}

// avg_pool's windows along one dim of size n (PyTorch's avg_pool2d): output i covers
// [i s - p, i s - p + k) clipped to [-p, n + p) for the divisor with padding, to [0, n) for the
// taps; ceil_mode may add a last window that starts inside the input or left padding.
Windows pool_windows(int64_t n, int64_t k, int64_t s, int64_t p, bool ceil_mode,
                     bool count_include_pad) {
  int64_t out = (n + 2 * p - k + (ceil_mode ? s - 1 : 0)) / s + 1;
  if (ceil_mode && (out - 1) * s >= n + p) --out;
  Windows w;
  w.k = k;
  for (int64_t i = 0; i < out; ++i) {
    const int64_t lo = i * s - p, hi = std::min(lo + k, n + p);
    const int64_t a = std::max<int64_t>(lo, 0), b = std::min(hi, n);
    w.start.push_back(a);
    w.end.push_back(b);
    w.divisor.push_back(static_cast<double>(count_include_pad ? hi - lo : b - a));
  }
  return w;
}

// adaptive pooling's windows: output i of o covers [floor(i n / o), ceil((i + 1) n / o)).
Windows adaptive_windows(int64_t n, int64_t o) {
  Windows w;
  for (int64_t i = 0; i < o; ++i) {
    const int64_t a = (i * n) / o, b = ((i + 1) * n + o - 1) / o;
    w.start.push_back(a);
    w.end.push_back(b);
    w.divisor.push_back(static_cast<double>(b - a));
    w.k = std::max(w.k, b - a);
  }
  return w;
}

// x as [N, C, *spatial] with `spatial` dims (an unbatched input gets a batch dim of 1).
Tensor batched(const char* op, const Tensor& x, int64_t spatial, const Site& site) {
  check_defined(op, x);
  const char* forms = spatial == 1 ? "[C, L] or [N, C, L]" : "[C, H, W] or [N, C, H, W]";
  GRADLAB_CHECK(x.dim() == spatial + 1 || x.dim() == spatial + 2, ShapeError, op,
                "expected a " + std::to_string(spatial + 1) + "-D (unbatched) or " +
                    std::to_string(spatial + 2) + "-D (batched) input",
                forms, shape_str(x.sizes()),
                spatial == 1 ? "sequences are [N, C, L]" : "image batches are [N, C, H, W]");
  GRADLAB_CHECK(x.is_floating_point(), DTypeError, op, "expected a floating point input",
                "float32 or float64", to_string(x.dtype()), "convert with .to(kFloat32)");
  return x.dim() == spatial + 2 ? x : x.unsqueeze(0, site);
}

// y in the caller's rank (an unbatched input gets its batch dim back).
Tensor unbatched_like(const Tensor& y, const Tensor& input, int64_t spatial, const Site& site) {
  return input.dim() == spatial + 1 ? y.squeeze(0, site) : y;
}

void check_sizes(const char* op, const Tensor& x, const std::vector<int64_t>& out) {
  for (int64_t v : out)
    GRADLAB_CHECK(v > 0, ValueError, op, "output sizes must be positive", "sizes > 0",
                  shape_str(Shape(out.begin(), out.end())) + " for input " + shape_str(x.sizes()));
}

Tensor adaptive_avg_pool(const char* op, const Tensor& input, const std::vector<int64_t>& out,
                         const Site& site) {
  const auto spatial = static_cast<int64_t>(out.size());
  Tensor x = batched(op, input, spatial, site);
  check_sizes(op, x, out);
  // Last spatial dim first, as every separable op here.
  for (int64_t s = spatial - 1; s >= 0; --s) {
    const int64_t d = 2 + s;
    x = window_reduce(x, d, adaptive_windows(x.size(d), out[static_cast<size_t>(s)]), true, site);
  }
  return unbatched_like(x, input, spatial, site);
}

// The source scale of one dim (PyTorch's area_pixel_compute_scale, in float as PyTorch).
float source_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.f;
  if (scale && *scale > 0) return static_cast<float>(1.0 / *scale);
  return static_cast<float>(in) / static_cast<float>(out);
}

// Nearest along `dim`: y[i] = x[min(floor(i * scale), n - 1)] (PyTorch's "nearest"; i itself
// when the size is kept, i / 2 when doubled, whatever the scale).
Tensor nearest_along(const Tensor& x, int64_t dim, int64_t out, std::optional<double> scale,
                     const Site& site) {
  const int64_t n = x.size(dim);
  const float sc = source_scale(n, out, false, scale);
  std::vector<int64_t> idx(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i)  // PyTorch's nearest_idx, its two exact cases first
    idx[i] = out == n       ? i
             : out == 2 * n ? i / 2
                            : std::min(static_cast<int64_t>(std::floor(static_cast<float>(i) * sc)), n - 1);
  return index_select(x, dim, from_vector(idx, {out}, TensorOptions().dtype(kInt64).device(x.device())),
                      site);
}

// Linear along `dim`: source position r = scale * i (align_corners) or
// max(scale (i + 0.5) - 0.5, 0); y[i] = (1 - λ) x[i0] + λ x[i1], i0 = floor(r),
// i1 = min(i0 + 1, n - 1), λ = r - i0 (PyTorch's upsample_linear1d / bilinear2d).
Tensor linear_along(const Tensor& x, int64_t dim, int64_t out, bool align_corners,
                    std::optional<double> scale, const Site& site) {
  const int64_t n = x.size(dim);
  const float sc = source_scale(n, out, align_corners, scale);
  std::vector<int64_t> i0(static_cast<size_t>(out)), i1(static_cast<size_t>(out));
  std::vector<double> l1(static_cast<size_t>(out)), l0(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const float r = align_corners ? sc * static_cast<float>(i)
                                  : std::max(sc * (static_cast<float>(i) + 0.5f) - 0.5f, 0.f);
    const auto a = static_cast<int64_t>(r);
    i0[i] = a;
    i1[i] = a + (a < n - 1 ? 1 : 0);
    l1[i] = static_cast<double>(r - static_cast<float>(a));
    l0[i] = 1.0 - l1[i];
  }
  Shape bshape(static_cast<size_t>(x.dim()), 1);
  bshape[static_cast<size_t>(dim)] = out;
  const TensorOptions on = TensorOptions().device(x.device());
  Tensor x0 = index_select(x, dim, from_vector(i0, {out}, on.dtype(kInt64)), site);
  Tensor x1 = index_select(x, dim, from_vector(i1, {out}, on.dtype(kInt64)), site);
  return add(mul(x0, from_vector(l0, bshape, on.dtype(x.dtype())), site),
             mul(x1, from_vector(l1, bshape, on.dtype(x.dtype())), site), site);
}

// The output size of each spatial dim: output_size, or floor(n * scale) when only scales are given.
std::vector<int64_t> upsample_sizes(const char* op, const Tensor& x,
                                    const std::vector<int64_t>& output_size,
                                    const std::vector<std::optional<double>>& scales) {
  const size_t spatial = scales.size();
  std::vector<int64_t> out = output_size;
  if (out.empty()) {
    for (size_t s = 0; s < spatial; ++s) {
      GRADLAB_CHECK(scales[s] && *scales[s] > 0, ValueError, op,
                    "either output_size or positive scale factors must be given",
                    "output_size or scales > 0", "neither");
      out.push_back(static_cast<int64_t>(
          std::floor(static_cast<double>(x.size(static_cast<int64_t>(2 + s))) * *scales[s])));
    }
  }
  GRADLAB_CHECK(out.size() == spatial, ShapeError, op,
                "output_size must have one entry per spatial dim",
                std::to_string(spatial) + " sizes", std::to_string(out.size()) + " sizes");
  check_sizes(op, x, out);
  return out;
}

Tensor upsample(const char* op, const Tensor& input, const std::vector<int64_t>& output_size,
                const std::vector<std::optional<double>>& scales, bool linear,
                bool align_corners, const Site& site) {
  const auto spatial = static_cast<int64_t>(scales.size());
  Tensor x = batched(op, input, spatial, site);
  const std::vector<int64_t> out = upsample_sizes(op, x, output_size, scales);
  for (int64_t s = spatial - 1; s >= 0; --s) {
    const auto k = static_cast<size_t>(s);
    x = linear ? linear_along(x, 2 + s, out[k], align_corners, scales[k], site)
               : nearest_along(x, 2 + s, out[k], scales[k], site);
  }
  return unbatched_like(x, input, spatial, site);
}

}  // namespace

Tensor avg_pool2d(const Tensor& input, IntPair kernel, OptionalIntPair stride_in,
                  IntPair padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override, Site site) {
  const char* op = "avg_pool2d";
  const IntPair stride = stride_in.value.value_or(kernel);
  check_window(op, kernel, 1, padding, stride);
  GRADLAB_CHECK(padding.h * 2 <= kernel.h && padding.w * 2 <= kernel.w, ValueError, op,
                "pad should be at most half of kernel size", "padding <= kernel / 2",
                "padding " + padding.str() + " for kernel " + kernel.str());
  GRADLAB_CHECK(!divisor_override || *divisor_override != 0, ValueError, op,
                "divisor must be not zero", "divisor_override != 0", "0");
  Tensor x = batched(op, input, 2, site);
  check_output_size(op, x, window(kernel, 1, padding, stride));
  const Windows wh = pool_windows(x.size(2), kernel.h, stride.h, padding.h, ceil_mode,
                                  count_include_pad),
                ww = pool_windows(x.size(3), kernel.w, stride.w, padding.w, ceil_mode,
                                  count_include_pad);
  // mean over a window = (window sum along W / divisor_w) along H / divisor_h: the divisor of a
  // rectangle is the product of its sides' (with or without padding).
  const bool average = !divisor_override;
  Tensor y = window_reduce(window_reduce(x, 3, ww, average, site), 2, wh, average, site);
  if (divisor_override) y = div(y, static_cast<double>(*divisor_override), site);
  return unbatched_like(y, input, 2, site);
}

Tensor adaptive_avg_pool2d(const Tensor& input, IntPair output_size, Site site) {
  return adaptive_avg_pool("adaptive_avg_pool2d", input, {output_size.h, output_size.w}, site);
}

Tensor adaptive_avg_pool1d(const Tensor& input, int64_t output_size, Site site) {
  return adaptive_avg_pool("adaptive_avg_pool1d", input, {output_size}, site);
}

Tensor upsample_nearest1d(const Tensor& input, std::vector<int64_t> output_size,
                          std::optional<double> scales, Site site) {
  return upsample("upsample_nearest1d", input, output_size, {scales}, false, false, site);
}

Tensor upsample_nearest2d(const Tensor& input, std::vector<int64_t> output_size,
                          std::optional<double> scales_h, std::optional<double> scales_w,
                          Site site) {
  return upsample("upsample_nearest2d", input, output_size, {scales_h, scales_w}, false, false,
                  site);
}

Tensor upsample_linear1d(const Tensor& input, std::vector<int64_t> output_size, bool align_corners,
                         std::optional<double> scales, Site site) {
  return upsample("upsample_linear1d", input, output_size, {scales}, true, align_corners, site);
}

Tensor upsample_bilinear2d(const Tensor& input, std::vector<int64_t> output_size,
                           bool align_corners, std::optional<double> scales_h,
                           std::optional<double> scales_w, Site site) {
  return upsample("upsample_bilinear2d", input, output_size, {scales_h, scales_w}, true,
                  align_corners, site);
}

}  // namespace gradlab
