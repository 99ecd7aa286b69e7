#include "gradlab/train/history.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <iomanip>
#include <limits>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gradlab/core/error.hpp"
#include "gradlab/io/atomic_file.hpp"

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

namespace {

nlohmann::json config_json(const std::map<std::string, HParam>& config) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : config) {
    if (const double* d = std::get_if<double>(&v.value)) {
      if (std::trunc(*d) == *d && std::abs(*d) < 9007199254740992.0)  // 2^53: exact
        j[k] = static_cast<int64_t>(*d);                            // 64, not 64.0
      else
        j[k] = *d;
    }
    else if (const std::string* s = std::get_if<std::string>(&v.value))
      j[k] = *s;
    else
      j[k] = std::get<bool>(v.value);
  }
  return j;
}

// Crash-safe: the previous file stays until the new one is complete (io/atomic_file.hpp).
void write_atomically(const std::filesystem::path& path, const std::string& text) {
  io::write_file_atomic(path, [&](io::FileWriter& w) { w.write(text.data(), text.size()); });
}

}  // namespace

std::string History::to_csv() const {
  std::ostringstream os;
  if (run_info_) {
    os << "# seed: " << (run_info_->seed() ? std::to_string(*run_info_->seed()) : "unknown") << "\n"
       << "# git_commit: " << run_info_->commit() << "\n"
       << "# config: " << config_json(run_info_->config()).dump() << "\n";
  }
  os << "epoch,step,loss,grad_norm,lr\n" << std::setprecision(17);
  for (const auto& r : records_)
    os << r.epoch << ',' << r.step << ',' << r.loss << ',' << r.grad_norm << ',' << r.lr << '\n';
  return os.str();
}

std::string History::to_json(const std::string& csv_name) const {
  nlohmann::json j;
  j["seed"] = nullptr;
  if (run_info_ && run_info_->seed()) j["seed"] = *run_info_->seed();
  j["git_commit"] = run_info_ ? run_info_->commit() : git_commit();
  j["config"] = run_info_ ? config_json(run_info_->config()) : nlohmann::json::object();
  j["steps"] = records_.size();
  if (!csv_name.empty()) j["csv"] = csv_name;
  return j.dump(2) + "\n";
}

void History::write_csv(const std::string& path) const {
  const std::filesystem::path p(path);
  write_atomically(p, to_csv());
  if (run_info_) {
    std::filesystem::path json = p;
    json.replace_extension(".json");
    write_atomically(json, to_json(p.filename().string()));
  }
}

}  // namespace gradlab::train
