// gradlab_display: MIME bundles of tensors and autograd graphs, the display hook, base64.
// The PNG renderers (cairo) are in draw.cpp.

#include "gradlab/display/display.hpp"

#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "gradlab/autograd/graph.hpp"
#include "gradlab/core/error.hpp"
#include "gradlab/io/html_escape.hpp"

extern char** environ;

namespace {
std::atomic<gradlab_display_sink_fn> g_sink{nullptr};
}

extern "C" void gradlab_set_display_sink(gradlab_display_sink_fn sink) { g_sink.store(sink); }

namespace gradlab {

namespace {

// One element as the table shows it: integers as integers, floats with 6 significant digits.
std::string cell_text(double v, bool integral) {
  std::ostringstream os;
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (integral) {
    os << static_cast<long long>(v);
  } else {
    os << std::setprecision(6) << v;
  }
  return os.str();
}

// Rows / columns the table shows: all when n <= 2 * kEdge, else the first and last kEdge with
// -1 (an ellipsis) between them.
constexpr int64_t kEdge = 10;
std::vector<int64_t> shown(int64_t n) {
  std::vector<int64_t> idx;
  if (n <= 2 * kEdge) {
    for (int64_t i = 0; i < n; ++i) idx.push_back(i);
    return idx;
  }
  for (int64_t i = 0; i < kEdge; ++i) idx.push_back(i);
  idx.push_back(-1);
  for (int64_t i = n - kEdge; i < n; ++i) idx.push_back(i);
  return idx;
}

}  // namespace

MimeBundle mime_bundle(const Tensor& t) {
  MimeBundle b;
  if (!t.defined()) {
    b.data["text/plain"] = "<undefined tensor>";
    return b;
  }
  b.data["text/plain"] = t.str();
  std::ostringstream h;
  h << "<div class=\"gradlab-tensor\"><p><code>" << io::html_escape(t.describe());
  if (t.requires_grad()) h << ", requires_grad";
  h << "</code></p>";
  if (t.dim() > 2) {
    h << "<pre>" << io::html_escape(t.str()) << "</pre></div>";
    b.data["text/html"] = h.str();
    return b;
  }
  const Tensor c = t.detach().cpu().contiguous();
  const std::vector<double> v = c.to_vector<double>();
  const bool integral = !c.is_floating_point();
  const int64_t rows = c.dim() == 2 ? c.size(0) : 1;
  const int64_t cols = c.dim() == 2 ? c.size(1) : (c.dim() == 1 ? c.size(0) : 1);
  h << "<table>";
  for (int64_t r : shown(rows)) {
    h << "<tr>";
    for (int64_t k : shown(cols)) {
      if (r < 0 || k < 0) {
        h << "<td>&hellip;</td>";
      } else {
        h << "<td>" << cell_text(v[static_cast<size_t>(r * cols + k)], integral) << "</td>";
      }
    }
    h << "</tr>";
  }
  h << "</table></div>";
  b.data["text/html"] = h.str();
  return b;
}

namespace {

// Runs `dot -Tsvg` (GRADLAB_DOT names another dot) on `dot_text`; returns its stdout.
// stdin is one end of a socketpair, so a dot that dies early gives EPIPE, not SIGPIPE.
std::string run_dot(const std::string& dot_text) {
  const char* env = std::getenv("GRADLAB_DOT");
  const std::string program = env != nullptr && *env != '\0' ? env : "dot";
  int in[2], out[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, in) != 0 || pipe(out) != 0) {
    throw IOError(error_message("display(graph_view)", "could not make pipes for Graphviz's dot",
                                {}, std::strerror(errno)));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, in[0]);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  std::string a0 = program, a1 = "-Tsvg";
  char* argv[] = {a0.data(), a1.data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, program.c_str(), &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[1]);
  close(out[1]);
  if (rc != 0) {
    close(in[0]);
    close(out[0]);
    throw IOError(error_message("display(graph_view)", "could not run Graphviz's " + program,
                                "the dot program on PATH", std::strerror(rc),
                                "apt-get install graphviz (tools/setup.sh does), or set "
                                "GRADLAB_DOT to its path"));
  }
  for (size_t at = 0; at < dot_text.size();) {
    const ssize_t put = send(in[0], dot_text.data() + at, dot_text.size() - at, MSG_NOSIGNAL);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) break;  // dot exited early: its status says why
    at += static_cast<size_t>(put);
  }
  close(in[0]);
  std::string svg;
  char buf[1 << 14];
  for (;;) {
    const ssize_t got = read(out[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    svg.append(buf, static_cast<size_t>(got));
  }
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || svg.find("<svg") == std::string::npos) {
    throw IOError(error_message("display(graph_view)", program + " -Tsvg failed",
                                "exit status 0 and an <svg> document",
                                WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                                  : std::string("a signal"),
                                "its message is on stderr; check that graphviz is installed whole"));
  }
  return svg;
}

}  // namespace

MimeBundle mime_bundle(const GraphView& g) {
  if (!g.root.defined() || g.root.grad_fn() == nullptr) {
    throw ValueError(error_message(
        "display(graph_view)", "the tensor has no autograd graph",
        "a tensor made by ops on inputs that require grad (grad_fn set)",
        g.root.defined() ? "a leaf or a tensor made without grad" : "an undefined tensor",
        "call requires_grad_() on an input before the forward ops, outside no_grad"));
  }
  MimeBundle b;
  const std::string dot = autograd::to_dot(g.root, g.title);
  b.data["image/svg+xml"] = run_dot(dot);
  b.data["text/vnd.graphviz"] = dot;
  b.data["text/plain"] = autograd::graph_summary(g.root);
  return b;
}

void display_bundle(const MimeBundle& b) {
  if (auto* sink = g_sink.load()) {
    std::vector<const char*> mimes, payloads;
    std::vector<unsigned long> sizes;
    for (const auto& [mime, payload] : b.data) {
      mimes.push_back(mime.c_str());
      payloads.push_back(payload.data());
      sizes.push_back(static_cast<unsigned long>(payload.size()));
    }
    sink(static_cast<int>(mimes.size()), mimes.data(), payloads.data(), sizes.data());
    return;
  }
  const auto it = b.data.find("text/plain");
  std::cout << (it != b.data.end() ? it->second : std::string("<no text/plain form>")) << "\n";
}

std::string base64_encode(const std::string& bytes) {
  static const char* const kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  // Three bytes -> four 6-bit digits; the tail is padded with '='.
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8) |
                       uint32_t(uint8_t(bytes[i + 2]));
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i < bytes.size()) {
    const bool two = i + 1 < bytes.size();
    const uint32_t n = (uint32_t(uint8_t(bytes[i])) << 16) | (two ? uint32_t(uint8_t(bytes[i + 1])) << 8 : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += two ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace gradlab
