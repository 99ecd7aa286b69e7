// Built against an installed gradlab (see checks/install/run_install_test.cmake).
#include <gradlab/gradlab.hpp>

#include <cstdio>

int main() {
  gradlab::Tensor t = gradlab::ones({2, 2});
  float s = t.sum().item<float>();
  std::printf("gradlab::ones({2, 2}).sum() = %g\n", static_cast<double>(s));
  if (s != 4.0F) {
    std::fprintf(stderr, "install_consumer: expected 4, got %g\n", static_cast<double>(s));
    return 1;
  }
  return 0;
}
