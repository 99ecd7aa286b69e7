// xgradlab: gradlab's Jupyter kernel for C++. The Jupyter protocol comes from xeus 2.4 (its zmq
// server), the C++ from clang 19's incremental clang::Interpreter (the engine of clang-repl).
//
//   xgradlab -f <connection file>      (what Jupyter runs; see tools/install_kernel.sh)
//
// - Each cell is parsed and run by one Interpreter: top-level declarations and statements both
//   work, and later cells see earlier ones. libgradlab is loaded and <gradlab/gradlab.hpp> and
//   <iostream> are included before the first cell (C++17, as xeus-cling's xcpp17).
// - Cells are rewritten first, as cling does (cell_rewrite.hpp): statements go into generated
//   functions that run in place, lambda initializers into init functions, `[x]` captures become
//   init-captures. clang 19's Interpreter dies on a capturing lambda at namespace scope and on a
//   lambda in a top-level statement; inside a function body lambdas work. Top-level variables
//   stay globals, so later cells see them (and `[=]` / `[&]` refer to them, not copy them).
// - A cell runs top to bottom, like a script: the rewritten cell comes in parts (a run of
//   statements, or one variable, each), and each part is parsed and run before the next (clang
//   19 runs a const variable's initializer before the statements above it in the same input).
//   An error stops the cell there; the parts before it stay run, and the reply says where.
// - Each cell is compiled first in a fork()ed, throw-away copy of the kernel (probe_compile):
//   a cell that fails to compile, or crashes clang, never touches the kernel's Interpreter.
//   clang 19 keeps a failed cell's template instances without their code, and later cells then
//   fail with "JIT session error: Symbols not found". A JIT link error of a compiled cell is
//   undone (Interpreter::Undo).
// - The process's stdout and stderr (fds 1 and 2) are pipes read by the kernel; what the cell's
//   code writes (std::cout, printf, clang's diagnostics) goes to the client as stream messages
//   while the cell runs.
// - A compile error or an uncaught C++ exception becomes an error reply (ename = the exception's
//   type, "CompilationError" for a cell that does not compile); a SIGSEGV / SIGFPE / SIGBUS /
//   SIGILL in the cell's code (a null pointer, a stack overflow) becomes one too
//   ("SegmentationFault", ...; see on_fault for what may leak); the kernel lives on.
// - A last expression without `;` shows its value as the cell's result (text/plain), printed
//   with operator<< when the type has one. NOTE: clang 19's own clang::Value printing is not
//   implemented (Value::print writes "Not implement yet.") and capturing a class value needs
//   its out-of-line destructor (gradlab::Tensor has none), so the kernel wraps the expression in
//   a small printer of its own instead.
// - Interrupt (SIGINT): cells run on a worker thread; the handler sets gradlab's interrupt flag
//   (core/interrupt.hpp), and the cell's next gradlab op or backward step throws
//   gradlab::InterruptedError: the reply is a "KeyboardInterrupt" error. Code that runs no gradlab
//   op cannot be stopped safely (no cancellation point); it runs to its end and the kernel says
//   so on stderr.
// - Rich display: libgradlab_display (display/display.hpp) is loaded too. gradlab::display(x)
//   in a cell reaches display_sink below and becomes a display_data message, in order with the
//   cell's stdout; a trailing expression with a gradlab::mime_bundle form (a tensor, graph_view,
//   image_view, curve_plot) becomes an execute_result with all its MIME types.
// - Fast start: the build precompiles the prelude (xgradlab_prelude.hpp: gradlab.hpp, display.hpp,
//   <iostream>) with clang 19 into xgradlab_prelude.pch, with -fpch-codegen (its inline functions
//   and template instances compiled once into libxgradlab_prelude.so, which the kernel loads) and
//   -fpch-instantiate-templates (so no instantiation is left for the first cell). The kernel
//   starts with -include-pch; a stale or unusable PCH, or XGRADLAB_CXXFLAGS (other flags than
//   the PCH's), falls back to parsing the headers (the log says which).
// - complete_request and inspect_request (introspect.hpp) run in a fork()ed copy of the kernel.
// - At exit the kernel leaves with _Exit: clang 19's JIT crashes on the thread_local
//   destructors of JIT code (see ../../../shared/TOOLCHAIN.md).

#include <cxxabi.h>  // __cxa_current_exception_type
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
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

#include "cell_rewrite.hpp"
#include "cell_scan.hpp"
#include "introspect.hpp"
#include "output_pipes.hpp"
#include "gradlab/core/demangle.hpp"

