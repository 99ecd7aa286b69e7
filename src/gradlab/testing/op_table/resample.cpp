// Op-table rows of ops/resample.cpp and group_norm: avg_pool2d, adaptive_avg_pool1d / 2d,
// upsample_nearest1d / 2d, upsample_linear1d, upsample_bilinear2d, group_norm. The references
// are PyTorch's CPU loops, one output element at a time over whole windows (not separable).

#include "gradlab/testing/op_table/support.hpp"

namespace gradlab::testing::table {

namespace {

// [C, *] as [1, C, *]; the reference works on [N, C, *].
Tensor with_batch(const Tensor& x, int64_t spatial) {
  if (x.dim() == spatial + 2) return x;
  Shape s = x.sizes();
  s.insert(s.begin(), 1);
  return T(V(x), s);
}
Tensor like_input(const Vec& r, Shape out, const Tensor& input, int64_t spatial) {
  if (input.dim() == spatial + 1) out.erase(out.begin());
  return T(r, out);
}

// A case as the references see it: [N, C, H, W] planes (H = 1 for 1-D inputs) and the output's
// spatial sizes oh, ow (from the "output_size" parameter).
struct Planes {
  Planes(const TensorList& in, const OpParams& p, int64_t spatial)
      : x(with_batch(in[0], spatial)), o(p.dims("output_size")) {
    NC = x.size(0) * x.size(1);
    H = spatial == 2 ? x.size(2) : 1, W = x.size(-1);
    oh = spatial == 2 ? o[0] : 1, ow = o.back();
  }
  Shape out_shape() const {
    Shape s = {x.size(0), x.size(1)};
    for (int64_t v : o) s.push_back(v);
    return s;
  }
  Tensor x;
  Dims o;
  int64_t NC, H, W, oh, ow;
};

// PyTorch's pooling_output_shape.
int64_t pool_out(int64_t n, int64_t k, int64_t s, int64_t p, bool ceil_mode) {
  int64_t o = (n + 2 * p - k + (ceil_mode ? s - 1 : 0)) / s + 1;
  if (ceil_mode && (o - 1) * s >= n + p) --o;
  return o;
}

// PyTorch's nearest_idx, with scale = 1 / scale_factor when given, else n / out (in float).
int64_t nearest_src(int64_t i, int64_t n, int64_t out, std::optional<double> sf) {
  if (out == n) return i;
  if (out == 2 * n) return i >> 1;
  const float scale = sf ? static_cast<float>(1.0 / *sf) : static_cast<float>(n) / static_cast<float>(out);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(i) * scale)), n - 1);
}

// PyTorch's area_pixel_compute_source_index for linear modes: (index, its neighbour, λ).
struct Src {
  int64_t i0, i1;
  double l;
};
Src linear_src(int64_t i, int64_t n, int64_t out, bool align, std::optional<double> sf) {
  float scale = align ? (out > 1 ? static_cast<float>(n - 1) / static_cast<float>(out - 1) : 0.f)
                      : (sf ? static_cast<float>(1.0 / *sf)
                            : static_cast<float>(n) / static_cast<float>(out));
  float r = align ? scale * static_cast<float>(i) : scale * (static_cast<float>(i) + 0.5f) - 0.5f;
  if (!align && r < 0) r = 0;
  const auto a = static_cast<int64_t>(r);
  return {a, a < n - 1 ? a + 1 : a, static_cast<double>(r - static_cast<float>(a))};
}

std::optional<double> opt_real(const OpParams& p, const std::string& name) {
  if (!p.has(name)) return std::nullopt;
  return p.real(name);
}

// Spatial sizes of an upsample case: output sizes and maybe scale factors (then the sizes are
// floor(n * scale), as interpolate passes them).
void draw_upsample(Draw& d, const Shape& spatial_in, OpParams& p, std::string& text) {
  Dims out;
  const bool scaled = d.boolean();
  for (size_t s = 0; s < spatial_in.size(); ++s) {
    const std::string key = "scale" + std::to_string(s);
    if (scaled) {
      double f = d.choose(std::vector<double>{0.5, 0.7, 1.3, 1.5, 2.0, 2.5, 3.0});
      if (std::floor(static_cast<double>(spatial_in[s]) * f) < 1) f = 2.0;
      p.set(key, f);
      out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(spatial_in[s]) * f)));
      text += ", " + key + "=" + std::to_string(f);
    } else {
      out.push_back(d.integer(1, 7));
    }
  }
  p.set("output_size", out);
  text += ", output_size " + shape_str(Shape(out.begin(), out.end()));
}

