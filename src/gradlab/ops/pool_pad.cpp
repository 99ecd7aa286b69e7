// 1-D pooling, adaptive max pooling, instance norm, pixel shuffle and reflection / replication
// padding, composed from existing ops (no node of their own; the backward comes from the pieces):
//   max_pool1d / avg_pool1d:  the 2-D op on x.unsqueeze(-2) = [N, C, 1, L], kernel [1, k]
//   pixel_shuffle:            [*, C r r, H, W] -> [*, C, r, r, H, W] -> permute -> [*, C, H r, W r]
//   reflection / replication pads: y = index_select(x, dim, src) per padded dim, with
//     src[i] = i - left  mapped into [0, n): reflect |s| and 2 (n - 1) - s; replicate clamp(s)
//   NOTE: index_select's backward is index_add, so a source read twice (reflect, replicate) gets
//   the sum of both gradients.

#include <algorithm>
#include <string>

#include "gradlab/core/factories.hpp"
#include "gradlab/ops/internal/nn_ops.hpp"
#include "gradlab/ops/nn_ops.hpp"

namespace gradlab {

namespace {

std::string dims_str(const Tensor& x) { return std::to_string(x.dim()) + "-D " + shape_str(x.sizes()); }

// x [N, C, L] or [C, L] as [.., 1, L] for the 2-D pools.
Tensor as_plane(const char* op, const Tensor& x, const Site& site) {
  GRADLAB_CHECK(x.defined(), ValueError, op, "input is undefined", "a tensor", "Tensor()");
  GRADLAB_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError, op, "expects a sequence batch",
                "[N, C, L] or [C, L]", dims_str(x), "for images use the 2d op");
  return x.unsqueeze(-2, site);
}

void check_1d_window(const char* op, int64_t kernel, std::optional<int64_t> stride, int64_t padding,
                     int64_t dilation, bool ceil_mode) {
  GRADLAB_CHECK(kernel > 0 && (!stride || *stride > 0) && dilation > 0 && padding >= 0, ValueError, op,
                "kernel_size, stride and dilation must be positive, padding non-negative",
                "kernel_size > 0, stride > 0, dilation > 0, padding >= 0",
                "kernel_size " + std::to_string(kernel) + ", stride " +
                    (stride ? std::to_string(*stride) : std::string("default")) + ", padding " +
                    std::to_string(padding) + ", dilation " + std::to_string(dilation));
  GRADLAB_CHECK(2 * padding <= kernel, ValueError, op, "pad should be at most half of the kernel size",
                "padding <= kernel_size / 2",
                "padding " + std::to_string(padding) + " with kernel_size " + std::to_string(kernel));
  GRADLAB_CHECK(!ceil_mode, ValueError, op, "ceil_mode is not supported by gradlab's max pool",
                "ceil_mode false", "ceil_mode true",
                "pad the input on the right (F::pad, or padding) so the last window fits");
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, int64_t kernel_size,
                                                   std::optional<int64_t> stride, int64_t padding,
                                                   int64_t dilation, bool ceil_mode, Site site) {
  check_1d_window("max_pool1d", kernel_size, stride, padding, dilation, ceil_mode);
  Tensor x = as_plane("max_pool1d", input, site);
  auto [y, idx] = max_pool2d_with_indices(x, IntPair(1, kernel_size), IntPair(1, stride.value_or(kernel_size)),
                                          IntPair(0, padding), IntPair(1, dilation), site);
  // with H = 1 the index within the H*W plane is the index along L
  return {y.squeeze(-2, site), idx.squeeze(-2)};
}

Tensor max_pool1d(const Tensor& input, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding, int64_t dilation, bool ceil_mode, Site site) {
  return std::get<0>(max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode, site));
}

Tensor avg_pool1d(const Tensor& input, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding, bool ceil_mode, bool count_include_pad, Site site) {
  check_1d_window("avg_pool1d", kernel_size, stride, padding, 1, false);
  Tensor x = as_plane("avg_pool1d", input, site);
  return avg_pool2d(x, IntPair(1, kernel_size), IntPair(1, stride.value_or(kernel_size)),
                    IntPair(0, padding), ceil_mode, count_include_pad, std::nullopt, site)
      .squeeze(-2, site);
}