#ifndef XGRADLAB_INCLUDE_DIR
#error "XGRADLAB_INCLUDE_DIR (gradlab's src/) must be defined by the build"
#endif
#ifndef XGRADLAB_LIBRARY
#error "XGRADLAB_LIBRARY (libgradlab.so) must be defined by the build"
#endif
#ifndef XGRADLAB_DISPLAY_LIBRARY
#error "XGRADLAB_DISPLAY_LIBRARY (libgradlab_display.so) must be defined by the build"
#endif
#if !defined(XGRADLAB_PCH) || !defined(XGRADLAB_PCH_LIBRARY)
#error "XGRADLAB_PCH / XGRADLAB_PCH_LIBRARY (the precompiled prelude; may be \"\") must be defined"
#endif
#ifndef XGRADLAB_RESOURCE_DIR
#error "XGRADLAB_RESOURCE_DIR (clang 19's resource directory) must be defined by the build"
#endif

namespace nl = nlohmann;

namespace xgradlab {
namespace {

constexpr const char* kVersion = "0.1.0";

OutputPipes* g_pipes = nullptr;

// gradlab_set_display_sink's hook: one bundle from gradlab::display on the worker thread.
extern "C" void display_sink(int n, const char* const* mimes, const char* const* payloads,
                             const unsigned long* sizes) {
  nl::json bundle = nl::json::object();
  for (int k = 0; k < n; ++k) bundle[mimes[k]] = std::string(payloads[k], sizes[k]);
  g_pipes->flush_streams();
  g_pipes->queue(&bundle);
}

// ---- the value of a trailing expression: filled by JIT code, read by the kernel ------------------
std::string g_result;
bool g_has_result = false;
extern "C" void xgradlab_set_result(const char* text, unsigned long size) {
  g_result.assign(text, size);
  g_has_result = true;
}

// A trailing expression's MIME bundle (gradlab::mime_bundle), set by the printer.
nl::json g_result_bundle;
extern "C" void xgradlab_set_result_bundle(int n, const char* const* mimes, const char* const* payloads,
                                           const unsigned long* sizes) {
  g_result_bundle = nl::json::object();
  for (int k = 0; k < n; ++k) g_result_bundle[mimes[k]] = std::string(payloads[k], sizes[k]);
  g_has_result = true;
}

std::atomic<bool> g_running_cell{false};
std::atomic<bool> g_interrupted{false};
// libgradlab's gradlab_request_interrupt / gradlab_clear_interrupt (core/interrupt.hpp), found
// with dlsym once the library is loaded: the next gradlab op or backward step of the running
// cell throws gradlab::InterruptedError, which the reply names KeyboardInterrupt.
std::atomic<void (*)()> g_request_interrupt{nullptr};
void (*g_clear_interrupt)() = nullptr;
extern "C" void on_sigint(int) {
  if (!g_running_cell.load()) return;
  g_interrupted.store(true);
  if (auto* request = g_request_interrupt.load()) request();  // one atomic store: signal-safe
}

// ---- a fault in a cell's code becomes an error reply -----------------------------------------------
// SIGSEGV, SIGBUS, SIGFPE and SIGILL raised on the worker thread while it runs a cell jump back
// (siglongjmp) to where the cell was started; on any other thread, or outside a cell, the signal
// kills the process as usual.
// NOTE: why this is acceptable: the jump leaves only the cell's own frames (JIT code and the
// ORC call that ran it) without unwinding them, as a crash would have ended them anyway. What may
// leak: the cell's locals are not destroyed (memory, open files), a lock the cell's code held
// stays held (a fault inside malloc or inside a gradlab op holding a mutex could make later cells
// hang), and a global the cell was initializing stays half-made. The error reply says so and
// suggests a restart; a notebook user keeps the variables of the earlier cells. A fault inside
// clang itself (while parsing) is caught the same way, but then the Interpreter's own state may
// be inconsistent: the reply asks for a restart.
thread_local sigjmp_buf* t_fault_jump = nullptr;  // set while the worker runs guarded code
thread_local volatile sig_atomic_t t_fault_signal = 0;
extern "C" void on_fault(int sig, siginfo_t*, void*) {
  if (t_fault_jump != nullptr) {
    t_fault_signal = sig;
    sigjmp_buf* to = t_fault_jump;
    t_fault_jump = nullptr;
    siglongjmp(*to, 1);
  }
  // Not a cell's fault: die as the signal would have made us die.
  signal(sig, SIG_DFL);
  raise(sig);
}
void install_fault_handlers() {
  struct sigaction sa {};
  sa.sa_sigaction = &on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigaction(sig, &sa, nullptr);
}
const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV (segmentation fault: an invalid memory access)";
    case SIGBUS: return "SIGBUS (bus error: a misaligned or unmapped access)";
    case SIGFPE: return "SIGFPE (arithmetic fault, e.g. an integer division by zero)";
    case SIGILL: return "SIGILL (illegal instruction)";
    default: return "a fatal signal";
  }
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
    // An alternate signal stack, so that a stack overflow (runaway recursion) in a cell can still
    // run on_fault.
    stack_t ss{};
    ss.ss_size = 1u << 16;
    ss.ss_sp = std::malloc(ss.ss_size);
    if (ss.ss_sp != nullptr) sigaltstack(&ss, nullptr);
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
  enum Kind { Ok, CompileError, Exception, Fault } kind = Ok;
  std::string ename, evalue;
  /// The part of the cell (rewrite_cell_parts) that failed in the kernel; npos when none did
  /// (it ran, or it failed to compile in the throw-away copy: then nothing of it ran).
  std::size_t part = std::string::npos;
};

