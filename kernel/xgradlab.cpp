// xgradlab: gradlab's Jupyter kernel for C++. The Jupyter protocol comes from xeus 2.4 (its zmq
// server), the C++ from clang 19's incremental clang::Interpreter (the engine of clang-repl).
//
//   xgradlab -f <connection file>      (what Jupyter runs; see tools/install_kernel.sh)
//
// - Each cell is parsed and run by one Interpreter: top-level declarations and statements both
//   work, and later cells see earlier ones. libgradlab is loaded and <gradlab/gradlab.hpp> and
//   <iostream> are included before the first cell (C++17, as xeus-cling's xcpp17).
// - The process's stdout and stderr (fds 1 and 2) are pipes read by the kernel; what the cell's
//   code writes (std::cout, printf, clang's diagnostics) goes to the client as stream messages
//   while the cell runs.
// - A compile error or an uncaught C++ exception becomes an error reply (ename = the exception's
//   type, "CompilationError" for a cell that does not compile); the kernel lives on.
// - A last expression without `;` shows its value as the cell's result (text/plain), printed
//   with operator<< when the type has one. NOTE: clang 19's own clang::Value printing is not
//   implemented (Value::print writes "Not implement yet.") and capturing a class value needs
//   its out-of-line destructor (gradlab::Tensor has none), so the kernel wraps the expression in
//   a small printer of its own instead.
// - Interrupt (SIGINT): the cell's native code cannot be stopped safely in the middle (no
//   cancellation point; unwinding from a signal handler would leave locks and the heap in an
//   undefined state). The kernel survives the signal, lets the cell finish, and says so on
//   stderr. Restart the kernel to stop a runaway cell.
// - At exit the kernel leaves with _Exit: clang 19's JIT crashes on the thread_local
//   destructors of JIT code (see ../../../shared/TOOLCHAIN.md).

#include <cxxabi.h>  // __cxa_current_exception_type
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include <clang/Frontend/CompilerInstance.h>
#include <clang/Interpreter/Interpreter.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include <xeus/xhelper.hpp>
#include <xeus/xinterpreter.hpp>
#include <xeus/xkernel.hpp>
#include <xeus/xkernel_configuration.hpp>
#include <xeus/xserver_zmq.hpp>
#include <zmq.hpp>

#include "cell_scan.hpp"
#include "gradlab/core/demangle.hpp"

#ifndef XGRADLAB_INCLUDE_DIR
#error "XGRADLAB_INCLUDE_DIR (gradlab's src/) must be defined by the build"
#endif
#ifndef XGRADLAB_LIBRARY
#error "XGRADLAB_LIBRARY (libgradlab.so) must be defined by the build"
#endif
#ifndef XGRADLAB_RESOURCE_DIR
#error "XGRADLAB_RESOURCE_DIR (clang 19's resource directory) must be defined by the build"
#endif

namespace nl = nlohmann;