Shape draw_input(Draw& d, int64_t spatial, int64_t max_side) {
  Shape s = {d.integer(1, 2), d.integer(1, 3)};
  for (int64_t k = 0; k < spatial; ++k) s.push_back(d.integer(1, max_side));
  if (d.integer(0, 3) == 0) s.erase(s.begin());  // unbatched
  return s;
}

OpSpec upsample_row(const std::string& name, int64_t spatial, bool linear) {
  return row(
      name, 1, "any",
      spatial == 1 ? "[N, C, L] or [C, L]; output_size, or output_size = floor(L * scale) with "
                     "the scale"
                   : "[N, C, H, W] or [C, H, W]; output_size, or output_size = floor(n * scale) "
                     "with the scales",
      [=](Draw& d) {
        Tensor x = d.values(draw_input(d, spatial, 4), Domain::any());
        OpParams p;
        std::string text = name + "(x " + sh(x);
        const Shape sp(x.sizes().end() - spatial, x.sizes().end());
        draw_upsample(d, sp, p, text);
        if (linear) {
          const bool align = d.boolean();
          p.set("align_corners", align);
          text += align ? ", align_corners" : "";
        }
        return make({x}, p, text + ")");
      },
      [=](const TensorList& in, const OpParams& p) {
        const Dims& o = p.dims("output_size");
        const std::vector<int64_t> out(o.begin(), o.end());
        const auto s0 = opt_real(p, "scale0"), s1 = opt_real(p, "scale1");
        if (spatial == 1)
          return TensorList{linear ? upsample_linear1d(in[0], out, p.flag("align_corners"), s0)
                                   : upsample_nearest1d(in[0], out, s0)};
        return TensorList{linear ? upsample_bilinear2d(in[0], out, p.flag("align_corners"), s0, s1)
                                 : upsample_nearest2d(in[0], out, s0, s1)};
      },
      [=](const TensorList& in, const OpParams& p) {
        const Planes q(in, p, spatial);
        const int64_t NC = q.NC, H = q.H, W = q.W, oh = q.oh, ow = q.ow;
        const auto sh_ = spatial == 2 ? opt_real(p, "scale0") : std::nullopt;
        const auto sw_ = opt_real(p, spatial == 2 ? "scale1" : "scale0");
        const bool align = linear && p.flag("align_corners");
        Vec xv = V(q.x), r;
        for (int64_t n = 0; n < NC; ++n)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              const double* plane = xv.data() + n * H * W;
              if (!linear) {
                r.push_back(plane[nearest_src(i, H, oh, sh_) * W + nearest_src(j, W, ow, sw_)]);
                continue;
              }
              const Src a = spatial == 2 ? linear_src(i, H, oh, align, sh_) : Src{0, 0, 0.0};
              const Src b = linear_src(j, W, ow, align, sw_);
              r.push_back((1 - a.l) * ((1 - b.l) * plane[a.i0 * W + b.i0] + b.l * plane[a.i0 * W + b.i1]) +
                          a.l * ((1 - b.l) * plane[a.i1 * W + b.i0] + b.l * plane[a.i1 * W + b.i1]));
            }
        return TensorList{like_input(r, q.out_shape(), in[0], spatial)};
      });
}

