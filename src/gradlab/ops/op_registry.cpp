// The registry behind autograd::registered_ops(): every Op<T> instantiation adds its kName when
// the program (or libgradlab) is loaded, so tests can see every op struct that exists.

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gradlab/ops/op.hpp"

namespace gradlab::autograd {

namespace {
struct Registry {
  std::mutex mu;
  std::set<std::string> names;
};
Registry& registry() {
  static Registry r;  // function-local: safe from static-initialization order
  return r;
}
}  // namespace

bool register_op(const char* name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.names.insert(name);
  return true;
}

std::vector<std::string> registered_ops() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return {r.names.begin(), r.names.end()};
}

}  // namespace gradlab::autograd
