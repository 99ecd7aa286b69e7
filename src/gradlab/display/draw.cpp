// gradlab_display's PNGs, drawn with cairo: a tensor as a picture, training curves.

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <sstream>

#include "gradlab/core/error.hpp"
#include "gradlab/display/display.hpp"
#include "gradlab/train/history.hpp"

namespace gradlab {

namespace {

using Surface = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
using Context = std::unique_ptr<cairo_t, decltype(&cairo_destroy)>;

cairo_status_t append_bytes(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

// The PNG of `s`, base64-encoded.
std::string png_of(cairo_surface_t* s, const char* op) {
  std::string png;
  const cairo_status_t st = cairo_surface_write_to_png_stream(s, &append_bytes, &png);
  if (st != CAIRO_STATUS_SUCCESS) {
    throw IOError(error_message(op, "cairo could not encode the PNG", "CAIRO_STATUS_SUCCESS",
                                cairo_status_to_string(st)));
  }
  return base64_encode(png);
}

Surface new_surface(int w, int h, const char* op) {
  Surface s(cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h), &cairo_surface_destroy);
  if (cairo_surface_status(s.get()) != CAIRO_STATUS_SUCCESS) {
    throw OutOfMemoryError(error_message(op, "cairo could not make a " + std::to_string(w) + "x" +
                                                 std::to_string(h) + " picture",
                                         {}, cairo_status_to_string(cairo_surface_status(s.get()))));
  }
  return s;
}

}  // namespace

// ---- a tensor as a picture ---------------------------------------------------------------------
MimeBundle mime_bundle(const ImageView& im) {
  const char* op = "display(image_view)";
  const Tensor& t = im.pixels;
  if (!t.defined()) throw ValueError(error_message(op, "the tensor is undefined", "a tensor", "none"));
  if (im.scale < 1 || im.scale > 64) {
    throw ValueError(error_message(op, "bad scale", "1..64 (screen pixels per tensor pixel)",
                                   std::to_string(im.scale)));
  }
  // Layout: channels (1 or 3), height, width, and whether channels come last.
  int64_t ch = 1, h = 0, w = 0;
  bool last = false;
  const Shape& s = t.sizes();
  if (t.dim() == 2) {
    h = s[0], w = s[1];
  } else if (t.dim() == 3 && (s[0] == 1 || s[0] == 3)) {
    ch = s[0], h = s[1], w = s[2];
  } else if (t.dim() == 3 && s[2] == 3) {
    ch = 3, h = s[0], w = s[1], last = true;
  } else {
    throw ShapeError(error_message(op, "not a picture's shape",
                                   "[H, W], [1, H, W], [3, H, W] or [H, W, 3]", t.describe(),
                                   "a batch [N, C, H, W]: show one item, x[0]"));
  }
  if (h < 1 || w < 1 || h * im.scale > 4096 || w * im.scale > 4096) {
    throw ShapeError(error_message(op, "picture size", "1..4096 pixels a side after scaling",
                                   std::to_string(w * im.scale) + "x" + std::to_string(h * im.scale),
                                   "pass a smaller scale"));
  }
  const std::vector<double> v = t.detach().cpu().contiguous().to_vector<double>();
  double lo = im.lo, hi = im.hi;
  const bool auto_range = lo == hi;
  if (auto_range) {
    lo = std::numeric_limits<double>::infinity();
    hi = -lo;
  }
  for (double x : v) {
    if (!std::isfinite(x)) {
      throw ValueError(error_message(op, "a pixel is NaN or inf", "finite values", "a non-finite one",
                                     "nan_to_num() first, or look for where it came from"));
    }
    if (auto_range) lo = std::min(lo, x), hi = std::max(hi, x);
  }
  // grey level in 0..255: (x - lo) / (hi - lo), clamped; a constant picture is mid grey.
  auto level = [&](double x) -> uint32_t {
    if (hi <= lo) return 128;
    const double u = std::clamp((x - lo) / (hi - lo), 0.0, 1.0);
    return static_cast<uint32_t>(std::lround(u * 255.0));
  };
  const int W = static_cast<int>(w * im.scale), H = static_cast<int>(h * im.scale);
  Surface surf = new_surface(W, H, op);
  cairo_surface_flush(surf.get());
  unsigned char* data = cairo_image_surface_get_data(surf.get());
  const int stride = cairo_image_surface_get_stride(surf.get());
  auto at = [&](int64_t c, int64_t y, int64_t x) {
    return v[static_cast<size_t>(last ? (y * w + x) * 3 + c : (c * h + y) * w + x)];
  };
  for (int Y = 0; Y < H; ++Y) {
    auto* row = reinterpret_cast<uint32_t*>(data + static_cast<ptrdiff_t>(Y) * stride);
    for (int X = 0; X < W; ++X) {
      const int64_t y = Y / im.scale, x = X / im.scale;
      const uint32_t r = level(at(0, y, x));
      const uint32_t g = ch == 3 ? level(at(1, y, x)) : r, b = ch == 3 ? level(at(2, y, x)) : r;
      row[X] = (r << 16) | (g << 8) | b;  // CAIRO_FORMAT_RGB24: 0x00RRGGBB in native order
    }
  }
  cairo_surface_mark_dirty(surf.get());
  MimeBundle out;
  out.data["image/png"] = png_of(surf.get(), op);
  out.data["text/plain"] = "<image " + std::to_string(w) + "x" + std::to_string(h) +
                           (ch == 3 ? " RGB" : " grey") + ", scale " + std::to_string(im.scale) + ">";
  return out;
}

// ---- training curves ---------------------------------------------------------------------------
CurvePlot curve_plot(const train::History& history, const std::string& label) {
  CurveSeries s;
  s.label = label;
  for (const train::StepRecord& r : history.records()) {
    s.xs.push_back(static_cast<double>(r.step));
    s.ys.push_back(r.loss);
  }
  CurvePlot p;
  p.series.push_back(std::move(s));
  return p;
}

namespace {

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `n` ticks over `span`.
double nice_step(double span, int n) {
  const double raw = span / n;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double m = raw / p;
  return (m < 1.5 ? 1.0 : m < 3.5 ? 2.0 : m < 7.5 ? 5.0 : 10.0) * p;
}

std::string tick_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

// tab10's first colours, as matplotlib draws curves.
constexpr double kColors[][3] = {{0.12, 0.47, 0.71}, {1.00, 0.50, 0.05}, {0.17, 0.63, 0.17},
                                 {0.84, 0.15, 0.16}, {0.58, 0.40, 0.74}, {0.55, 0.34, 0.29}};

}  // namespace

MimeBundle mime_bundle(const CurvePlot& p) {
  const char* op = "display(curve_plot)";
  if (p.series.empty()) {
    throw ValueError(error_message(op, "nothing to plot", "at least one series", "none"));
  }
  if (p.width < 64 || p.width > 4096 || p.height < 64 || p.height > 4096) {
    throw ValueError(error_message(op, "plot size", "64..4096 pixels a side",
                                   std::to_string(p.width) + "x" + std::to_string(p.height)));
  }
  // y as drawn: log10(y) on a log axis; a point is drawn when that is finite.
  auto ty = [&](double y) { return p.log_y ? (y > 0 ? std::log10(y) : std::nan("")) : y; };
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  std::ostringstream text;
  for (const CurveSeries& s : p.series) {
    if (!s.xs.empty() && s.xs.size() != s.ys.size()) {
      throw ValueError(error_message(op, "series '" + s.label + "': xs and ys differ in length",
                                     std::to_string(s.ys.size()) + " xs (or none)",
                                     std::to_string(s.xs.size())));
    }
    size_t finite = 0;
    double lo = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < s.ys.size(); ++i) {
      const double x = s.xs.empty() ? static_cast<double>(i) : s.xs[i], y = ty(s.ys[i]);
      if (!std::isfinite(y) || !std::isfinite(x)) continue;
      ++finite;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
      lo = std::min(lo, s.ys[i]);
    }
    if (finite == 0) {
      throw ValueError(error_message(op, "series '" + s.label + "' has no point to draw",
                                     p.log_y ? "a finite, positive y" : "a finite y",
                                     std::to_string(s.ys.size()) + " points, none drawable"));
    }
    text << s.label << ": " << s.ys.size() << " points, first " << tick_text(s.ys.front())
         << ", last " << tick_text(s.ys.back()) << ", min " << tick_text(lo) << "\n";
  }
  if (x1 == x0) x0 -= 0.5, x1 += 0.5;
  if (y1 == y0) y0 -= 0.5, y1 += 0.5;
  const double pad = (y1 - y0) * 0.05;
  y0 -= pad, y1 += pad;