namespace xgradlab {
namespace {

constexpr const char* kVersion = "0.1.0";

// ---- output capture: fds 1 and 2 become pipes, drained by the xeus thread ------------------------
class OutputPipes {
 public:
  OutputPipes() {
    saved_err_ = dup(STDERR_FILENO);  // the kernel's own log (Jupyter's terminal)
    for (int k = 0; k < 2; ++k) {
      int p[2];
      if (pipe(p) != 0) {
        std::perror("xgradlab: pipe");
        std::exit(1);
      }
      fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
      fcntl(p[0], F_SETPIPE_SZ, 1 << 20);  // a chatty cell blocks less often between drains
      std::fflush(k == 0 ? stdout : stderr);
      dup2(p[1], k == 0 ? STDOUT_FILENO : STDERR_FILENO);
      close(p[1]);
      read_fd_[k] = p[0];
    }
    // Line-buffered stdout: std::cout / printf lines reach the client while the cell runs.
    std::setvbuf(stdout, nullptr, _IOLBF, 1 << 16);
  }
  /// Everything written so far to stdout (k = 0) or stderr (k = 1).
  std::string drain(int k) {
    std::string out;
    char buf[1 << 14];
    for (;;) {
      const ssize_t got = read(read_fd_[k], buf, sizeof buf);
      if (got <= 0) break;
      out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
  }
  void flush_streams() {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    llvm::outs().flush();
    llvm::errs().flush();
  }
  /// Writes to the terminal Jupyter started the kernel from (not to the notebook).
  void log(const std::string& text) const {
    const std::string line = "xgradlab: " + text + "\n";
    if (write(saved_err_, line.data(), line.size()) < 0) {
      // nothing to do: the log is best effort
    }
  }

 private:
  int read_fd_[2] = {-1, -1};
  int saved_err_ = -1;
};

// ---- the value of a trailing expression: filled by JIT code, read by the kernel ------------------
std::string g_result;
bool g_has_result = false;
extern "C" void xgradlab_set_result(const char* text, unsigned long size) {
  g_result.assign(text, size);
  g_has_result = true;
}

std::atomic<bool> g_running_cell{false};
std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) {
  if (g_running_cell.load()) g_interrupted.store(true);
}

// ---- one thread owns the clang::Interpreter; the xeus thread hands it work ------------------------
// NOTE: the JIT code always runs on this same thread, so gradlab's thread_local state (grad
// mode, the module-call site) carries over from cell to cell.
class Worker {
 public:
  Worker() {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64u << 20);  // clang's parser and deep templates
    if (pthread_create(&thread_, &attr, &Worker::main, this) != 0) {
      std::perror("xgradlab: pthread_create");
      std::exit(1);
    }
    pthread_attr_destroy(&attr);
  }
  /// Runs `job` on the worker; while it runs, calls `poll` every 20 ms on this thread.
  void run(std::function<void()> job, const std::function<void()>& poll) {
    {
      std::lock_guard<std::mutex> lock(m_);
      job_ = std::move(job);
      done_ = false;
    }
    cv_.notify_all();
    std::unique_lock<std::mutex> lock(m_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return done_; })) {
      lock.unlock();
      poll();
      lock.lock();
    }
  }

 private:
  static void* main(void* self) {
    auto* w = static_cast<Worker*>(self);
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(w->m_);
        w->cv_.wait(lock, [&] { return static_cast<bool>(w->job_); });
        job = std::move(w->job_);
        w->job_ = nullptr;
      }
      job();
      {
        std::lock_guard<std::mutex> lock(w->m_);
        w->done_ = true;
      }
      w->cv_.notify_all();
    }
    return nullptr;
  }
  pthread_t thread_{};
  std::mutex m_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool done_ = true;
};

// What running one input produced.
struct Outcome {
  enum Kind { Ok, CompileError, Exception } kind = Ok;
  std::string ename, evalue;
};

class Kernel : public xeus::xinterpreter {
 public:
  Kernel() { xeus::register_interpreter(this); }

 private:
  // ---- startup --------------------------------------------------------------------------------
  void configure_impl() override {
    const auto t0 = std::chrono::steady_clock::now();
    std::string error;
    worker_.run([&] { error = start_interpreter(); }, [] {});
    const std::string out = pipes_.drain(0), err = pipes_.drain(1);
    if (!error.empty()) {
      pipes_.log("could not start clang's Interpreter: " + error + "\n" + out + err);
      std::_Exit(1);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    pipes_.log("ready: libgradlab loaded, gradlab.hpp parsed in " + std::to_string(s) + " s");
  }

  // Returns an error message, or "" when the interpreter is ready.
  std::string start_interpreter() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // Compiler flags: C++17 (the xcpp17 kernel of xeus-cling), gradlab's headers, and any extra
    // flags from XGRADLAB_CXXFLAGS (space-separated, e.g. "-O2 -DNDEBUG").
    args_ = {"-std=c++17", "-resource-dir", XGRADLAB_RESOURCE_DIR, "-I" XGRADLAB_INCLUDE_DIR};
    if (const char* extra = std::getenv("XGRADLAB_CXXFLAGS")) {
      std::istringstream in(extra);
      for (std::string a; in >> a;) args_.push_back(a);
    }
    std::vector<const char*> argv;
    for (const std::string& a : args_) argv.push_back(a.c_str());
    clang::IncrementalCompilerBuilder builder;
    builder.SetCompilerArgs(argv);
    auto ci = builder.CreateCpp();
    if (!ci) return llvm::toString(ci.takeError());
    auto interp = clang::Interpreter::create(std::move(*ci));
    if (!interp) return llvm::toString(interp.takeError());
    interp_ = std::move(*interp);
    if (llvm::Error e = interp_->LoadDynamicLibrary(XGRADLAB_LIBRARY))
      return "loading " XGRADLAB_LIBRARY ": " + llvm::toString(std::move(e));
    std::ostringstream prelude;
    prelude << "#include <gradlab/gradlab.hpp>\n#include <iostream>\n" << printer_code();
    Outcome o = parse_and_execute(prelude.str());
    if (o.kind != Outcome::Ok) return o.ename + ": " + o.evalue;
    return {};
  }

