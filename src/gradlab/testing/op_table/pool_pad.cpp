// Op-table rows of ops/pool_pad.cpp: max_pool1d, avg_pool1d, adaptive_max_pool1d / 2d,
// instance_norm, pixel_shuffle, pixel_unshuffle, reflection_pad1d / 2d, replication_pad1d / 2d. References are
// loops over [P, L] or [P, H, W] planes in double, one output element at a time (PyTorch's CPU
// loops).

#include <algorithm>
#include <cmath>

#include "gradlab/testing/op_table/support.hpp"

namespace gradlab::testing::table {

namespace {

std::optional<int64_t> opt_stride(const OpParams& p) {
  if (!p.has("stride")) return std::nullopt;
  return p.integer("stride");
}

// x as its planes: the product of the dims before the last `spatial` ones
int64_t planes(const Tensor& x, int64_t spatial) {
  int64_t n = 1;
  for (int64_t d = 0; d < x.dim() - spatial; ++d) n *= x.size(d);
  return n;
}

// [N?, C, L] of a 1-D pool: batched or not
Shape seq_shape(Draw& d, int64_t L) {
  Shape s = {d.integer(1, 2), d.integer(1, 2), L};
  if (d.integer(0, 3) == 0) s.erase(s.begin());
  return s;
}

std::string stride_text(const OpParams& p) {
  return p.has("stride") ? std::to_string(p.integer("stride")) : std::string("default");
}

// source index along a dim of n for output j of a pad with `left`: reflect or replicate
int64_t pad_src(int64_t j, int64_t left, int64_t n, bool reflect) {
  int64_t s = j - left;
  if (!reflect) return std::clamp<int64_t>(s, 0, n - 1);
  if (s < 0) s = -s;
  if (s >= n) s = 2 * (n - 1) - s;
  return s;
}

// a pad row: reflect or replicate over the last `spatial` dims of a (spatial + 1 or + 2)-D input
OpSpec pad_row(const std::string& name, bool reflect, int64_t spatial,
               Tensor (*op)(const Tensor&, const std::vector<int64_t>&, Site)) {
  return row(
      name, 1, "any",
      std::to_string(spatial + 1) + "-D or " + std::to_string(spatial + 2) +
          "-D; padding per side in [-1, size - 1] (reflect) or [-1, 3] (replicate)",
      [=](Draw& d) {
        Shape s = {d.integer(1, 2), d.integer(1, 2)};
        if (d.boolean()) s.erase(s.begin());
        std::vector<int64_t> pad;
        for (int64_t i = 0; i < spatial; ++i) s.push_back(d.integer(2, 4));
        for (int64_t i = 0; i < spatial; ++i) {
          const int64_t n = s[s.size() - 1 - static_cast<size_t>(i)];
          const int64_t lo = n >= 3 ? -1 : 0;  // a crop of 1 per side still leaves 1
          pad.push_back(d.integer(lo, reflect ? n - 1 : 3));
          pad.push_back(d.integer(lo, reflect ? n - 1 : 3));
        }
        Tensor x = d.values(s, Domain::any());
        return make({x}, OpParams().set("padding", pad), name + "(x " + sh(x) + ", " + shape_str(Shape(pad)) + ")");
      },
      [op](const TensorList& in, const OpParams& p) { return TensorList{op(in[0], p.dims("padding").vec(), {})}; },
      [=](const TensorList& in, const OpParams& p) {
        const Dims& pad = p.dims("padding");
        const Tensor& x = in[0];
        const int64_t W = x.size(-1), H = spatial == 2 ? x.size(-2) : 1, P = planes(x, spatial);
        const int64_t l = pad[0], oW = W + pad[0] + pad[1];
        const int64_t t = spatial == 2 ? pad[2] : 0, oH = spatial == 2 ? H + pad[2] + pad[3] : 1;
        Vec xv = V(x), r;
        for (int64_t n = 0; n < P; ++n)
          for (int64_t i = 0; i < oH; ++i)
            for (int64_t j = 0; j < oW; ++j)
              r.push_back(xv[(n * H + pad_src(i, t, H, reflect)) * W + pad_src(j, l, W, reflect)]);
        Shape out = x.sizes();
        out.back() = oW;
        if (spatial == 2) out[out.size() - 2] = oH;
        return TensorList{T(r, out)};
      });
}

}  // namespace

void add_pool_pad_rows(std::vector<OpSpec>& t) {
  t.push_back(row(
      "max_pool1d", 1, "any, distinct (no ties inside a window)",
      "[N, C, L] or [C, L]; kernel 1-3, stride (default = kernel) 1-3, padding <= kernel / 2, dilation 1-2",
      [](Draw& d) {
        const int64_t k = d.integer(1, 3), dil = d.integer(1, 2);
        const int64_t pad = dil > 1 ? 0 : d.integer(0, k / 2);  // no window wholly in the padding
        OpParams p;
        p.set("kernel_size", k).set("padding", pad).set("dilation", dil);
        if (d.boolean()) p.set("stride", d.integer(1, 3));
        const int64_t L = std::max<int64_t>(1, dil * (k - 1) + 1 - 2 * pad) + d.integer(0, 3);
        Tensor x = d.values(seq_shape(d, L), Domain::any().distinct_values());
        return make({x}, p, "max_pool1d(x " + sh(x) + ", kernel " + std::to_string(k) + ", stride " + stride_text(p) +
                                ", padding " + std::to_string(pad) + ", dilation " + std::to_string(dil) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{max_pool1d(in[0], p.integer("kernel_size"), opt_stride(p), p.integer("padding"),
                                     p.integer("dilation"))};
      },
      [](const TensorList& in, const OpParams& p) {
        const int64_t k = p.integer("kernel_size"), s = opt_stride(p).value_or(k), pad = p.integer("padding"),
                      dil = p.integer("dilation");
        const int64_t L = in[0].size(-1), P = planes(in[0], 1), oL = (L + 2 * pad - dil * (k - 1) - 1) / s + 1;
        Vec xv = V(in[0]), r;
        for (int64_t n = 0; n < P; ++n)
          for (int64_t i = 0; i < oL; ++i) {
            double m = -INFINITY;
            for (int64_t a = 0; a < k; ++a) {
              const int64_t z = i * s - pad + a * dil;
              if (z >= 0 && z < L) m = std::max(m, xv[n * L + z]);
            }
            r.push_back(m);
          }
        Shape out = in[0].sizes();
        out.back() = oL;
        return TensorList{T(r, out)};
      }));
  t.push_back(row(
      "avg_pool1d", 1, "any",
      "[N, C, L] or [C, L]; kernel 1-3, stride (default = kernel) 1-3, padding <= kernel / 2; ceil_mode; "
      "count_include_pad",
      [](Draw& d) {
        const int64_t k = d.integer(1, 3), pad = d.integer(0, k / 2);
        OpParams p;
        p.set("kernel_size", k).set("padding", pad).set("ceil_mode", d.boolean()).set("count_include_pad", d.boolean());
        if (d.boolean()) p.set("stride", d.integer(1, 3));
        const int64_t L = std::max<int64_t>(1, k - 2 * pad) + d.integer(0, 3);
        Tensor x = d.values(seq_shape(d, L), Domain::any());
        return make({x}, p, "avg_pool1d(x " + sh(x) + ", kernel " + std::to_string(k) + ", stride " + stride_text(p) +
                                ", " + p.str() + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{avg_pool1d(in[0], p.integer("kernel_size"), opt_stride(p), p.integer("padding"),
                                     p.flag("ceil_mode"), p.flag("count_include_pad"))};
      },
      [](const TensorList& in, const OpParams& p) {
        // PyTorch's avg_pool: window [i s - p, min(i s - p + k, L + p)), summed over [0, L)
        const int64_t k = p.integer("kernel_size"), s = opt_stride(p).value_or(k), pad = p.integer("padding");
        const bool ceil_mode = p.flag("ceil_mode");
        const int64_t L = in[0].size(-1), P = planes(in[0], 1);
        int64_t oL = (L + 2 * pad - k + (ceil_mode ? s - 1 : 0)) / s + 1;
        if (ceil_mode && (oL - 1) * s >= L + pad) --oL;
        Vec xv = V(in[0]), r;
        for (int64_t n = 0; n < P; ++n)
          for (int64_t i = 0; i < oL; ++i) {
            const int64_t lo = i * s - pad, hi = std::min(lo + k, L + pad);
            const int64_t a = std::max<int64_t>(lo, 0), b = std::min(hi, L);
            double acc = 0;
            for (int64_t z = a; z < b; ++z) acc += xv[n * L + z];
            r.push_back(acc / static_cast<double>(p.flag("count_include_pad") ? hi - lo : b - a));
          }
        Shape out = in[0].sizes();
        out.back() = oL;
        return TensorList{T(r, out)};
      }));
  // adaptive max pooling: output (i, j) is the max over rows [floor(i H / oh), ceil((i + 1) H / oh))
  // and the same cols; the rows check the values (and so the gradient), not the indices
  for (int64_t spatial : {1, 2}) {
    const std::string name = spatial == 1 ? "adaptive_max_pool1d" : "adaptive_max_pool2d";
    t.push_back(row(
        name, 1, "any, distinct (no ties inside a window)",
        spatial == 1 ? "[N, C, L] or [C, L]; output_size 1-5" : "[N, C, H, W] or [C, H, W]; output_size 1-5 per dim",
        [=](Draw& d) {
          Shape s = {d.integer(1, 2), d.integer(1, 2)};
          if (d.boolean()) s.erase(s.begin());
          std::vector<int64_t> o;
          for (int64_t i = 0; i < spatial; ++i) s.push_back(d.integer(1, 6)), o.push_back(d.integer(1, 5));
          Tensor x = d.values(s, Domain::any().distinct_values());
          return make({x}, OpParams().set("output_size", o), name + "(x " + sh(x) + ", " + shape_str(Shape(o)) + ")");
        },
        [=](const TensorList& in, const OpParams& p) {
          const Dims& o = p.dims("output_size");
          return TensorList{spatial == 1 ? std::get<0>(adaptive_max_pool1d(in[0], o[0]))
                                         : std::get<0>(adaptive_max_pool2d(in[0], IntPair(o[0], o[1])))};
        },
        [=](const TensorList& in, const OpParams& p) {
          const Dims& o = p.dims("output_size");
          const int64_t W = in[0].size(-1), H = spatial == 2 ? in[0].size(-2) : 1, P = planes(in[0], spatial);
          const int64_t ow = o.back(), oh = spatial == 2 ? o[0] : 1;
          Vec xv = V(in[0]), r;
          for (int64_t n = 0; n < P; ++n)
            for (int64_t i = 0; i < oh; ++i)
              for (int64_t j = 0; j < ow; ++j) {
                double m = -INFINITY;
                for (int64_t y = i * H / oh; y < ((i + 1) * H + oh - 1) / oh; ++y)
                  for (int64_t z = j * W / ow; z < ((j + 1) * W + ow - 1) / ow; ++z)
                    m = std::max(m, xv[(n * H + y) * W + z]);
                r.push_back(m);
              }
          Shape out = in[0].sizes();
          out.back() = ow;
          if (spatial == 2) out[out.size() - 2] = oh;
          return TensorList{T(r, out)};
        }));
  }
  // instance_norm: each (n, c) plane normalized over its own positions, then weight[c] x̂ + bias[c]
  t.push_back(row(
      "instance_norm", 3, "input: any, distinct", "[N, C, *] of rank 3-4 with >= 2 positions; weight/bias [C] or none",
      [](Draw& d) {
        Shape s = {d.integer(1, 2), d.integer(1, 3), d.integer(2, 4)};
        if (d.boolean()) s.push_back(d.integer(1, 3));
        Tensor x = d.values(s, Domain::any().distinct_values(0.05));
        const OpParams p = OpParams().set("eps", d.choose(std::vector<double>{1e-5, 1e-3}));
        if (d.boolean()) return make({x}, p, "instance_norm(x " + sh(x) + ", " + p.str() + ")");
        Tensor w = d.values({s[1]}, Domain::any()), b = d.values({s[1]}, Domain::any());
        return make({x, w, b}, p, "instance_norm(x " + sh(x) + ", weight, bias, " + p.str() + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        const bool affine = in.size() > 1;
        return TensorList{instance_norm(in[0], affine ? in[1] : Tensor(), affine ? in[2] : Tensor(), Tensor(),
                                        Tensor(), true, 0.1, p.real("eps"), false)};
      },
      [](const TensorList& in, const OpParams& p) {
        const Tensor& x = in[0];
        const int64_t C = x.size(1), P = x.size(0) * C, inner = x.numel() / P;
        Vec xv = V(x), r(xv.size());
        Vec wv = in.size() > 1 ? V(in[1]) : Vec(static_cast<size_t>(C), 1.0);
        Vec bv = in.size() > 1 ? V(in[2]) : Vec(static_cast<size_t>(C), 0.0);
        for (int64_t g = 0; g < P; ++g) {
          double m = 0, q = 0;
          for (int64_t i = 0; i < inner; ++i) m += xv[g * inner + i];
          m /= static_cast<double>(inner);
          for (int64_t i = 0; i < inner; ++i) q += (xv[g * inner + i] - m) * (xv[g * inner + i] - m);
          q /= static_cast<double>(inner);
          for (int64_t i = 0; i < inner; ++i)
            r[g * inner + i] = (xv[g * inner + i] - m) / std::sqrt(q + p.real("eps")) * wv[g % C] + bv[g % C];
        }
        return TensorList{T(r, x.sizes())};
      }));
  // pixel_shuffle: y[.., c, h r + i, w r + j] = x[.., c r² + i r + j, h, w]; rank 3-5
  for (bool shuffle : {true, false}) {
    const std::string name = shuffle ? "pixel_shuffle" : "pixel_unshuffle";
    t.push_back(row(
        name, 1, "any", "rank 3-5 [*, C, H, W] with C (shuffle) or H, W (unshuffle) fitting factor 1-3",
        [=](Draw& d) {
          const int64_t r = d.integer(1, 3);
          Shape s;
          for (int64_t i = d.integer(0, 2); i > 0; --i) s.push_back(d.integer(1, 2));
          const int64_t c = d.integer(1, 2), h = d.integer(1, 2), w = d.integer(1, 2);
          if (shuffle)
            s.insert(s.end(), {c * r * r, h, w});
          else
            s.insert(s.end(), {c, h * r, w * r});
          Tensor x = d.values(s, Domain::any());
          return make({x}, OpParams().set("factor", r), name + "(x " + sh(x) + ", " + std::to_string(r) + ")");
        },
        [=](const TensorList& in, const OpParams& p) {
          return TensorList{shuffle ? pixel_shuffle(in[0], p.integer("factor"))
                                    : pixel_unshuffle(in[0], p.integer("factor"))};
        },
        [=](const TensorList& in, const OpParams& p) {
          const int64_t r = p.integer("factor"), P = planes(in[0], 3);
          // the shuffled side [P, C, H r, W r] and the channel side [P, C r², H, W]
          int64_t C, H, W;
          if (shuffle)
            C = in[0].size(-3) / (r * r), H = in[0].size(-2), W = in[0].size(-1);
          else
            C = in[0].size(-3), H = in[0].size(-2) / r, W = in[0].size(-1) / r;
          Vec xv = V(in[0]), out(xv.size());
          for (int64_t n = 0; n < P; ++n)
            for (int64_t c = 0; c < C; ++c)
              for (int64_t i = 0; i < r; ++i)
                for (int64_t j = 0; j < r; ++j)
                  for (int64_t h = 0; h < H; ++h)
                    for (int64_t w = 0; w < W; ++w) {
                      const int64_t chan = (((n * C + c) * r + i) * r + j) * H * W + h * W + w;
                      const int64_t spat = ((n * C + c) * H * r + h * r + i) * W * r + w * r + j;
                      if (shuffle)
                        out[static_cast<size_t>(spat)] = xv[static_cast<size_t>(chan)];
                      else
                        out[static_cast<size_t>(chan)] = xv[static_cast<size_t>(spat)];
                    }
          Shape s = in[0].sizes();
          const size_t k = s.size();
          if (shuffle)
            s[k - 3] = C, s[k - 2] = H * r, s[k - 1] = W * r;
          else
            s[k - 3] = C * r * r, s[k - 2] = H, s[k - 1] = W;
          return TensorList{T(out, s)};
        }));
  }
  t.push_back(pad_row("reflection_pad1d", true, 1, reflection_pad1d));
  t.push_back(pad_row("reflection_pad2d", true, 2, reflection_pad2d));
  t.push_back(pad_row("replication_pad1d", false, 1, replication_pad1d));
  t.push_back(pad_row("replication_pad2d", false, 2, replication_pad2d));
}

}  // namespace gradlab::testing::table
