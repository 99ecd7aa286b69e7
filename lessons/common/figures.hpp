#pragma once
// Figures for a lesson's README: the lesson draws them with gradlab::display (the same pictures a
// notebook shows inline) and lesson::figure() writes them as files.
//
//   #include "common/figures.hpp"
//   lesson::figure("graph.svg", [&] { return gradlab::mime_bundle(gradlab::graph_view(loss)); });
//   lesson::figure("digits.png", [&] { return gradlab::mime_bundle(gradlab::image_view(grid, 4, 0, 1)); });
//   lesson::figure("loss.png", [&] { return gradlab::mime_bundle(gradlab::curve_plot(series)); });
//
// Drawing needs Graphviz's dot (SVG graphs) and cairo (PNGs). When drawing fails (say, no dot on
// PATH) and no figures folder was asked for, the lesson says so on stderr and goes on: a figure is
// for the README, not one of the lesson's claims. Under tools/make_lesson_figures.py (which sets
// GRADLAB_LESSON_FIGURES_DIR) the failure propagates, so a missing figure is never mistaken for a
// current one.
//
// The file goes to $GRADLAB_LESSON_FIGURES_DIR when set (tools/make_lesson_figures.py sets it to
// lessons/NN_slug/figures/, the ctest lesson_figures_NN_slug to a temporary folder whose files it
// compares with the committed ones), else to output_dir()/figures. Nothing is printed, so the
// README excerpts do not change. `.svg` takes the bundle's image/svg+xml, `.png` its image/png
// (base64 in the bundle, decoded here). Written to a temporary file and renamed over the old one,
// so a crash mid-write leaves the previous figure whole.
//
// Lessons link gradlab::display when it was built (cairo found); without it GRADLAB_LESSON_HAVE_DISPLAY
// is 0, LESSON_FIGURE (below) draws nothing, and lesson_figures_* tests are not registered.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/lesson.hpp"
#include "gradlab/display/display.hpp"

namespace lesson {

/// Where figures go: $GRADLAB_LESSON_FIGURES_DIR, else output_dir()/figures (created).
inline std::filesystem::path figures_dir() {
  std::filesystem::path dir;
  if (const char* env = std::getenv("GRADLAB_LESSON_FIGURES_DIR"); env && *env) {
    dir = env;
  } else {
    dir = output_dir() / "figures";
  }
  std::filesystem::create_directories(dir);
  return dir;
}

namespace detail {
/// RFC 4648 base64 (padding, no line breaks: what gradlab::base64_encode writes) -> bytes.
inline std::string base64_decode(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  unsigned bits = 0;
  int nbits = 0;
  for (char c : text) {
    if (c == '=') break;
    const int v = value(c);
    if (v < 0) throw std::runtime_error("lesson::figure: the image/png payload is not base64 (found '" +
                                        std::string(1, c) + "')");
    bits = (bits << 6) | static_cast<unsigned>(v);
    nbits += 6;
    if (nbits >= 8) {
      nbits -= 8;
      out.push_back(static_cast<char>((bits >> nbits) & 0xFF));
    }
  }
  return out;
}
}  // namespace detail

/// Writes `bundle` as figures_dir()/name (name ends in .svg or .png) and returns the path.
/// std::invalid_argument for another extension, a name with a folder in it, or a bundle without
/// that MIME type.
inline std::filesystem::path figure(const std::string& name, const gradlab::MimeBundle& bundle) {
  const std::filesystem::path file(name);
  if (file.has_parent_path() || file.filename() != name)
    throw std::invalid_argument("lesson::figure: expected a plain file name such as \"graph.svg\", got \"" +
                                name + "\" (hint: the folder comes from GRADLAB_LESSON_FIGURES_DIR)");
  const std::string ext = file.extension().string();
  const char* mime = ext == ".svg" ? "image/svg+xml" : ext == ".png" ? "image/png" : nullptr;
  if (!mime)
    throw std::invalid_argument("lesson::figure: expected a name ending in .svg or .png, got \"" + name + "\"");
  if (!bundle.has(mime))
    throw std::invalid_argument("lesson::figure(\"" + name + "\"): the bundle has no " + std::string(mime) +
                                " (hint: graph_view gives SVG; image_view and curve_plot give PNG)");
  const std::string& payload = bundle.data.at(mime);
  const std::string bytes = ext == ".png" ? detail::base64_decode(payload) : payload;
  const std::filesystem::path path = figures_dir() / name;
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("lesson::figure: could not write " + tmp.string());
  }
  std::filesystem::rename(tmp, path);
  return path;
}

/// Draws the figure with `draw()` (a callable returning a gradlab::MimeBundle) and writes it as
/// figure(name, bundle) does. See the top of this file for what happens when drawing fails.
template <class Draw, class = decltype(std::declval<Draw&>()())>
inline void figure(const std::string& name, Draw&& draw) {
  const char* asked = std::getenv("GRADLAB_LESSON_FIGURES_DIR");
  if (asked && *asked) {
    figure(name, draw());
    return;
  }
  try {
    figure(name, draw());
  } catch (const std::exception& e) {
    std::cerr << "lesson: figure " << name << " not drawn: " << e.what() << "\n";
  }
}

}  // namespace lesson

/// What a lesson writes: LESSON_FIGURE("loss.png", gradlab::curve_plot(series)) draws
/// gradlab::mime_bundle(<the view>) into figures/loss.png; it compiles to nothing where the lesson
/// was built without gradlab::display (cairo not found).
#if GRADLAB_LESSON_HAVE_DISPLAY
#define LESSON_FIGURE(name, ...) ::lesson::figure(name, [&] { return ::gradlab::mime_bundle(__VA_ARGS__); })
#else
#define LESSON_FIGURE(name, ...) ((void)0)
#endif