// ---- adaptive max pooling ----------------------------------------------------------------------
// Separable: the max over a window of rows x cols is the max over rows of each row's max over cols,
// and the first row holding it, then its first col, is the row-major first maximum (LibTorch's).
// Along one dim of size n into o windows [floor(i n / o), ceil((i + 1) n / o)): the taps
// start_i + min(j, len_i - 1), j < kmax, as [.., o, kmax] (a short window repeats its last tap,
// which changes neither the max nor, through index_select's summing backward, the gradient),
// then max over the taps.

namespace {

// (values, argmax as an index along `dim`) of x's adaptive windows along `dim`
std::pair<Tensor, Tensor> adaptive_max_along(const Tensor& x, int64_t dim, int64_t o, const Site& site) {
  const int64_t n = x.size(dim);
  std::vector<int64_t> start(static_cast<size_t>(o)), len(static_cast<size_t>(o));
  int64_t kmax = 1;
  for (int64_t i = 0; i < o; ++i) {
    start[static_cast<size_t>(i)] = (i * n) / o;
    len[static_cast<size_t>(i)] = ((i + 1) * n + o - 1) / o - start[static_cast<size_t>(i)];
    kmax = std::max(kmax, len[static_cast<size_t>(i)]);
  }
  std::vector<int64_t> taps;
  for (int64_t i = 0; i < o; ++i)
    for (int64_t j = 0; j < kmax; ++j)
      taps.push_back(start[static_cast<size_t>(i)] + std::min(j, len[static_cast<size_t>(i)] - 1));
  const TensorOptions on = TensorOptions().dtype(kInt64).device(x.device());
  Tensor t = index_select(x, dim, from_vector(taps, {o * kmax}, on), site);
  Shape s = t.sizes();
  s[static_cast<size_t>(dim)] = o;
  s.insert(s.begin() + dim + 1, kmax);
  auto [v, a] = max(t.reshape(s, site), dim + 1, false, site);
  // the window's offset -> the index along dim (a tie with a repeated tap keeps the first)
  Tensor ac = a.to(Device(kCPU)).contiguous();
  std::vector<int64_t> src = ac.to_vector<int64_t>();
  const Shape as = ac.sizes();
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < static_cast<int64_t>(as.size()); ++d) inner *= as[static_cast<size_t>(d)];
  for (size_t k = 0; k < src.size(); ++k) {
    const auto i = static_cast<size_t>((static_cast<int64_t>(k) / inner) % o);
    src[k] = start[i] + std::min(src[k], len[i] - 1);
  }
  return {v, from_vector(src, as, on)};
}

void check_adaptive(const char* op, const Tensor& x, int64_t spatial, const std::vector<int64_t>& out) {
  GRADLAB_CHECK(x.defined(), ValueError, op, "input is undefined", "a tensor", "Tensor()");
  GRADLAB_CHECK(x.dim() == spatial + 1 || x.dim() == spatial + 2, ShapeError, op, "expects a batched or an unbatched input",
                std::to_string(spatial + 1) + "-D or " + std::to_string(spatial + 2) + "-D", dims_str(x));
  for (int64_t d = 1; d < x.dim(); ++d)
    GRADLAB_CHECK(x.size(d) > 0, ShapeError, op, "expects non-empty non-batch dims", "sizes > 0 after dim 0",
                  shape_str(x.sizes()));
  for (int64_t v : out)
    GRADLAB_CHECK(v > 0, ValueError, op, "output_size must be positive", "output_size > 0", std::to_string(v));
}

}  // namespace

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntPair output_size, Site site) {
  check_adaptive("adaptive_max_pool2d", input, 2, {output_size.h, output_size.w});
  const int64_t W = input.size(-1), dh = input.dim() - 2, dw = input.dim() - 1;
  auto [v1, col] = adaptive_max_along(input, dw, output_size.w, site);  // [.., H, ow]
  auto [v, row] = adaptive_max_along(v1, dh, output_size.h, site);      // [.., oh, ow]
  Tensor c = gather(col, dh, row);                                      // the max's col in that row
  return {v, add(mul(row, W), c)};
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& input, int64_t output_size, Site site) {
  check_adaptive("adaptive_max_pool1d", input, 1, {output_size});
  auto [v, idx] = adaptive_max_along(input, input.dim() - 1, output_size, site);
  return {v, idx};
}

// ---- instance norm: group norm with one channel per group ----------------------------------------