class Kernel : public xeus::xinterpreter {
 public:
  Kernel() { xeus::register_interpreter(this); }

  /// `xgradlab --start-only`: starts the Interpreter as for Jupyter, runs one gradlab op and
  /// prints "xgradlab: ready in S s (precompiled|parsed); ones(3).sum() = 3"; exit status 0 when
  /// all went well. bench/bench_kernel_start times it (no Jupyter client needed).
  int start_only() {
    const auto t0 = std::chrono::steady_clock::now();
    std::string error;
    worker_.run([&] { error = start_interpreter(); }, [] {});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!error.empty()) {
      pipes_.log("could not start clang's Interpreter: " + error + "\n" + pipes_.drain(0) + pipes_.drain(1));
      return 1;
    }
    Outcome o;
    worker_.run([&] { o = parse_and_execute("std::cout << gradlab::ones({3}).sum().item<double>();"); },
                [] {});
    const std::string out = pipes_.drain(0);
    pipes_.log("ready in " + std::to_string(s) + " s (" + prelude_ + "); ones(3).sum() = " + out);
    return o.kind == Outcome::Ok && out == "3" ? 0 : 1;
  }

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
    pipes_.log("ready in " + std::to_string(s) + " s: libgradlab loaded, the prelude (gradlab.hpp) " +
               prelude_);
  }

  // Returns an error message, or "" when the interpreter is ready.
  std::string start_interpreter() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    g_pipes = &pipes_;
    // Compiler flags: C++17 (the xcpp17 kernel of xeus-cling), gradlab's headers, and any extra
    // flags from XGRADLAB_CXXFLAGS (space-separated, e.g. "-O2 -DNDEBUG").
    args_ = {"-std=c++17", "-resource-dir", XGRADLAB_RESOURCE_DIR, "-I" XGRADLAB_INCLUDE_DIR};
    bool extra_flags = false;
    if (const char* extra = std::getenv("XGRADLAB_CXXFLAGS")) {
      std::istringstream in(extra);
      for (std::string a; in >> a;) args_.push_back(a), extra_flags = true;
    }
    // The precompiled prelude, unless XGRADLAB_PCH=0, other flags, or it was not built.
    // XGRADLAB_PCH=<file> uses another PCH (the tests hand it a broken one).
    const std::string pch_env = std::getenv("XGRADLAB_PCH") ? std::getenv("XGRADLAB_PCH") : "";
    const std::string pch = pch_env.empty() || pch_env == "1" || pch_env == "0" ? XGRADLAB_PCH : pch_env;
    std::string why_not;
    if (pch_env == "0") why_not = "XGRADLAB_PCH=0";
    else if (extra_flags) why_not = "XGRADLAB_CXXFLAGS differ from the PCH's flags";
    else if (pch.empty()) why_not = "it was not built (no clang++-19 at configure time)";
    else if (access(pch.c_str(), R_OK) != 0 || access(XGRADLAB_PCH_LIBRARY, R_OK) != 0)
      why_not = pch + " or its library is missing (rebuild target xgradlab)";
    if (why_not.empty()) {
      std::vector<std::string> with_pch = args_;
      with_pch.insert(with_pch.end(), {"-include-pch", pch});
      const std::string error = create_interpreter(with_pch, true);
      if (error.empty()) {
        prelude_ = "precompiled";
        return {};
      }
      why_not = error;
      interp_.release();  // NOTE: leaked on purpose: a half-made Interpreter may crash in its destructor
    }
    pipes_.log("the precompiled prelude is not used (" + why_not + "); parsing the headers");
    prelude_ = "parsed";
    return create_interpreter(args_, false);
  }

  // Makes interp_ from `args`, loads the libraries and runs the prelude; "" when ready. A fault
  // inside clang (an unusable PCH can cause one) is an error, not the kernel's end.
  std::string create_interpreter(const std::vector<std::string>& args, bool precompiled) {
    sigjmp_buf jump;
    if (sigsetjmp(jump, 1) != 0) return std::string("clang faulted: ") + signal_name(t_fault_signal);
    t_fault_jump = &jump;
    struct Unguard {
      ~Unguard() { t_fault_jump = nullptr; }
    } unguard;
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    clang::IncrementalCompilerBuilder builder;
    builder.SetCompilerArgs(argv);
    auto ci = builder.CreateCpp();
    if (!ci) return llvm::toString(ci.takeError());
    auto interp = clang::Interpreter::create(std::move(*ci));
    if (!interp) return llvm::toString(interp.takeError());
    interp_ = std::move(*interp);
    std::vector<std::string> libs = {XGRADLAB_LIBRARY, XGRADLAB_DISPLAY_LIBRARY};
    if (precompiled) libs.push_back(XGRADLAB_PCH_LIBRARY);
    for (const std::string& lib : libs)
      if (llvm::Error e = interp_->LoadDynamicLibrary(lib.c_str()))
        return "loading " + lib + ": " + llvm::toString(std::move(e));
    if (void* lib = dlopen(XGRADLAB_LIBRARY, RTLD_LAZY | RTLD_NOLOAD)) {
      g_clear_interrupt = reinterpret_cast<void (*)()>(dlsym(lib, "gradlab_clear_interrupt"));
      g_request_interrupt = reinterpret_cast<void (*)()>(dlsym(lib, "gradlab_request_interrupt"));
    }
    if (g_request_interrupt.load() == nullptr || g_clear_interrupt == nullptr)
      return XGRADLAB_LIBRARY " has no gradlab_request_interrupt / gradlab_clear_interrupt "
             "(core/interrupt.hpp); hint: rebuild libgradlab from the same sources as the kernel";
    using SetSink = void (*)(decltype(&display_sink));
    void* dl = dlopen(XGRADLAB_DISPLAY_LIBRARY, RTLD_LAZY | RTLD_NOLOAD);
    auto* set_sink = dl ? reinterpret_cast<SetSink>(dlsym(dl, "gradlab_set_display_sink")) : nullptr;
    if (set_sink == nullptr) return XGRADLAB_DISPLAY_LIBRARY " has no gradlab_set_display_sink";
    set_sink(&display_sink);
    t_fault_jump = nullptr;
    std::ostringstream prelude;
    prelude << "#include \"" XGRADLAB_PRELUDE_HEADER "\"\n" << printer_code();
    const bool probe = probe_;
    probe_ = false;  // the prelude is the kernel's own code: no throw-away compile first
    Outcome o = parse_and_execute(prelude.str());
    probe_ = probe;
    if (o.kind != Outcome::Ok) return o.ename + ": " + o.evalue;
    return {};
  }

  // The printer a trailing expression is wrapped in: xgradlab_detail::show([]() -> decltype(auto)
  // { return (expr); }). Globals need no capture: every top-level variable of a cell is global.
  // A class value with a gradlab::mime_bundle form (found as gradlab's overloads or by ADL, for a
  // user's own type) is shown with all its MIME types; anything else as text/plain.
  static std::string printer_code() {
    std::ostringstream c;
    c << "namespace xgradlab_detail {\n"
         "template <class T, class = void> struct streamable : std::false_type {};\n"
         "template <class T> struct streamable<T, std::void_t<decltype(std::declval<std::ostream&>()"
         " << std::declval<const T&>())>> : std::true_type {};\n"
         "using gradlab::mime_bundle;\n"
         "template <class T, class = void> struct has_bundle : std::false_type {};\n"
         "template <class T> struct has_bundle<T, std::enable_if_t<std::is_class_v<T> && std::is_same_v<"
         "decltype(mime_bundle(std::declval<const T&>())), gradlab::MimeBundle>>> : std::true_type {};\n"
         "template <class T> void show_value(const T& v) {\n"
         "  if constexpr (has_bundle<std::decay_t<T>>::value) {\n"
         "    const gradlab::MimeBundle b = mime_bundle(v);\n"
         "    std::vector<const char*> m, p; std::vector<unsigned long> n;\n"
         "    for (const auto& kv : b.data) { m.push_back(kv.first.c_str()); p.push_back(kv.second.data());"
         " n.push_back(kv.second.size()); }\n"
         "    reinterpret_cast<void (*)(int, const char* const*, const char* const*, const unsigned long*)>("
      << reinterpret_cast<unsigned long long>(&xgradlab_set_result_bundle)
      << "ull)(static_cast<int>(m.size()), m.data(), p.data(), n.data());\n"
         "    return;\n"
         "  }\n"
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

  // On the worker thread: one input through the Interpreter; C++ exceptions are caught here,
  // and a fault (SIGSEGV, ...) in the cell's code ends the cell (see on_fault).
  Outcome parse_and_execute(const std::string& code) {
    return parse_and_execute(std::vector<std::string>{code});
  }
  // A rewritten cell's parts (cell_rewrite.hpp, "Order"): all are compiled first (probe_compile),
  // then each is parsed and run before the next is parsed; the first that fails ends the cell,
  // and the parts before it stay run (a script stopped at an error). o.part says which failed.
  Outcome parse_and_execute(const std::vector<std::string>& parts) {
    Outcome o;
    sigjmp_buf jump;
    // NOTE: `volatile`: read after siglongjmp, so they must not live in a register.
    volatile bool parsing = true;
    volatile std::size_t k = 0;
    if (sigsetjmp(jump, 1) != 0) {
      o.kind = Outcome::Fault;
      o.part = k;
      o.ename = "SegmentationFault";
      if (t_fault_signal == SIGFPE) o.ename = "FloatingPointError";
      if (t_fault_signal != SIGSEGV && t_fault_signal != SIGFPE) o.ename = "FatalSignal";
      o.evalue = std::string(signal_name(t_fault_signal)) +
                 (parsing
                      ? " inside clang while it compiled the cell; the interpreter may be in an "
                        "inconsistent state. hint: restart the kernel, and report the cell"
                      : " in the cell's code; the kernel lives on, but the cell's locals leaked and "
                        "a lock it held may stay held. hint: restart the kernel if later cells hang");
      pipes_.flush_streams();
      return o;
    }
    if (probe_ && !probe_compile(parts, &o)) return o;
    t_fault_jump = &jump;
    try {
      for (; k < parts.size() && o.kind == Outcome::Ok; k = k + 1) {
        o.part = k;
        parsing = true;
        llvm::Expected<clang::PartialTranslationUnit&> ptu = interp_->Parse(parts[k]);
        if (!ptu) {
          o.kind = Outcome::CompileError;
          o.ename = "CompilationError";
          o.evalue = llvm::toString(ptu.takeError());
        } else {
          parsing = false;
          if (llvm::Error e = interp_->Execute(*ptu)) {
            // The JIT could not link the part (a symbol missing): take its declarations back, so
            // that a corrected cell can define them again.
            o.kind = Outcome::CompileError;
            o.ename = "CompilationError";
            o.evalue = llvm::toString(std::move(e));
            if (llvm::Error u = interp_->Undo()) llvm::consumeError(std::move(u));
            absorb_failed_initializer();
          }
        }
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
    t_fault_jump = nullptr;
    pipes_.flush_streams();
    return o;
  }

  // NOTE: after a JIT link error ORC keeps the failed module's initializer queued, and the next
  // Execute tried to run it and failed too ("Failed to materialize symbols: { (main, {
  // __orc_init_func.incr_module_N }) }"): the cell after an undefined function was lost as
  // well. An empty input executed right away takes that failure instead.
  void absorb_failed_initializer() {
    llvm::Expected<clang::PartialTranslationUnit&> empty = interp_->Parse(";");
    if (!empty) {
      llvm::consumeError(empty.takeError());
      return;
    }
    if (llvm::Error e = interp_->Execute(*empty)) {
      llvm::consumeError(std::move(e));
      if (llvm::Error u = interp_->Undo()) llvm::consumeError(std::move(u));
    }
  }

  // NOTE: clang 19 trap: when a cell fails to parse, the Interpreter drops its declarations from
  // name lookup, but what its parse instantiated stays marked as done (std::make_shared<Net>,
  // std::vector<float>::push_back) while the code made for it is thrown away: a later cell that
  // uses them fails with "JIT session error: Symbols not found", and globals of the failed cell
  // come back as "Duplicate definition of symbol". Parsing an empty input after the failure does
  // not help (tried). And clang itself can crash on some input (a capturing lambda at namespace
  // scope did, before cell_rewrite).
  // So each cell is first compiled in a fork()ed child, a throw-away copy of the kernel that
  // owns a copy of the Interpreter: only when the child compiles it does this process parse it
  // (clang is deterministic: same state, same input, same result), so a failed or crashing
  // compile never touches the kernel's state. The child runs nothing (Parse: parse + IR, no
  // JIT). Cost: each cell is parsed twice, plus a fork (copy-on-write; about 10 ms).
  // The child is forked from the worker thread, the only thread that uses clang and LLVM, while
  // it holds no lock of theirs; glibc makes malloc safe after fork; the child touches no zmq.
  // Returns true when the cell compiles; otherwise fills `o` (its diagnostics went to stderr).
  bool probe_compile(const std::vector<std::string>& parts, Outcome* o) {
    pipes_.flush_streams();
    int msg[2];
    FILE* diag = std::tmpfile();
    if (pipe(msg) != 0 || diag == nullptr) {
      if (diag != nullptr) std::fclose(diag);
      return true;  // no probe: parse in place, as without one
    }
    const pid_t pid = fork();
    if (pid == 0) {
      close(msg[0]);
      for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) signal(sig, SIG_DFL);
      // Diagnostics go to a file; they reach the cell's stderr only when the compile fails
      // (otherwise the kernel's own parse prints its warnings once).
      const int cell_err = dup(STDERR_FILENO);
      dup2(fileno(diag), STDERR_FILENO);
      // The parts one after the other, as the kernel will parse them (each sees the ones before).
      bool ok = true;
      std::string text;
      for (const std::string& part : parts) {
        llvm::Expected<clang::PartialTranslationUnit&> ptu = interp_->Parse(part);
        if (!ptu) {
          text = llvm::toString(ptu.takeError());
          ok = false;
          break;
        }
      }
      llvm::errs().flush();
      std::fflush(stderr);
      if (!ok) {
        char buf[1 << 14];
        lseek(fileno(diag), 0, SEEK_SET);
        for (ssize_t got; (got = read(fileno(diag), buf, sizeof buf)) > 0;)
          if (write(cell_err, buf, static_cast<std::size_t>(got)) < 0) break;
      }
      for (std::size_t at = 0; at < text.size();) {
        const ssize_t put = write(msg[1], text.data() + at, text.size() - at);
        if (put <= 0) break;
        at += static_cast<std::size_t>(put);
      }
      std::_Exit(ok ? 0 : 1);
    }
    close(msg[1]);
    std::fclose(diag);
    if (pid < 0) {
      close(msg[0]);
      return true;
    }
    // NOTE: clang 19 can also loop forever on malformed input (after "too many errors emitted"
    // it kept emitting diagnostics); so the child gets compile_timeout_s_, and an interrupt
    // stops it too.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(compile_timeout_s_);
    int status = 0;
    bool stopped = false;
    for (;;) {
      const pid_t done = waitpid(pid, &status, WNOHANG);
      if (done == pid || (done < 0 && errno != EINTR)) break;
      if (std::chrono::steady_clock::now() > deadline || g_interrupted.load()) {
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        stopped = true;
        break;
      }
      usleep(5000);
    }
    std::string text;
    fcntl(msg[0], F_SETFL, fcntl(msg[0], F_GETFL) | O_NONBLOCK);
    char buf[4096];
    for (ssize_t got; (got = read(msg[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(got));
    close(msg[0]);
    if (!stopped && WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
    o->kind = Outcome::CompileError;
    o->ename = "CompilationError";
    if (stopped && g_interrupted.load()) {
      o->ename = "KeyboardInterrupt";
      o->evalue = "interrupted while clang compiled the cell; nothing of it ran, and the kernel's "
                  "state is unchanged";
    } else if (stopped) {
      o->evalue = "clang did not finish compiling this cell within " +
                  std::to_string(compile_timeout_s_) +
                  " s (clang 19 loops on some malformed input), so the compile was stopped; the "
                  "kernel's state is unchanged. hint: check the cell's brackets and strings; "
                  "XGRADLAB_COMPILE_TIMEOUT=<seconds> gives a long compile more time";
    } else if (WIFSIGNALED(status)) {
      o->evalue = std::string("clang crashed while compiling this cell (") +
                  strsignal(WTERMSIG(status)) +
                  "); it was compiled in a throw-away copy of the kernel, so the kernel and its "
                  "variables are unchanged. hint: move the code into a function, and report the cell";
    } else {
      o->evalue = text.empty() ? "the cell does not compile" : text;
    }
    return false;
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
    // A cell that ends inside an open bracket, string or comment, or closes a bracket it did not
    // open, is refused before clang sees it (clang 19 looped forever on a lone "{").
    if (const CellScan scan = scan_cell(code);
        scan.depth > 0 || scan.open_literal || scan.min_depth < 0) {
      Outcome bad;
      bad.kind = Outcome::CompileError;
      bad.ename = "CompilationError";
      if (scan.min_depth < 0) {
        bad.evalue = "the cell has a closing bracket ) ] } without an opening one; expected "
                     "balanced brackets. hint: look for a stray '}' (a block closed twice?)";
      } else {
        const std::string what = scan.open_literal
                                     ? "a string, character literal or comment"
                                     : std::to_string(scan.depth) + " bracket(s) ( [ {";
        bad.evalue = "the cell is incomplete: it ends inside " + what +
                     " that is not closed; expected a complete cell. hint: close it, or join "
                     "this cell with the next one";
      }
      return error_reply(bad, silent);
    }
    std::string source = code;
    // The trailing expression: the last chunk when it is an expression without `;` (see
    // cell_rewrite.hpp), in a complete cell.
    std::size_t prefix_end = std::string::npos;
    if (completeness(code) == "complete") prefix_end = trailing_expression_begin(code);
    const std::string expr = prefix_end == std::string::npos ? "" : code.substr(prefix_end);
    if (!expr.empty()) {
      // Lines keep their numbers in diagnostics: the wrapper starts on the expression's line.
      source = code.substr(0, prefix_end) + " xgradlab_detail::show([]() -> decltype(auto) { return (" +
               expr + "\n); });";
    }
    // Statements into wrapper functions, lambda initializers into init functions, and the cell
    // into parts run one after the other (see cell_rewrite.hpp); the serial number keeps the
    // generated names unique.
    const std::vector<std::string> parts =
        rewrite_ ? rewrite_cell_parts(source, ++cell_serial_) : std::vector<std::string>{source};
    std::string stderr_text;  // kept to find the compiler's first error line
    auto publish = [&] {
      for (OutputPipes::Event& e : pipes_.take_events()) {
        if (e.stream == "stderr") stderr_text += e.text;
        if (silent) continue;
        if (!e.stream.empty()) {
          publish_stream(e.stream, e.text);
        } else {
          display_data(std::move(e.bundle), nl::json::object(), nl::json::object());
        }
      }
    };
    Outcome o;
    g_has_result = false;
    g_result_bundle = nullptr;
    g_interrupted = false;
    g_clear_interrupt();
    g_running_cell = true;
    worker_.run([&] { o = parse_and_execute(parts); }, publish);
    g_running_cell = false;
    g_clear_interrupt();  // a request no safe point saw must not stop the next cell
    publish();
    if (o.kind == Outcome::Exception && o.ename == "gradlab::InterruptedError") {
      o.ename = "KeyboardInterrupt";
    } else if (g_interrupted) {
      const std::string note =
          "xgradlab: interrupt received, but the cell ran no gradlab op or backward step after it "
          "(those are where a cell stops), so it ran to its end; restart the kernel to stop other "
          "runaway code\n";
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
      std::vector<std::string> notes;
      if (o.part != std::string::npos && parts.size() > 1) {
        // Where the script stopped: the failed part's first line of code.
        const std::string& p = parts[o.part];
        const std::size_t first = p.find_first_not_of(" \t\r\n");
        const auto code_at = p.begin() + static_cast<long>(first == std::string::npos ? 0 : first);
        const long line = 1 + std::count(p.begin(), code_at, '\n');
        notes.push_back("note: the cell stopped in its code from line " + std::to_string(line) +
                        (o.part > 0 ? "; the code above it ran (its variables are defined)" : "") +
                        (o.part + 1 < parts.size() ? "; the code after it did not run (its names "
                                                     "are not defined)" : ""));
      }
      if (const std::string missing = missing_symbols(o.evalue); !missing.empty()) {
        notes.push_back("hint: " + missing + " is declared but not defined when this code runs; a "
                        "cell runs top to bottom, so define it above the code that uses it (or "
                        "in an earlier cell)");
      }
      return error_reply(o, silent, notes);
    }
    if (g_has_result && !silent) {
      nl::json data = g_result_bundle.is_object() ? g_result_bundle : nl::json::object();
      if (!g_result_bundle.is_object()) data["text/plain"] = g_result;
      publish_execution_result(execution_counter, std::move(data), nl::json::object());
    }
    nl::json reply;
    reply["status"] = "ok";
    reply["payload"] = nl::json::array();
    reply["user_expressions"] = nl::json::object();
    return reply;
  }

  // The readable names in a JIT error's "Symbols not found: [ _Z5lateri ]" ("later(int)"), or "".
  static std::string missing_symbols(const std::string& evalue) {
    const std::string key = "Symbols not found: [";
    const std::size_t at = evalue.find(key);
    const std::size_t end = at == std::string::npos ? at : evalue.find(']', at);
    if (end == std::string::npos) return {};
    std::istringstream names(evalue.substr(at + key.size(), end - at - key.size()));
    std::string out;
    for (std::string name; names >> name;)
      out += (out.empty() ? "" : ", ") + gradlab::demangle(name.c_str());
    return out;
  }

  nl::json error_reply(const Outcome& o, bool silent, const std::vector<std::string>& notes = {}) {
    std::vector<std::string> traceback = {o.ename + ": " + o.evalue};
    traceback.insert(traceback.end(), notes.begin(), notes.end());
    if (!silent) publish_execution_error(o.ename, o.evalue, traceback);
    nl::json reply;
    reply["status"] = "error";
    reply["ename"] = o.ename;
    reply["evalue"] = o.evalue;
    reply["traceback"] = traceback;
    return reply;
  }

  // ---- the other requests -----------------------------------------------------------------------
  // Runs `job` in a fork()ed copy of the kernel on the worker thread (the only one that uses
  // clang), returning what it wrote; "" when it crashed or ran past `timeout_s`.
  std::string run_forked(const std::function<std::string()>& job, int timeout_s) {
    std::string text;
    worker_.run(
        [&] {
          pipes_.flush_streams();
          int msg[2];
          if (pipe(msg) != 0) return;
          const pid_t pid = fork();
          if (pid == 0) {
            close(msg[0]);
            for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) signal(sig, SIG_DFL);
            const int null = open("/dev/null", O_WRONLY);
            dup2(null, STDOUT_FILENO);  // clang's diagnostics of the probe are not the user's
            dup2(null, STDERR_FILENO);
            const std::string out = job();
            for (std::size_t at = 0; at < out.size();) {
              const ssize_t put = write(msg[1], out.data() + at, out.size() - at);
              if (put <= 0) break;
              at += static_cast<std::size_t>(put);
            }
            std::_Exit(0);
          }
          close(msg[1]);
          if (pid < 0) {
            close(msg[0]);
            return;
          }
          fcntl(msg[0], F_SETFL, fcntl(msg[0], F_GETFL) | O_NONBLOCK);
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
          int status = 0;
          char buf[1 << 14];
          for (;;) {
            for (ssize_t got; (got = read(msg[0], buf, sizeof buf)) > 0;)
              text.append(buf, static_cast<std::size_t>(got));
            const pid_t done = waitpid(pid, &status, WNOHANG);
            if (done == pid || (done < 0 && errno != EINTR)) break;
            if (std::chrono::steady_clock::now() > deadline) {
              kill(pid, SIGKILL);
              while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
              }
              text.clear();
              break;
            }
            usleep(2000);
          }
          for (ssize_t got; (got = read(msg[0], buf, sizeof buf)) > 0;)
            text.append(buf, static_cast<std::size_t>(got));
          close(msg[0]);
          if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) text.clear();
        },
        [] {});
    return text;
  }

  nl::json complete_request_impl(const std::string& code, int cursor_pos) override {
    // clang's code completion (introspect.hpp); one match per line from the forked copy, the
    // first line being the prefix's length in bytes.
    const std::size_t cursor = byte_offset(code, cursor_pos);
    const std::string text = run_forked(
        [&] {
          const Completion c = complete(*interp_, code, cursor);
          std::string out = std::to_string(c.prefix_bytes) + "\n";
          for (const std::string& m : c.matches) out += m + "\n";
          return out;
        },
        20);
    nl::json r;
    r["status"] = "ok";
    r["matches"] = nl::json::array();
    std::size_t prefix = 0;
    std::istringstream lines(text);
    std::string line;
    if (std::getline(lines, line)) prefix = std::min<std::size_t>(std::stoul("0" + line), cursor);
    while (std::getline(lines, line))
      if (!line.empty()) r["matches"].push_back(line);
    r["cursor_start"] = code_points(code, cursor - prefix);
    r["cursor_end"] = cursor_pos;
    r["metadata"] = nl::json::object();
    return r;
  }
  nl::json inspect_request_impl(const std::string& code, int cursor_pos, int /*detail_level*/) override {
    const std::size_t cursor = byte_offset(code, cursor_pos);
    const std::string text = run_forked(
        [&] {
          const Inspection i = inspect(*interp_, code, cursor);
          return i.found ? i.text : std::string();
        },
        20);
    nl::json r;
    r["status"] = "ok";
    r["found"] = !text.empty();
    r["data"] = nl::json::object();
    if (!text.empty()) r["data"]["text/plain"] = text;
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
                  "libgradlab is loaded and <gradlab/gradlab.hpp> included (" + prelude_ + ")";
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
  std::string prelude_;  // "precompiled" or "parsed"
  unsigned cell_serial_ = 0;
  // XGRADLAB_REWRITE=0 hands cells to clang as written (to reproduce clang 19's crashes; the
  // kernel test uses it to check that the probe survives one).
  bool rewrite_ = [] {
    const char* v = std::getenv("XGRADLAB_REWRITE");
    return v == nullptr || std::string(v) != "0";
  }();
  // Seconds the fork()ed compile may take (XGRADLAB_COMPILE_TIMEOUT; 120 by default).
  int compile_timeout_s_ = [] {
    const char* v = std::getenv("XGRADLAB_COMPILE_TIMEOUT");
    const int sec = v != nullptr ? std::atoi(v) : 0;
    return sec > 0 ? sec : 120;
  }();
  // Compile each cell in a fork()ed child first (see probe_compile); XGRADLAB_PROBE=0 turns it off.
  bool probe_ = [] {
    const char* v = std::getenv("XGRADLAB_PROBE");
    return v == nullptr || std::string(v) != "0";
  }();
};

}  // namespace
}  // namespace xgradlab

int main(int argc, char* argv[]) {
  if (xeus::should_print_version(argc, argv)) {
    std::cout << "xgradlab " << xgradlab::kVersion << "\n";
    return 0;
  }
  if (argc == 2 && std::string(argv[1]) == "--start-only") {
    xgradlab::install_fault_handlers();
    xgradlab::Kernel k;
    const int rc = k.start_only();
    std::fflush(nullptr);
    std::_Exit(rc);
  }
  const std::string file = xeus::extract_filename(argc, argv);
  if (file.empty()) {
    std::cerr << "usage: xgradlab -f <connection file>   (Jupyter starts it; see "
                 "tools/install_kernel.sh)\n"
                 "       xgradlab --start-only           (start, run one op, exit: start-up time)\n";
    return 2;
  }
  std::signal(SIGINT, xgradlab::on_sigint);
  xgradlab::install_fault_handlers();
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
