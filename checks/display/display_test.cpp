// gradlab_display: MIME bundles (tables, graphs, pictures, curves), base64, the display hook.
// PNGs are decoded back with cairo and their pixels checked, so a wrong picture fails.

#include <cairo.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>

#include "gradlab/display/display.hpp"
#include "gradlab/gradlab.hpp"

namespace gl = gradlab;
using ::testing::HasSubstr;

namespace {

std::string base64_decode(const std::string& s) {
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const size_t v = alphabet.find(c);
    if (v == std::string::npos) throw std::runtime_error("not base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// A decoded PNG: width, height and 0x00RRGGBB pixels (cairo's RGB24 / ARGB32 in native order).
struct Picture {
  int w = 0, h = 0;
  std::vector<uint32_t> px;
  uint32_t at(int x, int y) const { return px[static_cast<size_t>(y * w + x)] & 0xFFFFFF; }
};

struct Reader {
  std::string bytes;
  size_t at = 0;
};
cairo_status_t read_bytes(void* closure, unsigned char* data, unsigned int length) {
  auto* r = static_cast<Reader*>(closure);
  if (r->at + length > r->bytes.size()) return CAIRO_STATUS_READ_ERROR;
  std::memcpy(data, r->bytes.data() + r->at, length);
  r->at += length;
  return CAIRO_STATUS_SUCCESS;
}

Picture decode_png(const std::string& b64) {
  Reader r{base64_decode(b64), 0};
  EXPECT_EQ(r.bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  cairo_surface_t* s = cairo_image_surface_create_from_png_stream(&read_bytes, &r);
  EXPECT_EQ(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
  Picture p;
  p.w = cairo_image_surface_get_width(s);
  p.h = cairo_image_surface_get_height(s);
  const int stride = cairo_image_surface_get_stride(s);
  const unsigned char* data = cairo_image_surface_get_data(s);
  for (int y = 0; y < p.h; ++y)
    for (int x = 0; x < p.w; ++x)
      p.px.push_back(reinterpret_cast<const uint32_t*>(data + y * stride)[x]);
  cairo_surface_destroy(s);
  return p;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(Base64, Rfc4648TestVectors) {
  EXPECT_EQ(gl::base64_encode(""), "");
  EXPECT_EQ(gl::base64_encode("f"), "Zg==");
  EXPECT_EQ(gl::base64_encode("fo"), "Zm8=");
  EXPECT_EQ(gl::base64_encode("foo"), "Zm9v");
  EXPECT_EQ(gl::base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(gl::base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(gl::base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(gl::base64_encode(std::string("\xff\x00\x80", 3)), "/wCA");
}

TEST(TensorBundle, TwoDimsIsATableOfItsValues) {
  const gl::Tensor t = gl::from_vector(std::vector<double>{1.5, -2, 3, 4, 5, 6.25}, {2, 3});
  const gl::MimeBundle b = gl::mime_bundle(t);
  EXPECT_EQ(b.data.at("text/plain"), t.str());
  const std::string& h = b.data.at("text/html");
  EXPECT_EQ(count(h, "<tr>"), 2);
  EXPECT_EQ(count(h, "<td>"), 6);
  EXPECT_THAT(h, HasSubstr("<tr><td>1.5</td><td>-2</td><td>3</td></tr>"));
  EXPECT_THAT(h, HasSubstr("<td>6.25</td>"));
  EXPECT_THAT(h, HasSubstr("[2, 3] float32"));
}

TEST(TensorBundle, IntegersNonFiniteAndOneDim) {
  const gl::Tensor i = gl::arange(4, gl::TensorOptions().dtype(gl::kInt64));
  const std::string h = gl::mime_bundle(i).data.at("text/html");
  EXPECT_THAT(h, HasSubstr("<tr><td>0</td><td>1</td><td>2</td><td>3</td></tr>"));
  const gl::Tensor f = gl::from_vector(std::vector<double>{std::nan(""), INFINITY}, {2});
  EXPECT_THAT(gl::mime_bundle(f).data.at("text/html"), HasSubstr("<td>nan</td><td>inf</td>"));
}

TEST(TensorBundle, LongDimsShowTheirEndsAroundAnEllipsis) {
  const gl::Tensor t = gl::arange(30 * 25, gl::TensorOptions().dtype(gl::kFloat64)).reshape({30, 25});
  const std::string h = gl::mime_bundle(t).data.at("text/html");
  EXPECT_EQ(count(h, "<tr>"), 21);           // 10 rows, the ellipsis row, 10 rows
  EXPECT_EQ(count(h, "<td>"), 21 * 21);
  EXPECT_THAT(h, HasSubstr("<td>749</td></tr></table>"));  // the last element, last
  EXPECT_THAT(h, HasSubstr("<td>&hellip;</td>"));
}

TEST(TensorBundle, MoreDimsIsPreformattedTextAndHtmlIsEscaped) {
  const gl::Tensor t = gl::zeros({2, 2, 2});
  const std::string h = gl::mime_bundle(t).data.at("text/html");
  EXPECT_THAT(h, HasSubstr("<pre>tensor("));
  EXPECT_EQ(h.find("<table>"), std::string::npos);
}

TEST(GraphBundle, SvgOfTheAutogradGraph) {
  const gl::Tensor x = gl::ones({2}).requires_grad_(true);
  const gl::Tensor y = (x * x).sum();
  const gl::MimeBundle b = gl::mime_bundle(gl::graph_view(y, "my graph"));
  const std::string& svg = b.data.at("image/svg+xml");
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
  EXPECT_THAT(svg, HasSubstr("MulBackward0"));
  EXPECT_THAT(svg, HasSubstr("SumBackward0"));
  EXPECT_THAT(b.data.at("text/vnd.graphviz"), HasSubstr("digraph"));
  EXPECT_EQ(b.data.at("text/plain"), gl::autograd::graph_summary(y));
}

TEST(GraphBundle, ALeafHasNoGraphAndAMissingDotIsNamed) {
  const gl::Tensor x = gl::ones({2}).requires_grad_(true);
  try {
    gl::mime_bundle(gl::graph_view(x));
    FAIL() << "a leaf has no graph to show";
  } catch (const gl::ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("display(graph_view)"));
    EXPECT_THAT(e.what(), HasSubstr("requires_grad_()"));
  }
  setenv("GRADLAB_DOT", "/nonexistent/dot", 1);
  try {
    gl::mime_bundle(gl::graph_view(x * 2));
    unsetenv("GRADLAB_DOT");
    FAIL() << "no dot program, no SVG";
  } catch (const gl::IOError& e) {
    unsetenv("GRADLAB_DOT");
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/dot"));
    EXPECT_THAT(e.what(), HasSubstr("apt-get install graphviz"));
  }
}

TEST(ImageBundle, GreyLevelsMapMinToBlackAndMaxToWhite) {
  // [[0, 1], [0.5, 0.25]] at scale 2: each value a 2x2 block; grey = round(255 * v).
  const gl::Tensor t = gl::from_vector(std::vector<double>{0, 1, 0.5, 0.25}, {2, 2});
  const gl::MimeBundle b = gl::mime_bundle(gl::image_view(t, 2));
  EXPECT_EQ(b.data.at("text/plain"), "<image 2x2 grey, scale 2>");
  const Picture p = decode_png(b.data.at("image/png"));
  ASSERT_EQ(p.w, 4);
  ASSERT_EQ(p.h, 4);
  EXPECT_EQ(p.at(0, 0), 0x000000u);
  EXPECT_EQ(p.at(1, 1), 0x000000u);
  EXPECT_EQ(p.at(2, 0), 0xFFFFFFu);
  EXPECT_EQ(p.at(3, 1), 0xFFFFFFu);
  EXPECT_EQ(p.at(0, 2), 0x808080u);  // 127.5 rounds to 128
  EXPECT_EQ(p.at(3, 3), 0x404040u);  // 63.75 rounds to 64
}

TEST(ImageBundle, FixedRangeClampsAndRgbKeepsItsChannels) {
  const gl::Tensor t = gl::from_vector(std::vector<double>{-1, 2}, {1, 2});
  const Picture p = decode_png(gl::mime_bundle(gl::image_view(t, 1, 0.0, 1.0)).data.at("image/png"));
  EXPECT_EQ(p.at(0, 0), 0x000000u);
  EXPECT_EQ(p.at(1, 0), 0xFFFFFFu);
  // [3, 1, 2]: pixel 0 pure red, pixel 1 pure blue (range 0..1).
  const gl::Tensor rgb = gl::from_vector(std::vector<double>{1, 0, 0, 0, 0, 1}, {3, 1, 2});
  const Picture q = decode_png(gl::mime_bundle(gl::image_view(rgb, 1, 0, 1)).data.at("image/png"));
  EXPECT_EQ(q.at(0, 0), 0xFF0000u);
  EXPECT_EQ(q.at(1, 0), 0x0000FFu);
  // [2, 1, 3] channels last (dim 0 is neither 1 nor 3): a red pixel above a green one.
  const gl::Tensor hwc = gl::from_vector(std::vector<double>{1, 0, 0, 0, 1, 0}, {2, 1, 3});
  const Picture r = decode_png(gl::mime_bundle(gl::image_view(hwc, 1, 0, 1)).data.at("image/png"));
  ASSERT_EQ(r.w, 1);
  ASSERT_EQ(r.h, 2);
  EXPECT_EQ(r.at(0, 0), 0xFF0000u);
  EXPECT_EQ(r.at(0, 1), 0x00FF00u);
  // [1, 2, 3] is [1, H, W]: grey, 2 rows of 3.
  const gl::Tensor one = gl::from_vector(std::vector<double>{0, 0, 0, 1, 1, 1}, {1, 2, 3});
  const Picture g = decode_png(gl::mime_bundle(gl::image_view(one)).data.at("image/png"));
  EXPECT_EQ(g.w, 3);
  EXPECT_EQ(g.h, 2);
}

TEST(ImageBundle, BadInputIsAClearError) {
  EXPECT_THROW(gl::mime_bundle(gl::image_view(gl::zeros({2, 1, 4, 4}))), gl::ShapeError);
  EXPECT_THROW(gl::mime_bundle(gl::image_view(gl::zeros({4, 4}), 0)), gl::ValueError);
  EXPECT_THROW(gl::mime_bundle(gl::image_view(gl::zeros({100, 100}), 64)), gl::ShapeError);
  const gl::Tensor nan = gl::from_vector(std::vector<double>{0, std::nan("")}, {1, 2});
  try {
    gl::mime_bundle(gl::image_view(nan));
    FAIL() << "a NaN pixel has no grey level";
  } catch (const gl::ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("NaN or inf"));
    EXPECT_THAT(e.what(), HasSubstr("hint:"));
  }
}

TEST(CurveBundle, DrawsEachSeriesInItsColourAtTheAskedSize) {
  gl::CurvePlot plot = gl::curve_plot({{"train", {3.0, 2.0, 1.5, 1.2, 1.0}, {}},
                                       {"val", {3.2, 2.6, 2.2, 2.0, 1.9}, {}}});
  plot.width = 320;
  plot.height = 200;
  const gl::MimeBundle b = gl::mime_bundle(plot);
  EXPECT_THAT(b.data.at("text/plain"), HasSubstr("train: 5 points, first 3, last 1, min 1"));
  EXPECT_THAT(b.data.at("text/plain"), HasSubstr("val: 5 points"));
  const Picture p = decode_png(b.data.at("image/png"));
  ASSERT_EQ(p.w, 320);
  ASSERT_EQ(p.h, 200);
  // The line colours (tab10 blue 0x1F78B5, orange 0xFF800D; anti-aliasing blends the edges, so
  // look for pixels close to each).
  auto near = [](uint32_t a, uint32_t c) {
    for (int sh : {16, 8, 0})
      if (std::abs(int((a >> sh) & 0xFF) - int((c >> sh) & 0xFF)) > 12) return false;
    return true;
  };
  int blue = 0, orange = 0;
  for (int y = 0; y < p.h; ++y)
    for (int x = 0; x < p.w; ++x) blue += near(p.at(x, y), 0x1F78B5), orange += near(p.at(x, y), 0xFF800D);
  EXPECT_GT(blue, 100);
  EXPECT_GT(orange, 100);
  // The train curve falls: its pixels at the left are higher up (smaller y) than at the right.
  int left_y = -1, right_y = -1;
  for (int y = 0; y < p.h; ++y) {
    for (int x = 80; x < 100; ++x) if (left_y < 0 && near(p.at(x, y), 0x1F78B5)) left_y = y;
    for (int x = 280; x < 300; ++x) if (right_y < 0 && near(p.at(x, y), 0x1F78B5)) right_y = y;
  }
  ASSERT_GE(left_y, 0);
  ASSERT_GE(right_y, 0);
  EXPECT_LT(left_y, right_y);
}

TEST(CurveBundle, FromAHistoryAndBadInput) {
  gl::train::History h;
  for (int s = 0; s < 4; ++s) h.add({0, s, 1.0 / (s + 1), 0.0, 0.1});
  const gl::CurvePlot p = gl::curve_plot(h, "run 1");
  ASSERT_EQ(p.series.size(), 1u);
  EXPECT_EQ(p.series[0].ys, (std::vector<double>{1.0, 0.5, 1.0 / 3, 0.25}));
  EXPECT_EQ(p.series[0].xs, (std::vector<double>{0, 1, 2, 3}));
  EXPECT_THAT(gl::mime_bundle(p).data.at("text/plain"), HasSubstr("run 1: 4 points"));
  EXPECT_THROW(gl::mime_bundle(gl::CurvePlot{}), gl::ValueError);
  EXPECT_THROW(gl::mime_bundle(gl::curve_plot({{"nan", {std::nan(""), std::nan("")}, {}}})), gl::ValueError);
  EXPECT_THROW(gl::mime_bundle(gl::curve_plot({{"xs", {1, 2}, {0}}})), gl::ValueError);
  gl::CurvePlot log = gl::curve_plot({{"neg", {-1.0, 0.0}, {}}});
  log.log_y = true;
  EXPECT_THROW(gl::mime_bundle(log), gl::ValueError);  // nothing positive to draw on a log axis
  // A diverged run still draws up to where it diverged.
  EXPECT_NO_THROW(gl::mime_bundle(gl::curve_plot({{"diverged", {1.0, 0.5, INFINITY, std::nan("")}, {}}})));
}

namespace {
std::vector<std::pair<std::string, std::string>> g_seen;
void test_sink(int n, const char* const* mimes, const char* const* payloads, const unsigned long* sizes) {
  for (int k = 0; k < n; ++k) g_seen.emplace_back(mimes[k], std::string(payloads[k], sizes[k]));
}
}  // namespace

TEST(Display, ASinkGetsTheBundleAndWithoutOneTextIsPrinted) {
  const gl::Tensor t = gl::ones({2});
  gradlab_set_display_sink(&test_sink);
  gl::display(t);
  gradlab_set_display_sink(nullptr);
  ASSERT_EQ(g_seen.size(), 2u);
  EXPECT_EQ(g_seen[0].first, "text/html");
  EXPECT_EQ(g_seen[1].first, "text/plain");
  EXPECT_EQ(g_seen[1].second, t.str());
  testing::internal::CaptureStdout();
  gl::display(t);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), t.str() + "\n");
}