Tensor instance_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                     const Tensor& running_var, bool use_input_stats, double /*momentum*/, double eps,
                     bool /*cudnn_enabled*/, Site site) {
  GRADLAB_CHECK(!running_mean.defined() && !running_var.defined() && use_input_stats, ValueError,
                "instance_norm", "running statistics are not supported by gradlab's instance norm",
                "no running_mean / running_var, use_input_stats true",
                running_mean.defined() || running_var.defined() ? "running_mean / running_var given"
                                                                : "use_input_stats false",
                "normalize with each instance's own statistics (the default), or use batch_norm");
  GRADLAB_CHECK(input.defined(), ValueError, "instance_norm", "input is undefined", "a tensor", "Tensor()");
  GRADLAB_CHECK(input.dim() >= 3, ShapeError, "instance_norm", "expects a batch with spatial dims",
                "[N, C, *] with at least 3 dims", shape_str(input.sizes()));
  return group_norm(input, input.size(1), weight, bias, eps, site);
}

// ---- pixel_shuffle / pixel_unshuffle ----------------------------------------------------------

Tensor pixel_shuffle(const Tensor& input, int64_t r, Site site) {
  GRADLAB_CHECK(input.defined(), ValueError, "pixel_shuffle", "input is undefined", "a tensor", "Tensor()");
  GRADLAB_CHECK(input.dim() >= 3, ShapeError, "pixel_shuffle", "expects input to have at least 3 dimensions",
                "[*, C r^2, H, W]", dims_str(input));
  GRADLAB_CHECK(r > 0, ValueError, "pixel_shuffle", "expects a positive upscale_factor", "upscale_factor > 0",
                std::to_string(r));
  const int64_t c = input.size(-3), h = input.size(-2), w = input.size(-1);
  GRADLAB_CHECK(c % (r * r) == 0, ShapeError, "pixel_shuffle",
                "the channel dim (input.size(-3)) must be divisible by upscale_factor^2",
                "a multiple of " + std::to_string(r * r), "input.size(-3) = " + std::to_string(c));
  Shape batch(input.sizes().begin(), input.sizes().end() - 3);
  const auto b = static_cast<int64_t>(batch.size());
  Shape s6 = batch;
  for (int64_t v : {c / (r * r), r, r, h, w}) s6.push_back(v);
  Dims perm;
  for (int64_t i = 0; i < b; ++i) perm.push_back(i);
  for (int64_t i : {0, 3, 1, 4, 2}) perm.push_back(b + i);  // C, H, r, W, r
  Shape out = batch;
  for (int64_t v : {c / (r * r), h * r, w * r}) out.push_back(v);
  return input.reshape(s6, site).permute(perm, site).reshape(out, site);
}

Tensor pixel_unshuffle(const Tensor& input, int64_t r, Site site) {
  GRADLAB_CHECK(input.defined(), ValueError, "pixel_unshuffle", "input is undefined", "a tensor", "Tensor()");
  GRADLAB_CHECK(input.dim() >= 3, ShapeError, "pixel_unshuffle", "expects input to have at least 3 dimensions",
                "[*, C, H r, W r]", dims_str(input));
  GRADLAB_CHECK(r > 0, ValueError, "pixel_unshuffle", "expects a positive downscale_factor",
                "downscale_factor > 0", std::to_string(r));
  const int64_t c = input.size(-3), h = input.size(-2), w = input.size(-1);
  GRADLAB_CHECK(h % r == 0 && w % r == 0, ShapeError, "pixel_unshuffle",
                "height and width (input.size(-2), input.size(-1)) must be divisible by downscale_factor",
                "multiples of " + std::to_string(r), "[" + std::to_string(h) + ", " + std::to_string(w) + "]");
  Shape batch(input.sizes().begin(), input.sizes().end() - 3);
  const auto b = static_cast<int64_t>(batch.size());
  Shape s6 = batch;
  for (int64_t v : {c, h / r, r, w / r, r}) s6.push_back(v);
  Dims perm;
  for (int64_t i = 0; i < b; ++i) perm.push_back(i);
  for (int64_t i : {0, 2, 4, 1, 3}) perm.push_back(b + i);  // C, r, r, H, W
  Shape out = batch;
  for (int64_t v : {c * r * r, h / r, w / r}) out.push_back(v);
  return input.reshape(s6, site).permute(perm, site).reshape(out, site);
}