  Surface surf = new_surface(p.width, p.height, op);
  Context cr(cairo_create(surf.get()), &cairo_destroy);
  cairo_t* c = cr.get();
  cairo_set_source_rgb(c, 1, 1, 1);
  cairo_paint(c);
  // Plot area [L, R] x [T, B] in pixels; data -> pixel is affine.
  const double L = 70, R = p.width - 20.0, T = p.title.empty() ? 20.0 : 36.0, B = p.height - 48.0;
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (R - L); };
  auto py = [&](double y) { return B - (y - y0) / (y1 - y0) * (B - T); };
  cairo_select_font_face(c, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(c, 11);
  cairo_set_line_width(c, 1.0);
  cairo_text_extents_t ext;
  // Ticks and grid.
  for (int axis = 0; axis < 2; ++axis) {
    const double a = axis == 0 ? x0 : y0, b = axis == 0 ? x1 : y1;
    const double step = nice_step(b - a, axis == 0 ? 6 : 5);
    for (double v = std::ceil(a / step) * step; v <= b + step * 1e-9; v += step) {
      const std::string label = axis == 1 && p.log_y ? tick_text(std::pow(10.0, v)) : tick_text(v);
      cairo_text_extents(c, label.c_str(), &ext);
      cairo_set_source_rgb(c, 0.9, 0.9, 0.9);
      if (axis == 0) {
        cairo_move_to(c, std::round(px(v)) + 0.5, T), cairo_line_to(c, std::round(px(v)) + 0.5, B);
      } else {
        cairo_move_to(c, L, std::round(py(v)) + 0.5), cairo_line_to(c, R, std::round(py(v)) + 0.5);
      }
      cairo_stroke(c);
      cairo_set_source_rgb(c, 0.2, 0.2, 0.2);
      if (axis == 0) {
        cairo_move_to(c, px(v) - ext.width / 2, B + 16);
      } else {
        cairo_move_to(c, L - 6 - ext.width, py(v) + ext.height / 2);
      }
      cairo_show_text(c, label.c_str());
    }
  }
  cairo_set_source_rgb(c, 0.2, 0.2, 0.2);
  cairo_rectangle(c, L + 0.5, T + 0.5, R - L, B - T);
  cairo_stroke(c);
  // Axis labels and title.
  cairo_text_extents(c, p.x_label.c_str(), &ext);
  cairo_move_to(c, (L + R) / 2 - ext.width / 2, p.height - 12.0);
  cairo_show_text(c, p.x_label.c_str());
  cairo_save(c);
  cairo_text_extents(c, p.y_label.c_str(), &ext);
  cairo_move_to(c, 16, (T + B) / 2 + ext.width / 2);
  cairo_rotate(c, -M_PI / 2);
  cairo_show_text(c, (p.y_label + (p.log_y ? " (log)" : "")).c_str());
  cairo_restore(c);
  if (!p.title.empty()) {
    cairo_set_font_size(c, 13);
    cairo_text_extents(c, p.title.c_str(), &ext);
    cairo_move_to(c, (L + R) / 2 - ext.width / 2, 22);
    cairo_show_text(c, p.title.c_str());
    cairo_set_font_size(c, 11);
  }
  // The curves, clipped to the plot area; a non-drawable point ends the current line.
  cairo_save(c);
  cairo_rectangle(c, L, T, R - L, B - T);
  cairo_clip(c);
  cairo_set_line_width(c, 2.0);
  cairo_set_line_join(c, CAIRO_LINE_JOIN_ROUND);
  for (size_t k = 0; k < p.series.size(); ++k) {
    const CurveSeries& s = p.series[k];
    const double* rgb = kColors[k % (sizeof kColors / sizeof kColors[0])];
    cairo_set_source_rgb(c, rgb[0], rgb[1], rgb[2]);
    bool pen = false;
    for (size_t i = 0; i < s.ys.size(); ++i) {
      const double x = s.xs.empty() ? static_cast<double>(i) : s.xs[i], y = ty(s.ys[i]);
      if (!std::isfinite(x) || !std::isfinite(y)) {
        pen = false;
        continue;
      }
      if (pen) {
        cairo_line_to(c, px(x), py(y));
      } else {
        cairo_move_to(c, px(x), py(y));
        // A lone point still shows: a dot the line's width.
        cairo_line_to(c, px(x) + 0.01, py(y));
      }
      pen = true;
    }
    cairo_stroke(c);
  }
  cairo_restore(c);
  // Legend, top right.
  double ly = T + 16;
  for (size_t k = 0; k < p.series.size(); ++k) {
    const double* rgb = kColors[k % (sizeof kColors / sizeof kColors[0])];
    const std::string& label = p.series[k].label;
    cairo_text_extents(c, label.c_str(), &ext);
    const double lx = R - 36 - ext.width;
    cairo_set_source_rgb(c, rgb[0], rgb[1], rgb[2]);
    cairo_rectangle(c, lx, ly - 6, 18, 4);
    cairo_fill(c);
    cairo_set_source_rgb(c, 0.1, 0.1, 0.1);
    cairo_move_to(c, lx + 24, ly);
    cairo_show_text(c, label.c_str());
    ly += 16;
  }
  cairo_surface_flush(surf.get());
  MimeBundle out;
  out.data["image/png"] = png_of(surf.get(), op);
  out.data["text/plain"] = text.str();
  return out;
}

}  // namespace gradlab
