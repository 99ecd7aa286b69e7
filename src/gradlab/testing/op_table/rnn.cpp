// Op-table rows of ops/rnn.cpp: lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell. The
// references are the cell formulas as plain loops over rows and gates.

#include "gradlab/testing/op_table/support.hpp"

namespace gradlab::testing::table {

namespace {

using rnn_detail::Cell;

double sigm(double v) { return 1 / (1 + std::exp(-v)); }

// Inputs: x [N, I] (or [I]), h [N, H], c (LSTM), w_ih [G H, I], w_hh [G H, H], then b_ih, b_hh
// [G H] when the case has biases.
OpSpec cell_row(const std::string& name, Cell cell) {
  const bool lstm = cell == Cell::Lstm;
  const int64_t G = rnn_detail::gates_of(cell);
  return row(
      name, lstm ? 7 : 6, "any",
      "input [N, I] or [I], state [N, H] (LSTM: h and c), w_ih [G H, I], w_hh [G H, H], biases "
      "[G H] or none",
      [=](Draw& d) {
        const int64_t N = d.integer(1, 3), I = d.integer(1, 3), H = d.integer(1, 3);
        const bool unbatched = d.integer(0, 3) == 0, bias = d.boolean();
        const Shape xs = unbatched ? Shape{I} : Shape{N, I}, hs = unbatched ? Shape{H} : Shape{N, H};
        TensorList in{d.values(xs, Domain::any()), d.values(hs, Domain::any())};
        if (lstm) in.push_back(d.values(hs, Domain::any()));
        in.push_back(d.values({G * H, I}, Domain::any()));
        in.push_back(d.values({G * H, H}, Domain::any()));
        if (bias) in.push_back(d.values({G * H}, Domain::any())), in.push_back(d.values({G * H}, Domain::any()));
        return make(in, OpParams().set("bias", bias),
                    name + "(input " + sh(in[0]) + ", hidden " + std::to_string(H) +
                        (bias ? ", biases)" : ")"));
      },
      [=](const TensorList& in, const OpParams& p) {
        const size_t k = lstm ? 3 : 2;  // the first weight
        const Tensor b_ih = p.flag("bias") ? in[k + 2] : Tensor(), b_hh = p.flag("bias") ? in[k + 3] : Tensor();
        switch (cell) {
          case Cell::Lstm: {
            auto [h, c] = lstm_cell(in[0], {in[1], in[2]}, in[k], in[k + 1], b_ih, b_hh);
            return TensorList{h, c};
          }
          case Cell::Gru: return TensorList{gru_cell(in[0], in[1], in[k], in[k + 1], b_ih, b_hh)};
          case Cell::RnnTanh: return TensorList{rnn_tanh_cell(in[0], in[1], in[k], in[k + 1], b_ih, b_hh)};
          case Cell::RnnRelu: return TensorList{rnn_relu_cell(in[0], in[1], in[k], in[k + 1], b_ih, b_hh)};
        }
        return TensorList{};
      },
      [=](const TensorList& in, const OpParams& p) {
        const size_t k = lstm ? 3 : 2;
        const int64_t H = in[k + 1].size(1), I = in[k].size(1);
        const int64_t N = in[0].dim() == 2 ? in[0].size(0) : 1;
        const Vec x = V(in[0]), h = V(in[1]), c = lstm ? V(in[2]) : Vec(), wi = V(in[k]), wh = V(in[k + 1]);
        const Vec bi = p.flag("bias") ? V(in[k + 2]) : Vec(static_cast<size_t>(G * H), 0.0);
        const Vec bh = p.flag("bias") ? V(in[k + 3]) : Vec(static_cast<size_t>(G * H), 0.0);
        Vec h_out, c_out;
        for (int64_t n = 0; n < N; ++n) {
          Vec gx(static_cast<size_t>(G * H)), gh(static_cast<size_t>(G * H));
          for (int64_t r = 0; r < G * H; ++r) {
            double a = bi[r], b = bh[r];
            for (int64_t j = 0; j < I; ++j) a += wi[r * I + j] * x[n * I + j];
            for (int64_t j = 0; j < H; ++j) b += wh[r * H + j] * h[n * H + j];
            gx[r] = a, gh[r] = b;
          }
          for (int64_t u = 0; u < H; ++u) {
            const double hp = h[n * H + u];
            auto at = [&](const Vec& v, int64_t gate) { return v[gate * H + u]; };
            switch (cell) {
              case Cell::RnnTanh: h_out.push_back(std::tanh(gx[u] + gh[u])); break;
              case Cell::RnnRelu: h_out.push_back(std::max(gx[u] + gh[u], 0.0)); break;
              case Cell::Lstm: {
                const double i = sigm(at(gx, 0) + at(gh, 0)), f = sigm(at(gx, 1) + at(gh, 1)),
                             g = std::tanh(at(gx, 2) + at(gh, 2)), o = sigm(at(gx, 3) + at(gh, 3));
                const double c2 = f * c[n * H + u] + i * g;
                h_out.push_back(o * std::tanh(c2));
                c_out.push_back(c2);
                break;
              }
              case Cell::Gru: {
                const double r = sigm(at(gx, 0) + at(gh, 0)), z = sigm(at(gx, 1) + at(gh, 1));
                const double nn = std::tanh(at(gx, 2) + r * at(gh, 2));
                h_out.push_back((1 - z) * nn + z * hp);
                break;
              }
            }
          }
        }
        const Shape out = in[1].sizes();
        if (lstm) return TensorList{T(h_out, out), T(c_out, out)};
        return TensorList{T(h_out, out)};
      });
}

}  // namespace

void add_rnn_rows(std::vector<OpSpec>& t) {
  t.push_back(cell_row("lstm_cell", Cell::Lstm));
  t.push_back(cell_row("gru_cell", Cell::Gru));
  t.push_back(cell_row("rnn_tanh_cell", Cell::RnnTanh));
  t.push_back(cell_row("rnn_relu_cell", Cell::RnnRelu));
  t.back().notes = "relu's kink at 0: the drawn values make a pre-activation of exactly 0 unlikely";
}

}  // namespace gradlab::testing::table
