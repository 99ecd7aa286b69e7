// The fixture of tools/make_lesson_figures.py --check: draws y = (x / 20)^p for x = 0..20
// (p from $GRADLAB_FIGURES_FIXTURE_SLOPE, default 1: a straight line) as figures/curve.png. Its
// committed figure has p = 1, so p = 3 (a cubic: another shape, the axes scale to the data either
// way) must be reported stale (ctest lesson_figures_checker_*).
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/figures.hpp"

int main() {
  const char* env = std::getenv("GRADLAB_FIGURES_FIXTURE_SLOPE");
  const double p = env ? std::stod(env) : 1.0;
  std::vector<double> ys;
  for (int x = 0; x <= 20; ++x) ys.push_back(std::pow(x / 20.0, p));
  lesson::figure("curve.png", gradlab::mime_bundle(gradlab::curve_plot({{"y = (x / 20)^p", ys, {}}}, "y")));
  return 0;
}
