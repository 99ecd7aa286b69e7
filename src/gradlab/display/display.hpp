#pragma once
// Rich display: gradlab values as Jupyter MIME bundles (library gradlab_display, CMake target
// gradlab::display). In gradlab's kernel xgradlab, `gradlab::display(x)` shows `x` under the cell
// (a display_data message) and a cell's trailing expression is shown the same way; in a plain
// program display() prints the bundle's text/plain to std::cout.
//
//   gradlab::display(x);                               // text/plain + text/html (a table for 2-D)
//   gradlab::display(gradlab::graph_view(loss));       // image/svg+xml: the autograd graph
//   gradlab::display(gradlab::image_view(digit, 8));   // image/png: a [H, W] or [C, H, W] picture
//   gradlab::display(gradlab::curve_plot(history));    // image/png: the loss curve of a run
//
// Renderers: the SVG is to_dot()'s text laid out by Graphviz's `dot` program (Debian: graphviz);
// the PNGs are drawn with cairo (libcairo2-dev). Both are the libraries made for the job.
// Binary payloads (image/png) are stored base64-encoded, as Jupyter's messages carry them.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gradlab/core/tensor.hpp"

namespace gradlab {

namespace train {
class History;
}

/// One value shown in several forms: MIME type -> payload ("text/plain" is always there;
/// image/png is base64 text).
struct MimeBundle {
  std::map<std::string, std::string> data;
  bool has(const std::string& mime) const { return data.count(mime) != 0; }
};

/// text/plain (the tensor's str()) and text/html: a <table> for a 0-, 1- or 2-D tensor (a 1-D
/// tensor is one row), a <pre> block of the text for more dims. A dim longer than 20 shows its
/// first and last 10 entries with an ellipsis between them.
MimeBundle mime_bundle(const Tensor& t);

/// The autograd graph behind `root` (autograd::to_dot) for display as SVG.
struct GraphView {
  Tensor root;
  std::string title = "gradlab graph";
};
inline GraphView graph_view(const Tensor& root, std::string title = "gradlab graph") {
  return GraphView{root, std::move(title)};
}
/// image/svg+xml (rendered by `dot -Tsvg`), text/vnd.graphviz (the DOT text) and text/plain
/// (autograd::graph_summary). ValueError when `root` has no graph (no grad_fn), IOError when
/// Graphviz's dot cannot be run (hint: apt-get install graphviz).
MimeBundle mime_bundle(const GraphView& g);

/// A tensor as a picture: [H, W] grey, [1, H, W] grey, [3, H, W] RGB or [H, W, 3] RGB
/// (channels last is taken when dim 0 is not 1 or 3 and the last dim is 3). Each source pixel
/// becomes a scale x scale block. Values map linearly from [lo, hi] to black..white; lo == hi
/// (the default, both 0) means "the tensor's own min and max" (a constant tensor is mid grey).
struct ImageView {
  Tensor pixels;
  int scale = 1;
  double lo = 0.0, hi = 0.0;
};
inline ImageView image_view(const Tensor& pixels, int scale = 1, double lo = 0.0, double hi = 0.0) {
  return ImageView{pixels, scale, lo, hi};
}
/// image/png and text/plain ("<image 28x28 grey, scale 8>"). ShapeError for other shapes, a
/// picture over 4096 x 4096 after scaling, or a CUDA tensor's copy failing; ValueError for a
/// scale outside 1..64 or NaN / inf pixels (they have no grey level; hint: nan_to_num).
MimeBundle mime_bundle(const ImageView& im);

/// Line plots on shared axes: one series per curve (x = 0, 1, 2, ... unless xs is given).
/// A non-finite y breaks its line there (a diverged run ends where it diverged).
struct CurveSeries {
  std::string label;
  std::vector<double> ys;
  std::vector<double> xs;  ///< empty: 0, 1, 2, ...
};
struct CurvePlot {
  std::vector<CurveSeries> series;
  std::string title;
  std::string x_label = "step";
  std::string y_label = "loss";
  bool log_y = false;  ///< log-scale y (non-positive values then break the line as well)
  int width = 640, height = 400;
};
/// The loss per step of a run (train::History), labelled `label`.
CurvePlot curve_plot(const train::History& history, const std::string& label = "loss");
inline CurvePlot curve_plot(std::vector<CurveSeries> series, std::string y_label = "loss") {
  CurvePlot p;
  p.series = std::move(series);
  p.y_label = std::move(y_label);
  return p;
}
/// image/png (cairo) and text/plain (one line per series: label, points, first, last, min).
/// ValueError for no series, a series with no finite point, xs of another length than ys, or a
/// size outside 64..4096.
MimeBundle mime_bundle(const CurvePlot& p);

/// Where display() sends bundles: the kernel installs one (see gradlab_set_display_sink below);
/// without one, display() prints the bundle's text/plain and a newline to std::cout.
void display_bundle(const MimeBundle& b);
/// Shows `x` through the mime_bundle() overload for its type.
template <class T>
void display(const T& x) {
  display_bundle(mime_bundle(x));
}
inline void display(const MimeBundle& b) { display_bundle(b); }

/// Standard base64 (RFC 4648, with padding), as Jupyter wants binary MIME payloads.
std::string base64_encode(const std::string& bytes);

}  // namespace gradlab

extern "C" {
/// The display hook, C ABI so that a host (the kernel) installs it without gradlab's C++ types:
/// `sink(n, mimes, payloads, sizes)` receives one bundle as n parallel arrays (payloads of the
/// given sizes, as in MimeBundle::data). nullptr uninstalls. Called on the thread that calls display().
typedef void (*gradlab_display_sink_fn)(int n, const char* const* mimes, const char* const* payloads,
                                        const unsigned long* sizes);
void gradlab_set_display_sink(gradlab_display_sink_fn sink);
}
