// The registries behind ops/op.hpp: the names of every op struct (autograd::registered_ops():
// every Op<T> instantiation adds its kName when the program or libgradlab is loaded, so tests can
// see every op struct that exists), and the backward overrides of testing/mutants.hpp.
//
// Both live here, in the library, not in header-template statics: a static member of Op<T> would
// exist once per shared object (libgradlab.so and a test executable each instantiate Op<T>), so
// an override installed by a test would not be seen by the nodes the library records.

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <typeindex>
#include <vector>

#include "gradlab/ops/op.hpp"

namespace gradlab::autograd {

namespace {
struct Registry {
  std::mutex mu;
  std::set<std::string> names;
  std::vector<OpInfo> infos;
};
Registry& registry() {
  static Registry r;  // function-local: safe from static-initialization order
  return r;
}
}  // namespace

bool register_op(const OpInfo& info) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.names.insert(info.name);
  r.infos.push_back(info);
  return true;
}

std::vector<OpInfo> registered_op_infos() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.infos;
}

std::vector<std::string> registered_ops() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return {r.names.begin(), r.names.end()};
}

// ---- backward overrides ----------------------------------------------------------------------

namespace detail {

std::atomic<int> backward_overrides_installed{0};

namespace {
struct Overrides {
  std::mutex mu;
  // By op struct type (type_index compares the mangled name, so the library and a test program
  // agree on a named type); the last installed one wins, others wait underneath it.
  std::map<std::type_index, std::vector<std::shared_ptr<const BackwardFn>>> by_op;
};
Overrides& overrides() {
  static Overrides o;
  return o;
}
}  // namespace

std::shared_ptr<const BackwardFn> find_backward_override(const std::type_info& op) {
  Overrides& o = overrides();
  std::lock_guard<std::mutex> lock(o.mu);
  auto it = o.by_op.find(std::type_index(op));
  return it == o.by_op.end() || it->second.empty() ? nullptr : it->second.back();
}

void install_backward_override(const std::type_info& op, std::shared_ptr<const BackwardFn> fn) {
  Overrides& o = overrides();
  std::lock_guard<std::mutex> lock(o.mu);
  o.by_op[std::type_index(op)].push_back(std::move(fn));
  backward_overrides_installed.fetch_add(1, std::memory_order_relaxed);
}

void remove_backward_override(const std::type_info& op, const BackwardFn* fn) {
  Overrides& o = overrides();
  std::lock_guard<std::mutex> lock(o.mu);
  auto it = o.by_op.find(std::type_index(op));
  if (it == o.by_op.end()) return;
  auto& v = it->second;
  for (auto k = v.begin(); k != v.end(); ++k) {
    if (k->get() != fn) continue;
    v.erase(k);
    backward_overrides_installed.fetch_sub(1, std::memory_order_relaxed);
    break;
  }
  if (v.empty()) o.by_op.erase(it);
}

}  // namespace detail

// ---- the tracer's hook (ops/trace_hook.hpp) ---------------------------------------------------

namespace detail {

std::atomic<int> tracers_active{0};

namespace {
struct ThreadTracer {
  TraceSink sink = nullptr;
  void* tracer = nullptr;
  int depth = 0;  // record() calls in flight on this thread while tracing
};
thread_local ThreadTracer t_tracer;
}  // namespace

bool trace_enter() {
  if (t_tracer.sink == nullptr || t_tracer.depth != 0) return false;
  ++t_tracer.depth;
  return true;
}
void trace_leave() { --t_tracer.depth; }
bool trace_in_op() { return t_tracer.depth != 0; }
void trace_call(TracedCall&& call) {
  if (t_tracer.sink != nullptr) t_tracer.sink(t_tracer.tracer, std::move(call));
}
void set_trace_sink(TraceSink sink, void* tracer) {
  t_tracer.sink = sink;
  t_tracer.tracer = tracer;
  t_tracer.depth = 0;
}

}  // namespace detail

}  // namespace gradlab::autograd