// Adaptive average pooling over `spatial` dims: output i averages [floor(i n / o), ceil((i+1) n / o)).
OpSpec adaptive_row(const std::string& name, int64_t spatial) {
  return row(
      name, 1, "any",
      spatial == 1 ? "[N, C, L] or [C, L]; output length 1-6 (smaller or larger than L)"
                   : "[N, C, H, W] or [C, H, W]; output size 1-6 per dim (smaller or larger)",
      [=](Draw& d) {
        Tensor x = d.values(draw_input(d, spatial, 6), Domain::any());
        Dims out;
        for (int64_t k = 0; k < spatial; ++k) out.push_back(d.integer(1, 6));
        return make({x}, OpParams().set("output_size", out),
                    name + "(x " + sh(x) + ", " + shape_str(Shape(out.begin(), out.end())) + ")");
      },
      [=](const TensorList& in, const OpParams& p) {
        const Dims& o = p.dims("output_size");
        return TensorList{spatial == 1 ? adaptive_avg_pool1d(in[0], o[0])
                                       : adaptive_avg_pool2d(in[0], IntPair(o[0], o[1]))};
      },
      [=](const TensorList& in, const OpParams& p) {
        const Planes q(in, p, spatial);
        const int64_t NC = q.NC, H = q.H, W = q.W, oh = q.oh, ow = q.ow;
        Vec xv = V(q.x), r;
        auto lo = [](int64_t i, int64_t n, int64_t out) { return (i * n) / out; };
        auto hi = [](int64_t i, int64_t n, int64_t out) { return ((i + 1) * n + out - 1) / out; };
        for (int64_t n = 0; n < NC; ++n)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              double s = 0;
              int64_t cnt = 0;
              for (int64_t h = lo(i, H, oh); h < hi(i, H, oh); ++h)
                for (int64_t w = lo(j, W, ow); w < hi(j, W, ow); ++w, ++cnt)
                  s += xv[(n * H + h) * W + w];
              r.push_back(s / static_cast<double>(cnt));
            }
        return TensorList{like_input(r, q.out_shape(), in[0], spatial)};
      });
}

}  // namespace

