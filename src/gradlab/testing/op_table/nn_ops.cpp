// Op-table rows of ops/nn_ops.cpp: linear, threshold_backward, unfold, fold, conv2d, conv1d,
// conv_transpose2d, max_pool2d, dropout, feature_dropout, batch_norm, layer_norm.

#include "gradlab/testing/op_table/support.hpp"

namespace gradlab::testing::table {

namespace {

// A 2-D window: kernel_size, dilation, padding (<= kernel / 2), stride — each [h, w] — as the
// parameters of unfold, fold, conv2d and max_pool2d. max_pool2d may leave out "stride" (then it
// is the kernel size).
struct Win {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
  int64_t out(int64_t n, int64_t k, int64_t dd, int64_t pp, int64_t ss) const {
    return (n + 2 * pp - dd * (k - 1) - 1) / ss + 1;
  }
  int64_t oh(int64_t h) const { return out(h, kh, dh, ph, sh); }
  int64_t ow(int64_t w) const { return out(w, kw, dw, pw, sw); }
  IntPair kernel() const { return {kh, kw}; }
  IntPair dilation() const { return {dh, dw}; }
  IntPair padding() const { return {ph, pw}; }
  IntPair stride() const { return {sh, sw}; }
  OpParams& into(OpParams& p, bool with_stride = true) const {
    p.set("kernel_size", {kh, kw}).set("dilation", {dh, dw}).set("padding", {ph, pw});
    if (with_stride) p.set("stride", {sh, sw});
    return p;
  }
  static Win of(const OpParams& p) {
    const Dims &k = p.dims("kernel_size"), &d = p.dims("dilation"), &q = p.dims("padding");
    const Dims s = p.has("stride") ? p.dims("stride") : k;
    return {k[0], k[1], d[0], d[1], q[0], q[1], s[0], s[1]};
  }
  std::string text() const {
    return "kernel [" + std::to_string(kh) + ", " + std::to_string(kw) + "], dilation [" +
           std::to_string(dh) + ", " + std::to_string(dw) + "], padding [" + std::to_string(ph) +
           ", " + std::to_string(pw) + "], stride [" + std::to_string(sh) + ", " +
           std::to_string(sw) + "]";
  }
};

Win draw_win(Draw& d, bool pool) {
  Win w{};
  w.kh = d.integer(1, 3), w.kw = d.integer(1, 3);
  w.dh = d.integer(1, 2), w.dw = d.integer(1, 2);
  w.ph = d.integer(0, w.kh / 2), w.pw = d.integer(0, w.kw / 2);
  w.sh = d.integer(1, pool ? 3 : 2), w.sw = d.integer(1, pool ? 3 : 2);
  return w;
}

// H (or W) so that the window fits at least once: n + 2p >= d (k - 1) + 1.
int64_t fit(Draw& d, int64_t k, int64_t dd, int64_t pp) {
  return std::max<int64_t>(1, dd * (k - 1) + 1 - 2 * pp) + d.integer(0, 3);
}

// An unbatched [C, H, W] input as [1, C, H, W].
Tensor batched(const Tensor& x) {
  return x.dim() == 3 ? T(V(x), {1, x.size(0), x.size(1), x.size(2)}) : x;
}

}  // namespace

void add_nn_rows(std::vector<OpSpec>& t) {
  const Domain any = Domain::any();
  t.push_back(row(
      "linear", 3, "any", "x [..., in] (rank 1-3); weight [out, in]; bias [out] or none",
      [any](Draw& d) {
        Shape xs = d.shape(1, 3, 4);
        const int64_t out = d.integer(1, 4);
        Tensor x = d.values(xs, any), w = d.values({out, xs.back()}, any);
        if (d.integer(0, 1) == 1)
          return make({x, w}, {}, "linear(x " + sh(x) + ", weight " + sh(w) + ")");
        Tensor b = d.values({out}, any);
        return make({x, w, b}, {},
                    "linear(x " + sh(x) + ", weight " + sh(w) + ", bias " + sh(b) + ")");
      },
      [](const TensorList& in, const OpParams&) {
        return TensorList{linear(in[0], in[1], in.size() > 2 ? in[2] : Tensor())};
      },
      [](const TensorList& in, const OpParams&) {
        Tensor y = matmul_ref(in[0], permute_ref(in[1], {1, 0}));
        if (in.size() > 2) y = map2(y, in[2], [](double a, double b) { return a + b; });
        return TensorList{y};
      }));

  t.push_back(row(
      "threshold_backward", 2, "grad: any; y: away from the threshold",
      "grad and y of one shape; threshold 0 or 0.5",
      [any](Draw& d) {
        const double threshold = d.choose(std::vector<double>{0.0, 0.5});
        Tensor g = d.values(d.shape(), any);
        Tensor y = d.values(g.sizes(), Domain::away_from({threshold}));
        return make({g, y}, OpParams().set("threshold", threshold),
                    "threshold_backward(grad " + sh(g) + ", y, " + std::to_string(threshold) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{threshold_backward(in[0], in[1], p.real("threshold"))};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{map2(in[0], in[1], [t = p.real("threshold")](double g, double y) {
          return y > t ? g : 0.0;
        })};
      }));
  t.back().notes = "y is a mask: its gradient is zero (checked, away from the threshold)";

  t.push_back(row(
      "unfold", 1, "any", "[N, C, H, W] or [C, H, W]; a window that fits",
      [any](Draw& d) {
        Win w = draw_win(d, false);
        Shape s = {d.integer(1, 2), d.integer(1, 3), fit(d, w.kh, w.dh, w.ph),
                   fit(d, w.kw, w.dw, w.pw)};
        if (d.integer(0, 3) == 0) s.erase(s.begin());  // unbatched
        OpParams p;
        Tensor x = d.values(s, any);
        return make({x}, w.into(p), "unfold(x " + sh(x) + ", " + w.text() + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        const Win w = Win::of(p);
        return TensorList{unfold(in[0], w.kernel(), w.dilation(), w.padding(), w.stride())};
      }));
  t.push_back(row(
      "fold", 1, "any", "[N, C*kh*kw, L] or 2-D; output_size and a window that fits it",
      [any](Draw& d) {
        Win w = draw_win(d, false);
        const int64_t H = fit(d, w.kh, w.dh, w.ph), W = fit(d, w.kw, w.dw, w.pw),
                      C = d.integer(1, 2);
        const bool unbatched = d.integer(0, 3) == 0;
        OpParams p;
        w.into(p).set("output_size", {H, W});
        Shape s = {d.integer(1, 2), C * w.kh * w.kw, w.oh(H) * w.ow(W)};
        if (unbatched) s.erase(s.begin());
        Tensor x = d.values(s, any);
        return make(
            {x}, p,
            "fold(x " + sh(x) + ", output_size " + shape_str({H, W}) + ", " + w.text() + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        const Win w = Win::of(p);
        const Shape& hw = p.shape("output_size");
        return TensorList{
            fold(in[0], {hw[0], hw[1]}, w.kernel(), w.dilation(), w.padding(), w.stride())};
      }));
  // conv2d: groups 1-3 with 1-2 channels and filters per group (Cg = 1 with groups > 1 is
  // depthwise: groups == C).
  t.push_back(row(
      "conv2d", 3, "any",
      "input [N, C, H, W] or [C, H, W]; weight [O, C/groups, kh, kw]; bias [O] or none; stride, "
      "padding, dilation, groups 1-3 (depthwise when C == groups)",
      [any](Draw& d) {
        Win w = draw_win(d, false);
        const int64_t g = d.integer(1, 3), C = g * d.integer(1, 2), O = g * d.integer(1, 2);
        Shape s = {d.integer(1, 2), C, fit(d, w.kh, w.dh, w.ph), fit(d, w.kw, w.dw, w.pw)};
        const int64_t form = d.integer(0, 3);  // bit 0: no bias, bit 1: unbatched
        if (form & 2) s.erase(s.begin());
        OpParams p;
        w.into(p).set("groups", g);
        Tensor x = d.values(s, any), wt = d.values({O, C / g, w.kh, w.kw}, any);
        const std::string text = w.text() + ", groups " + std::to_string(g);
        if (form & 1)
          return make({x, wt}, p, "conv2d(x " + sh(x) + ", weight " + sh(wt) + ", " + text + ")");
        Tensor b = d.values({O}, any);
        return make({x, wt, b}, p,
                    "conv2d(x " + sh(x) + ", weight " + sh(wt) + ", bias, " + text + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        const Win w = Win::of(p);
        return TensorList{conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), w.stride(),
                                 w.padding(), w.dilation(), p.integer("groups"))};
      },
      [](const TensorList& in, const OpParams& p) {
        // out[n, o, i, j] = b[o] + Σ_c,a,b x[n, g Cg + c, i*s - p + a*d, j*s - p + b*d] w[o, c, a, b]
        // over c < Cg, with g = o / Og the filter's group
        const Win w = Win::of(p);
        Tensor x = batched(in[0]);
        const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), O = in[1].size(0);
        const int64_t G = p.integer("groups"), Cg = C / G, Og = O / G;
        const int64_t oh = w.oh(H), ow = w.ow(W);
        Vec xv = V(x), wv = V(in[1]),
            bv = in.size() > 2 ? V(in[2]) : Vec(static_cast<size_t>(O), 0.0), r;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t o = 0; o < O; ++o)
            for (int64_t i = 0; i < oh; ++i)
              for (int64_t j = 0; j < ow; ++j) {
                double acc = bv[o];
                for (int64_t c = 0; c < Cg; ++c)
                  for (int64_t a = 0; a < w.kh; ++a)
                    for (int64_t b = 0; b < w.kw; ++b) {
                      const int64_t y = i * w.sh - w.ph + a * w.dh, z = j * w.sw - w.pw + b * w.dw;
                      if (y < 0 || y >= H || z < 0 || z >= W) continue;
                      acc += xv[((n * C + (o / Og) * Cg + c) * H + y) * W + z] *
                             wv[((o * Cg + c) * w.kh + a) * w.kw + b];
                    }
                r.push_back(acc);
              }
        Shape out = {N, O, oh, ow};
        if (in[0].dim() == 3) out.erase(out.begin());
        return TensorList{T(r, out)};
      }));
  // conv1d: conv2d over [N, C, 1, L]; groups 1-2, the 1-D window drawn as the width of a Win.
  t.push_back(row(
      "conv1d", 3, "any",
      "input [N, C, L] or [C, L]; weight [O, C/groups, k]; bias [O] or none; stride, padding, "
      "dilation, groups 1-2",
      [any](Draw& d) {
        const Win w = draw_win(d, false);
        const int64_t g = d.integer(1, 2), C = g * d.integer(1, 2), O = g * d.integer(1, 2);
        Shape s = {d.integer(1, 2), C, fit(d, w.kw, w.dw, w.pw)};
        const int64_t form = d.integer(0, 3);  // bit 0: no bias, bit 1: unbatched
        if (form & 2) s.erase(s.begin());
        OpParams p;
        p.set("kernel", w.kw).set("stride", w.sw).set("padding", w.pw).set("dilation", w.dw)
            .set("groups", g);
        Tensor x = d.values(s, any), wt = d.values({O, C / g, w.kw}, any);
        const std::string text = "stride " + std::to_string(w.sw) + ", padding " +
                                 std::to_string(w.pw) + ", dilation " + std::to_string(w.dw) +
                                 ", groups " + std::to_string(g);
        if (form & 1)
          return make({x, wt}, p, "conv1d(x " + sh(x) + ", weight " + sh(wt) + ", " + text + ")");
        Tensor b = d.values({O}, any);
        return make({x, wt, b}, p,
                    "conv1d(x " + sh(x) + ", weight " + sh(wt) + ", bias, " + text + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{conv1d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(),
                                 p.integer("stride"), p.integer("padding"), p.integer("dilation"),
                                 p.integer("groups"))};
      },
      [](const TensorList& in, const OpParams& p) {
        // out[n, o, i] = b[o] + Σ_{c < Cg, a} x[n, g Cg + c, i*s - p + a*d] w[o, c, a], g = o / Og
        const int64_t s = p.integer("stride"), pd = p.integer("padding"),
                      dl = p.integer("dilation"), G = p.integer("groups");
        const bool unbatched = in[0].dim() == 2;
        const Tensor& x = in[0];
        const int64_t N = unbatched ? 1 : x.size(0), C = x.size(-2), L = x.size(-1),
                      O = in[1].size(0), k = in[1].size(2), Cg = C / G, Og = O / G;
        const int64_t ol = (L + 2 * pd - dl * (k - 1) - 1) / s + 1;
        Vec xv = V(x), wv = V(in[1]),
            bv = in.size() > 2 ? V(in[2]) : Vec(static_cast<size_t>(O), 0.0), r;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t o = 0; o < O; ++o)
            for (int64_t i = 0; i < ol; ++i) {
              double acc = bv[o];
              for (int64_t c = 0; c < Cg; ++c)
                for (int64_t a = 0; a < k; ++a) {
                  const int64_t z = i * s - pd + a * dl;
                  if (z < 0 || z >= L) continue;
                  acc += xv[(n * C + (o / Og) * Cg + c) * L + z] * wv[(o * Cg + c) * k + a];
                }
              r.push_back(acc);
            }
        Shape out = {N, O, ol};
        if (unbatched) out.erase(out.begin());
        return TensorList{T(r, out)};
      }));
  // conv_transpose2d: weight [C, O/g, kh, kw]; output_padding below stride or dilation (both
  // of the op's fold paths: output_padding < stride, and >= stride when the dilation allows).
  t.push_back(row(
      "conv_transpose2d", 3, "any",
      "input [N, C, H, W] or [C, H, W]; weight [C, O/groups, kh, kw]; bias [O] or none; stride, "
      "padding, output_padding, groups 1-2, dilation",
      [any](Draw& d) {
        Win w = draw_win(d, false);
        const int64_t g = d.integer(1, 2), C = g * d.integer(1, 2), Og = d.integer(1, 2);
        const int64_t H = d.integer(1, 3), W = d.integer(1, 3);
        const int64_t oph = d.integer(0, std::max(w.sh, w.dh) - 1),
                      opw = d.integer(0, std::max(w.sw, w.dw) - 1);
        // The output must not be empty: (H - 1) s - 2 p + d (k - 1) + op + 1 > 0.
        if ((H - 1) * w.sh - 2 * w.ph + w.dh * (w.kh - 1) + oph + 1 <= 0) w.ph = 0;
        if ((W - 1) * w.sw - 2 * w.pw + w.dw * (w.kw - 1) + opw + 1 <= 0) w.pw = 0;
        Shape s = {d.integer(1, 2), C, H, W};
        const int64_t form = d.integer(0, 3);  // bit 0: no bias, bit 1: unbatched
        if (form & 2) s.erase(s.begin());
        OpParams p;
        w.into(p).set("output_padding", {oph, opw}).set("groups", g);
        Tensor x = d.values(s, any), wt = d.values({C, Og, w.kh, w.kw}, any);
        const std::string text = w.text() + ", output_padding [" + std::to_string(oph) + ", " +
                                 std::to_string(opw) + "], groups " + std::to_string(g);
        if (form & 1)
          return make({x, wt}, p,
                      "conv_transpose2d(x " + sh(x) + ", weight " + sh(wt) + ", " + text + ")");
        Tensor b = d.values({g * Og}, any);
        return make({x, wt, b}, p,
                    "conv_transpose2d(x " + sh(x) + ", weight " + sh(wt) + ", bias, " + text +
                        ")");
      },
      [](const TensorList& in, const OpParams& p) {
        const Win w = Win::of(p);
        const Dims& op = p.dims("output_padding");
        return TensorList{conv_transpose2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(),
                                           w.stride(), w.padding(), {op[0], op[1]},
                                           p.integer("groups"), w.dilation())};
      },
      [](const TensorList& in, const OpParams& p) {
        // out[n, g*Og + o, y, z] = b + Σ x[n, g*Cg + c, i, j] w[g*Cg + c, o, a, b] over
        // y = i*s - p + a*d, z = j*s - p + b*d (read as a gather: i = (y + p - a*d) / s).
        const Win w = Win::of(p);
        const Dims& op = p.dims("output_padding");
        const int64_t G = p.integer("groups");
        Tensor x = batched(in[0]);
        const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
        const int64_t Og = in[1].size(1), O = G * Og, Cg = C / G;
        const int64_t oh = (H - 1) * w.sh - 2 * w.ph + w.dh * (w.kh - 1) + op[0] + 1,
                      ow = (W - 1) * w.sw - 2 * w.pw + w.dw * (w.kw - 1) + op[1] + 1;
        Vec xv = V(x), wv = V(in[1]),
            bv = in.size() > 2 ? V(in[2]) : Vec(static_cast<size_t>(O), 0.0), r;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t o = 0; o < O; ++o)
            for (int64_t y = 0; y < oh; ++y)
              for (int64_t z = 0; z < ow; ++z) {
                const int64_t grp = o / Og, oo = o % Og;
                double acc = bv[o];
                for (int64_t c = grp * Cg; c < (grp + 1) * Cg; ++c)
                  for (int64_t a = 0; a < w.kh; ++a)
                    for (int64_t b = 0; b < w.kw; ++b) {
                      const int64_t ty = y + w.ph - a * w.dh, tz = z + w.pw - b * w.dw;
                      if (ty < 0 || tz < 0 || ty % w.sh || tz % w.sw) continue;
                      const int64_t i = ty / w.sh, j = tz / w.sw;
                      if (i >= H || j >= W) continue;
                      acc += xv[((n * C + c) * H + i) * W + j] *
                             wv[((c * Og + oo) * w.kh + a) * w.kw + b];
                    }
                r.push_back(acc);
              }
        Shape out = {N, O, oh, ow};
        if (in[0].dim() == 3) out.erase(out.begin());
        return TensorList{T(r, out)};
      }));
  t.push_back(row(
      "max_pool2d", 1, "any, distinct (no ties inside a window)",
      "[N, C, H, W] or [C, H, W]; kernel, stride (default = kernel), padding <= kernel / 2, "
      "dilation",
      [](Draw& d) {
        Win w = draw_win(d, true);
        // NOTE: with dilation > 1 and padding a window can fall entirely in the padding; the
        // kernel then outputs -inf and sends the gradient to element 0 (reported, not covered).
        if (w.dh > 1) w.ph = 0;
        if (w.dw > 1) w.pw = 0;
        const int64_t form = d.integer(0, 3);  // bit 0: default stride, bit 1: unbatched
        if (form & 1) w.sh = w.kh, w.sw = w.kw;
        Shape s = {d.integer(1, 2), d.integer(1, 2), fit(d, w.kh, w.dh, w.ph),
                   fit(d, w.kw, w.dw, w.pw)};
        if (form & 2) s.erase(s.begin());
        OpParams p;
        w.into(p, !(form & 1));
        Tensor x = d.values(s, Domain::any().distinct_values());
        return make({x}, p, "max_pool2d(x " + sh(x) + ", " + w.text() + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        const Win w = Win::of(p);
        std::optional<IntPair> stride;
        if (p.has("stride")) stride = w.stride();
        return TensorList{max_pool2d(in[0], w.kernel(), stride, w.padding(), w.dilation())};
      },
      [](const TensorList& in, const OpParams& p) {
        const Win w = Win::of(p);
        Tensor x = batched(in[0]);
        const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), oh = w.oh(H),
                      ow = w.ow(W);
        Vec xv = V(x), r;
        for (int64_t n = 0; n < N * C; ++n)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              double m = -INFINITY;
              for (int64_t a = 0; a < w.kh; ++a)
                for (int64_t b = 0; b < w.kw; ++b) {
                  const int64_t y = i * w.sh - w.ph + a * w.dh, z = j * w.sw - w.pw + b * w.dw;
                  if (y >= 0 && y < H && z >= 0 && z < W) m = std::max(m, xv[(n * H + y) * W + z]);
                }
              r.push_back(m);
            }
        Shape out = {N, C, oh, ow};
        if (in[0].dim() == 3) out.erase(out.begin());
        return TensorList{T(r, out)};
      }));
  t.push_back(row(
      "dropout", 1, "any",
      "any shape; p in {0, 0.3, 0.5, 1}; train or not; a fixed generator seed per case",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(), any);
        const double q = d.choose(std::vector<double>{0.3, 0.5, 0.0, 1.0});
        const auto seed = static_cast<int64_t>(d.seed() >> 1);
        const bool train = d.integer(0, 4) != 0;
        return make(
            {x}, OpParams().set("p", q).set("seed", seed).set("train", train),
            "dropout(x " + sh(x) + ", p=" + std::to_string(q) + (train ? ", train)" : ", eval)"));
      },
      [](const TensorList& in, const OpParams& p) {
        // The same mask on every call: the op stays a function of x.
        Generator g(static_cast<uint64_t>(p.integer("seed")));
        return TensorList{dropout(in[0], p.real("p"), p.flag("train"), &g)};
      }));
  t.back().notes = "the mask is drawn from a generator reseeded on every call";
  t.push_back(row(
      "feature_dropout", 1, "any",
      "rank 2-5 ([N, C, *]); p in {0, 0.3, 0.5, 1}; train or not; a fixed generator seed per case",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(2, 5, 3), any);
        const double q = d.choose(std::vector<double>{0.3, 0.5, 0.0, 1.0});
        const auto seed = static_cast<int64_t>(d.seed() >> 1);
        const bool train = d.integer(0, 4) != 0;
        return make({x}, OpParams().set("p", q).set("seed", seed).set("train", train),
                    "feature_dropout(x " + sh(x) + ", p=" + std::to_string(q) +
                        (train ? ", train)" : ", eval)"));
      },
      [](const TensorList& in, const OpParams& p) {
        Generator g(static_cast<uint64_t>(p.integer("seed")));
        return TensorList{feature_dropout(in[0], p.real("p"), p.flag("train"), &g)};
      }));
  t.back().notes = "the channel mask is drawn from a generator reseeded on every call";
  // batch_norm(input, running_mean, running_var, weight, bias, training): the running stats are
  // inputs when not "training", weight and bias when "affine".
  t.push_back(row(
      "batch_norm", 5, "input: any, distinct; running_var: positive",
      "[N, C], [N, C, L] or [N, C, H, W]; training (batch stats) or eval (running stats); "
      "weight/bias or none",
      [any](Draw& d) {
        const int64_t form = d.integer(0, 3);
        const bool training = !(form & 1), affine = !(form & 2);
        Shape s = d.shape(2, 4, 3);
        if (training && numel_of(s) / s[1] < 2) s[0] = 2;
        const int64_t C = s[1];
        Tensor x = d.values(s, any.distinct_values(0.05));
        TensorList in{x};
        if (!training)
          in.push_back(d.values({C}, any)), in.push_back(d.values({C}, Domain::positive(0.5, 2.0)));
        if (affine) in.push_back(d.values({C}, any)), in.push_back(d.values({C}, any));
        return make(in, OpParams().set("training", training).set("affine", affine),
                    "batch_norm(x " + sh(x) + (training ? ", training" : ", eval") +
                        (affine ? ", weight, bias)" : ")"));
      },
      [](const TensorList& in, const OpParams& p) {
        const bool training = p.flag("training"), affine = p.flag("affine");
        Tensor rm = training ? Tensor() : in[1], rv = training ? Tensor() : in[2];
        const size_t k = training ? 1 : 3;
        return TensorList{batch_norm(in[0], rm, rv, affine ? in[k] : Tensor(),
                                     affine ? in[k + 1] : Tensor(), training)};
      },
      [](const TensorList& in, const OpParams& p) {
        const bool training = p.flag("training"), affine = p.flag("affine");
        const Tensor& x = in[0];
        const int64_t C = x.size(1);
        Vec mu(static_cast<size_t>(C)), var(static_cast<size_t>(C));
        if (!training) {
          mu = V(in[1]);
          var = V(in[2]);
        } else {
          Dims perm{1, 0};
          for (int64_t k = 2; k < x.dim(); ++k) perm.push_back(k);
          Vec xv = V(permute_ref(x, perm));
          const int64_t per = x.numel() / C;
          for (int64_t c = 0; c < C; ++c) {
            double s = 0, q = 0;
            for (int64_t i = 0; i < per; ++i) s += xv[c * per + i];
            mu[c] = s / static_cast<double>(per);
            for (int64_t i = 0; i < per; ++i)
              q += (xv[c * per + i] - mu[c]) * (xv[c * per + i] - mu[c]);
            var[c] = q / static_cast<double>(per);
          }
        }
        const size_t k = training ? 1 : 3;
        Vec wv = affine ? V(in[k]) : Vec(static_cast<size_t>(C), 1.0),
            bv = affine ? V(in[k + 1]) : Vec(static_cast<size_t>(C), 0.0);
        Vec xv = V(x), r(xv.size());
        for (size_t i = 0; i < xv.size(); ++i) {
          const int64_t c = unravel_index(static_cast<int64_t>(i), x.sizes())[1];
          r[i] = (xv[i] - mu[c]) / std::sqrt(var[c] + 1e-5) * wv[c] + bv[c];
        }
        return TensorList{T(r, x.sizes())};
      }));
  t.push_back(row(
      "layer_norm", 3, "input: any, distinct",
      "rank 1-4; normalized_shape = the last 1+ dims; weight/bias or none",
      [any](Draw& d) {
        Shape s = d.shape(1, 4, 4);
        const int64_t k = d.integer(1, static_cast<int64_t>(s.size()));
        Shape normalized(s.end() - k, s.end());
        if (numel_of(normalized) < 2) s.back() = normalized.back() = 2;
        const bool affine = d.integer(0, 1) == 0;
        Tensor x = d.values(s, any.distinct_values(0.05));
        const OpParams p = OpParams().set("normalized_shape", normalized);
        if (!affine)
          return make({x}, p, "layer_norm(x " + sh(x) + ", " + shape_str(normalized) + ")");
        Tensor w = d.values(normalized, any), b = d.values(normalized, any);
        return make({x, w, b}, p,
                    "layer_norm(x " + sh(x) + ", " + shape_str(normalized) + ", weight, bias)");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{layer_norm(in[0], p.shape("normalized_shape"),
                                     in.size() > 1 ? in[1] : Tensor(),
                                     in.size() > 1 ? in[2] : Tensor())};
      },
      [](const TensorList& in, const OpParams& p) {
        const int64_t per = numel_of(p.shape("normalized_shape"));
        Vec xv = V(in[0]), r(xv.size());
        Vec wv = in.size() > 1 ? V(in[1]) : Vec(static_cast<size_t>(per), 1.0);
        Vec bv = in.size() > 1 ? V(in[2]) : Vec(static_cast<size_t>(per), 0.0);
        for (size_t g = 0; g < xv.size(); g += static_cast<size_t>(per)) {
          double m = 0, q = 0;
          for (int64_t i = 0; i < per; ++i) m += xv[g + i];
          m /= static_cast<double>(per);
          for (int64_t i = 0; i < per; ++i) q += (xv[g + i] - m) * (xv[g + i] - m);
          q /= static_cast<double>(per);
          for (int64_t i = 0; i < per; ++i)
            r[g + i] = (xv[g + i] - m) / std::sqrt(q + 1e-5) * wv[i] + bv[i];
        }
        return TensorList{T(r, in[0].sizes())};
      }));
}

}  // namespace gradlab::testing::table
