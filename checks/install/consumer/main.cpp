// Built against an installed gradlab (see checks/install/run_install_test.cmake).
#include <gradlab/gradlab.hpp>
#include <gradlab/testing.hpp>  // installed too: gradcheck below

#include <cstdio>

int main() {
  gradlab::Tensor t = gradlab::ones({2, 2});
  float s = t.sum().item<float>();
  std::printf("gradlab::ones({2, 2}).sum() = %g\n", static_cast<double>(s));
  if (s != 4.0F) {
    std::fprintf(stderr, "install_consumer: expected 4, got %g\n", static_cast<double>(s));
    return 1;
  }
  gradlab::Tensor x = gradlab::randn({3}, gradlab::dtype(gradlab::kFloat64).requires_grad(true));
  const auto report = gradlab::testing::gradcheck(
      [](const gradlab::TensorList& in) { return gradlab::TensorList{(in[0] * in[0]).sum()}; }, {x},
      gradlab::testing::GradcheckOptions().raise_exception(false));
  std::printf("gradcheck of sum(x * x): %s\n", report.ok ? "passed" : "failed");
  if (!report.ok) {
    std::fprintf(stderr, "install_consumer: %s", report.text().c_str());
    return 1;
  }
  // The installed data (share/gradlab/data), found without GRADLAB_DATA_DIR or a ./data folder.
  const auto digits = gradlab::data::load_digits_split();
  std::printf("data_dir: %s\n", gradlab::data::data_dir().string().c_str());
  std::printf("digits: %lld training rows\n", static_cast<long long>(digits.train.data().size(0)));
  return digits.train.data().size(0) > 1000 ? 0 : 1;
}