void add_resample_rows(std::vector<OpSpec>& t) {
  t.push_back(row(
      "avg_pool2d", 1, "any",
      "[N, C, H, W] or [C, H, W]; kernel 1-3, stride 1-3 (or default = kernel), padding <= "
      "kernel / 2; ceil_mode; count_include_pad; divisor_override or none",
      [](Draw& d) {
        const int64_t kh = d.integer(1, 3), kw = d.integer(1, 3);
        const int64_t ph = d.integer(0, kh / 2), pw = d.integer(0, kw / 2);
        const bool default_stride = d.integer(0, 3) == 0;
        const int64_t sh_ = default_stride ? kh : d.integer(1, 3),
                      sw = default_stride ? kw : d.integer(1, 3);
        Shape s = {d.integer(1, 2), d.integer(1, 2), std::max<int64_t>(1, kh - 2 * ph) + d.integer(0, 3),
                   std::max<int64_t>(1, kw - 2 * pw) + d.integer(0, 3)};
        if (d.integer(0, 3) == 0) s.erase(s.begin());
        const bool ceil_mode = d.boolean(), include_pad = d.boolean();
        const int64_t divisor = d.integer(0, 3) == 0 ? d.choose(std::vector<int64_t>{-2, 3, 5}) : 0;
        OpParams p;
        p.set("kernel_size", {kh, kw}).set("padding", {ph, pw});
        if (!default_stride) p.set("stride", {sh_, sw});
        p.set("ceil_mode", ceil_mode).set("count_include_pad", include_pad).set("divisor", divisor);
        Tensor x = d.values(s, Domain::any());
        return make({x}, p,
                    "avg_pool2d(x " + sh(x) + ", kernel [" + std::to_string(kh) + ", " +
                        std::to_string(kw) + "], stride [" + std::to_string(sh_) + ", " +
                        std::to_string(sw) + "], padding [" + std::to_string(ph) + ", " +
                        std::to_string(pw) + "]" + (ceil_mode ? ", ceil_mode" : "") +
                        (include_pad ? ", count_include_pad" : "") +
                        (divisor ? ", divisor_override=" + std::to_string(divisor) : "") + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        const Dims &k = p.dims("kernel_size"), &q = p.dims("padding");
        std::optional<IntPair> stride;
        if (p.has("stride")) stride = IntPair(p.dims("stride")[0], p.dims("stride")[1]);
        std::optional<int64_t> divisor;
        if (p.integer("divisor") != 0) divisor = p.integer("divisor");
        return TensorList{avg_pool2d(in[0], IntPair(k[0], k[1]), stride, IntPair(q[0], q[1]),
                                     p.flag("ceil_mode"), p.flag("count_include_pad"), divisor)};
      },
      [](const TensorList& in, const OpParams& p) {
        Tensor x = with_batch(in[0], 2);
        const Dims &k = p.dims("kernel_size"), &q = p.dims("padding");
        const Dims s = p.has("stride") ? p.dims("stride") : k;
        const bool ceil_mode = p.flag("ceil_mode"), include_pad = p.flag("count_include_pad");
        const int64_t divisor = p.integer("divisor");
        const int64_t NC = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
        const int64_t oh = pool_out(H, k[0], s[0], q[0], ceil_mode),
                      ow = pool_out(W, k[1], s[1], q[1], ceil_mode);
        Vec xv = V(x), r;
        for (int64_t n = 0; n < NC; ++n)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {  // PyTorch's avg_pool2d_out_frame
              int64_t hs = i * s[0] - q[0], ws = j * s[1] - q[1];
              int64_t he = std::min(hs + k[0], H + q[0]), we = std::min(ws + k[1], W + q[1]);
              const int64_t pool = (he - hs) * (we - ws);
              hs = std::max<int64_t>(hs, 0), ws = std::max<int64_t>(ws, 0);
              he = std::min(he, H), we = std::min(we, W);
              double sum = 0;
              for (int64_t h = hs; h < he; ++h)
                for (int64_t w = ws; w < we; ++w) sum += xv[(n * H + h) * W + w];
              const int64_t div = divisor ? divisor : include_pad ? pool : (he - hs) * (we - ws);
              r.push_back(sum / static_cast<double>(div));
            }
        return TensorList{like_input(r, {x.size(0), x.size(1), oh, ow}, in[0], 2)};
      }));
  t.push_back(adaptive_row("adaptive_avg_pool2d", 2));
  t.push_back(adaptive_row("adaptive_avg_pool1d", 1));
  t.push_back(upsample_row("upsample_nearest2d", 2, false));
  t.push_back(upsample_row("upsample_nearest1d", 1, false));
  t.push_back(upsample_row("upsample_bilinear2d", 2, true));
  t.push_back(upsample_row("upsample_linear1d", 1, true));
  t.push_back(row(
      "group_norm", 3, "input: any, distinct",
      "[N, C, *] of rank 2-4; num_groups dividing C; weight/bias [C] or none",
      [](Draw& d) {
        const int64_t G = d.integer(1, 3), per = d.integer(1, 2);
        Shape s = {d.integer(1, 2), G * per};
        const int64_t extra = d.integer(0, 2);
        for (int64_t k = 0; k < extra; ++k) s.push_back(d.integer(1, 3));
        if (numel_of(s) / (s[0] * G) < 2) s.push_back(2);  // >= 2 values per group
        Tensor x = d.values(s, Domain::any().distinct_values(0.05));
        const OpParams p = OpParams().set("num_groups", G);
        const std::string text = "group_norm(x " + sh(x) + ", " + std::to_string(G);
        if (d.boolean()) return make({x}, p, text + ")");
        Tensor w = d.values({s[1]}, Domain::any()), b = d.values({s[1]}, Domain::any());
        return make({x, w, b}, p, text + ", weight, bias)");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{group_norm(in[0], p.integer("num_groups"), in.size() > 1 ? in[1] : Tensor(),
                                     in.size() > 1 ? in[2] : Tensor())};
      },
      [](const TensorList& in, const OpParams& p) {
        const Tensor& x = in[0];
        const int64_t N = x.size(0), C = x.size(1), G = p.integer("num_groups");
        const int64_t inner = x.numel() / (N * C), per = C / G * inner;
        Vec xv = V(x), r(xv.size());
        Vec wv = in.size() > 1 ? V(in[1]) : Vec(static_cast<size_t>(C), 1.0);
        Vec bv = in.size() > 1 ? V(in[2]) : Vec(static_cast<size_t>(C), 0.0);
        for (int64_t g = 0; g < N * G; ++g) {
          const int64_t base = g * per;
          double m = 0, q = 0;
          for (int64_t i = 0; i < per; ++i) m += xv[base + i];
          m /= static_cast<double>(per);
          for (int64_t i = 0; i < per; ++i) q += (xv[base + i] - m) * (xv[base + i] - m);
          q /= static_cast<double>(per);
          for (int64_t i = 0; i < per; ++i) {
            const int64_t c = (g % G) * (C / G) + i / inner;
            r[base + i] = (xv[base + i] - m) / std::sqrt(q + 1e-5) * wv[c] + bv[c];
          }
        }
        return TensorList{T(r, x.sizes())};
      }));
}

}  // namespace gradlab::testing::table