// ---- reflection / replication padding ----------------------------------------------------------

namespace {

enum class Edge { Reflect, Replicate, Circular };

// pads the last `spatial` dims of x [N, C, *] or [C, *]; padding = {left, right} of the last dim,
// then of the one before
Tensor edge_pad(const char* op, Edge edge, const Tensor& x, const std::vector<int64_t>& padding,
                int64_t spatial, const Site& site) {
  GRADLAB_CHECK(x.defined(), ValueError, op, "input is undefined", "a tensor", "Tensor()");
  GRADLAB_CHECK(x.dim() == spatial + 1 || x.dim() == spatial + 2, ShapeError, op,
                "expects a batched or an unbatched input",
                std::to_string(spatial + 1) + "-D or " + std::to_string(spatial + 2) + "-D (batch mode)",
                dims_str(x));
  GRADLAB_CHECK(static_cast<int64_t>(padding.size()) == 2 * spatial, ValueError, op,
                "padding needs {left, right} for each padded dim",
                std::to_string(2 * spatial) + " values", std::to_string(padding.size()) + " values");
  Tensor out = x;
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t dim = x.dim() - 1 - i, n = x.size(dim);
    const int64_t left = padding[static_cast<size_t>(2 * i)], right = padding[static_cast<size_t>(2 * i + 1)];
    if (edge == Edge::Reflect)
      GRADLAB_CHECK(left < n && right < n, ValueError, op,
                    "padding size should be less than the corresponding input dimension",
                    "padding < " + std::to_string(n) + " at dimension " + std::to_string(dim),
                    "padding (" + std::to_string(left) + ", " + std::to_string(right) + ") of input " +
                        shape_str(x.sizes()));
    else if (edge == Edge::Circular)
      GRADLAB_CHECK(left <= n && right <= n, ValueError, op,
                    "padding value causes wrapping around more than once",
                    "padding <= " + std::to_string(n) + " at dimension " + std::to_string(dim),
                    "padding (" + std::to_string(left) + ", " + std::to_string(right) + ")");
    GRADLAB_CHECK(n > 0, ShapeError, op, "cannot pad an empty dim from its own values", "size > 0",
                  "size 0 at dimension " + std::to_string(dim));
    const int64_t o = n + left + right;
    GRADLAB_CHECK(o >= 1, ShapeError, op, "the padded size must be at least 1",
                  "input size + left + right >= 1",
                  std::to_string(n) + " + " + std::to_string(left) + " + " + std::to_string(right));
    if (left == 0 && right == 0) continue;
    std::vector<int64_t> src(static_cast<size_t>(o));
    for (int64_t j = 0; j < o; ++j) {
      int64_t s = j - left;
      if (edge == Edge::Reflect) {
        if (s < 0) s = -s;
        if (s >= n) s = 2 * (n - 1) - s;
      } else if (edge == Edge::Replicate) {
        s = std::clamp<int64_t>(s, 0, n - 1);
      } else {
        s = ((s % n) + n) % n;
      }
      src[static_cast<size_t>(j)] = s;
    }
    out = index_select(out, dim, from_vector(src, {o}, TensorOptions().dtype(kInt64).device(x.device())),
                       site);
  }
  return out;
}

}  // namespace

namespace ops_detail {
Tensor circular_pad(const Tensor& x, const std::vector<int64_t>& padding, int64_t spatial, const Site& site) {
  return edge_pad("pad (circular)", Edge::Circular, x, padding, spatial, site);
}
}  // namespace ops_detail

Tensor reflection_pad1d(const Tensor& input, const std::vector<int64_t>& padding, Site site) {
  return edge_pad("reflection_pad1d", Edge::Reflect, input, padding, 1, site);
}
Tensor reflection_pad2d(const Tensor& input, const std::vector<int64_t>& padding, Site site) {
  return edge_pad("reflection_pad2d", Edge::Reflect, input, padding, 2, site);
}
Tensor replication_pad1d(const Tensor& input, const std::vector<int64_t>& padding, Site site) {
  return edge_pad("replication_pad1d", Edge::Replicate, input, padding, 1, site);
}
Tensor replication_pad2d(const Tensor& input, const std::vector<int64_t>& padding, Site site) {
  return edge_pad("replication_pad2d", Edge::Replicate, input, padding, 2, site);
}

}  // namespace gradlab
