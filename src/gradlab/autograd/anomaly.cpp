#include "gradlab/autograd/anomaly.hpp"

#include <cmath>
#include <sstream>
#include <string_view>

namespace gradlab::autograd {

TensorStats tensor_stats(const Tensor& t) {
  TensorStats s;
  s.numel = t.numel();
  bool any = false;
  for (double v : t.to_vector<double>()) {
    if (std::isnan(v)) ++s.nan;
    else if (std::isinf(v)) (v > 0 ? s.pos_inf : s.neg_inf)++;
    else {
      s.min = any ? std::min(s.min, v) : v;
      s.max = any ? std::max(s.max, v) : v;
      any = true;
    }
  }
  return s;
}

std::string inside_module(const Site& op_site, const Site& module_site) {
  if (!module_site.known()) return "";
  const bool same = module_site.loc.line() == op_site.loc.line() &&
                    std::string_view(module_site.loc.file_name()) == op_site.loc.file_name();
  return same ? "" : ", inside a module called at " + module_site.str();
}

std::string TensorStats::str(const Tensor& t) const {
  std::ostringstream os;
  os << "shape " << shape_str(t.sizes()) << " " << to_string(t.dtype()) << ", min " << min << ", max " << max
     << ", nan " << nan << ", +inf " << pos_inf << ", -inf " << neg_inf;
  return os.str();
}

}  // namespace gradlab::autograd