  // The printer a trailing expression is wrapped in: xgradlab_detail::show([]() -> decltype(auto)
  // { return (expr); }). Globals need no capture: every top-level variable of a cell is global.
  static std::string printer_code() {
    std::ostringstream c;
    c << "#include <sstream>\n#include <string>\n#include <type_traits>\n#include <typeinfo>\n"
         "namespace xgradlab_detail {\n"
         "template <class T, class = void> struct streamable : std::false_type {};\n"
         "template <class T> struct streamable<T, std::void_t<decltype(std::declval<std::ostream&>()"
         " << std::declval<const T&>())>> : std::true_type {};\n"
         "template <class T> void show_value(const T& v) {\n"
         "  std::ostringstream os;\n"
         "  os << std::boolalpha;\n"
         "  using D = std::decay_t<T>;\n"
         "  if constexpr (std::is_same_v<D, std::string>) os << '\"' << v << '\"';\n"
         "  else if constexpr (std::is_same_v<D, const char*> || std::is_same_v<D, char*>)"
         " os << '\"' << v << '\"';\n"
         "  else if constexpr (std::is_same_v<D, char>) os << '\\'' << v << '\\'';\n"
         "  else if constexpr (streamable<T>::value) os << v;\n"
         "  else os << \"<object of type \" << typeid(T).name() << \">\";\n"
         "  const std::string s = os.str();\n"
         "  reinterpret_cast<void (*)(const char*, unsigned long)>("
      << reinterpret_cast<unsigned long long>(&xgradlab_set_result)
      << "ull)(s.data(), s.size());\n"
         "}\n"
         "template <class F> void show(F f) {\n"
         "  if constexpr (std::is_void_v<decltype(f())>) f();\n"
         "  else { decltype(auto) v = f(); show_value(v); }\n"
         "}\n"
         "}  // namespace xgradlab_detail\n";
    return c.str();
  }

  // On the worker thread: one input through the Interpreter; C++ exceptions are caught here.
  Outcome parse_and_execute(const std::string& code) {
    Outcome o;
    try {
      if (llvm::Error e = interp_->ParseAndExecute(code)) {
        o.kind = Outcome::CompileError;
        o.ename = "CompilationError";
        o.evalue = llvm::toString(std::move(e));
      }
    } catch (const std::exception& e) {
      o.kind = Outcome::Exception;
      o.ename = gradlab::demangle(typeid(e).name());
      o.evalue = e.what();
    } catch (...) {
      o.kind = Outcome::Exception;
      const std::type_info* t = abi::__cxa_current_exception_type();
      o.ename = t != nullptr ? gradlab::demangle(t->name()) : "unknown exception";
      o.evalue = "an exception that is not a std::exception";
    }
    pipes_.flush_streams();
    return o;
  }

  // ---- execute ----------------------------------------------------------------------------------
  nl::json execute_request_impl(int execution_counter, const std::string& code, bool silent,
                                bool /*store_history*/, nl::json /*user_expressions*/,
                                bool /*allow_stdin*/) override {
    // Anything written outside a cell (by xeus, at startup) goes to the log, not to this cell.
    for (int k = 0; k < 2; ++k) {
      const std::string stray = pipes_.drain(k);
      if (!stray.empty()) pipes_.log("output outside a cell: " + stray);
    }
    std::string source = code;
    std::size_t prefix_end = 0;
    const std::string expr = trailing_expression(code, &prefix_end);
    if (!expr.empty()) {
      // Lines keep their numbers in diagnostics: the wrapper starts on the expression's line.
      source = code.substr(0, prefix_end) + " xgradlab_detail::show([]() -> decltype(auto) { return (" +
               expr + "\n); });";
    }
    std::string stderr_text;  // kept to find the compiler's first error line
    auto publish = [&] {
      const std::string out = pipes_.drain(0), err = pipes_.drain(1);
      stderr_text += err;
      if (silent) return;
      if (!out.empty()) publish_stream("stdout", out);
      if (!err.empty()) publish_stream("stderr", err);
    };
    Outcome o;
    g_has_result = false;
    g_interrupted = false;
    g_running_cell = true;
    worker_.run([&] { o = parse_and_execute(source); }, publish);
    g_running_cell = false;
    publish();
    if (g_interrupted) {
      const std::string note =
          "xgradlab: interrupt received; native code cannot be stopped safely mid-cell, so the "
          "cell ran to its end (restart the kernel to stop a runaway cell)\n";
      if (!silent) publish_stream("stderr", note);
    }
    if (o.kind != Outcome::Ok) {
      if (o.kind == Outcome::CompileError) {
        // evalue: the compiler's first "error:" line (the full diagnostics went to stderr).
        std::istringstream lines(stderr_text);
        for (std::string line; std::getline(lines, line);) {
          if (line.find("error: ") != std::string::npos && line.find("Parsing failed") == std::string::npos) {
            o.evalue = line + " (" + o.evalue + ")";
            break;
          }
        }
      }
      std::vector<std::string> traceback = {o.ename + ": " + o.evalue};
      if (!silent) publish_execution_error(o.ename, o.evalue, traceback);
      nl::json reply;
      reply["status"] = "error";
      reply["ename"] = o.ename;
      reply["evalue"] = o.evalue;
      reply["traceback"] = traceback;
      return reply;
    }
    if (g_has_result && !silent) {
      nl::json data;
      data["text/plain"] = g_result;
      publish_execution_result(execution_counter, std::move(data), nl::json::object());
    }
    nl::json reply;
    reply["status"] = "ok";
    reply["payload"] = nl::json::array();
    reply["user_expressions"] = nl::json::object();
    return reply;
  }

