#include "gradlab/train/history.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <limits>
#include <ostream>
#include <sstream>

#include "gradlab/core/error.hpp"

namespace gradlab::train {

std::ostream& operator<<(std::ostream& os, const StepRecord& r) {
  std::ostringstream s;
  s << "epoch " << r.epoch << "  step " << r.step << "  loss " << std::fixed << std::setprecision(4)
    << r.loss << "  grad_norm " << std::setprecision(3) << r.grad_norm << "  lr "
    << std::defaultfloat << std::setprecision(4) << r.lr;
  return os << s.str();
}

const StepRecord& History::back() const {
  GRADLAB_CHECK(!records_.empty(), ValueError, "History::back", "the history is empty",
                "at least one record", "0");
  return records_.back();
}

double History::mean_loss(int64_t epoch) const {
  double s = 0;
  int64_t n = 0;
  for (const auto& r : records_)
    if (r.epoch == epoch) s += r.loss, ++n;
  return n ? s / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

double History::max_grad_norm() const {
  double m = 0;
  for (const auto& r : records_) m = std::max(m, r.grad_norm);
  return m;
}

double History::max_grad_norm(int64_t epoch) const {
  double m = 0;
  for (const auto& r : records_)
    if (r.epoch == epoch) m = std::max(m, r.grad_norm);
  return m;
}

std::string History::to_csv() const {
  std::ostringstream os;
  os << "epoch,step,loss,grad_norm,lr\n" << std::setprecision(17);
  for (const auto& r : records_)
    os << r.epoch << ',' << r.step << ',' << r.loss << ',' << r.grad_norm << ',' << r.lr << '\n';
  return os.str();
}

void History::write_csv(const std::string& path) const {
  std::ofstream f(path);
  GRADLAB_CHECK(f.good(), IOError, "History::write_csv", "cannot open the file for writing",
                "a writable path", path);
  f << to_csv();
  GRADLAB_CHECK(f.good(), IOError, "History::write_csv", "writing failed", "a complete file", path);
}

}  // namespace gradlab::train