  // ---- the other requests -----------------------------------------------------------------------
  nl::json complete_request_impl(const std::string& /*code*/, int cursor_pos) override {
    // No completion (clang 19's Interpreter offers CodeCompletion only inside clang-repl's
    // line editor): an empty, valid reply.
    nl::json r;
    r["status"] = "ok";
    r["matches"] = nl::json::array();
    r["cursor_start"] = cursor_pos;
    r["cursor_end"] = cursor_pos;
    r["metadata"] = nl::json::object();
    return r;
  }
  nl::json inspect_request_impl(const std::string&, int, int) override {
    nl::json r;
    r["status"] = "ok";
    r["found"] = false;
    r["data"] = nl::json::object();
    r["metadata"] = nl::json::object();
    return r;
  }
  nl::json is_complete_request_impl(const std::string& code) override {
    nl::json r;
    r["status"] = completeness(code);
    if (r["status"] == "incomplete") r["indent"] = "  ";
    return r;
  }
  nl::json kernel_info_request_impl() override {
    nl::json r;
    r["status"] = "ok";
    r["implementation"] = "xgradlab";
    r["implementation_version"] = kVersion;
    r["banner"] = std::string("xgradlab ") + kVersion +
                  ": gradlab's C++17 kernel (xeus 2.4 + clang 19's incremental Interpreter); "
                  "libgradlab is loaded and <gradlab/gradlab.hpp> included";
    r["language_info"]["name"] = "c++";
    r["language_info"]["version"] = "17";
    r["language_info"]["mimetype"] = "text/x-c++src";
    r["language_info"]["file_extension"] = ".cpp";
    r["help_links"] = nl::json::array();
    return r;
  }
  void shutdown_request_impl() override { pipes_.flush_streams(); }

  OutputPipes pipes_;
  Worker worker_;
  std::vector<std::string> args_;
  std::unique_ptr<clang::Interpreter> interp_;
};

}  // namespace
}  // namespace xgradlab

int main(int argc, char* argv[]) {
  if (xeus::should_print_version(argc, argv)) {
    std::cout << "xgradlab " << xgradlab::kVersion << "\n";
    return 0;
  }
  const std::string file = xeus::extract_filename(argc, argv);
  if (file.empty()) {
    std::cerr << "usage: xgradlab -f <connection file>   (Jupyter starts it; see "
                 "tools/install_kernel.sh)\n";
    return 2;
  }
  std::signal(SIGINT, xgradlab::on_sigint);
  const xeus::xconfiguration config = xeus::load_configuration(file);
  auto context = xeus::make_context<zmq::context_t>();
  auto interpreter = std::make_unique<xgradlab::Kernel>();
  xeus::xkernel kernel(config, xeus::get_user_name(), std::move(context), std::move(interpreter),
                       xeus::make_xserver_zmq);
  kernel.start();
  // NOTE: _Exit, not return: destroying the JIT (and the thread_local objects its code made)
  // crashes clang 19's runtime at exit.
  std::fflush(nullptr);
  std::_Exit(0);
}
