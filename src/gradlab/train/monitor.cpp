#include "gradlab/train/monitor.hpp"

#include <cmath>
#include <iostream>
#include <sstream>

namespace gradlab::train {
namespace {

std::string num(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

}  // namespace

Monitor::Monitor(RunInfo run, MonitorOptions options)
    : Monitor(std::move(run), std::move(options), std::cout) {}

Monitor::Monitor(RunInfo run, MonitorOptions options, std::ostream& out)
    : out_(out), opt_(std::move(options)) {
  GRADLAB_CHECK(opt_.watch_warmup() >= 1 && opt_.watch_factor() > 1, ValueError, "Monitor",
                "bad grad-norm watch settings", "watch_warmup >= 1 and watch_factor > 1",
                "warmup " + std::to_string(opt_.watch_warmup()) + ", factor " +
                    num(opt_.watch_factor()));
  if (!opt_.log_dir().empty()) {
    writer_ = std::make_unique<SummaryWriter>(opt_.log_dir());
    // the run's identity as text too, so it shows in TensorBoard's Text tab
    std::string text = "seed: " + (run.seed() ? std::to_string(*run.seed()) : "unknown") +
                       "  \ngit_commit: " + run.commit();
    for (const auto& [k, v] : run.config()) text += "  \n" + k + ": " + v.str();
    writer_->add_text("run", text, 0);
  }
  history_.set_run_info(std::move(run));
  if (opt_.progress())
    bar_ = std::make_unique<ProgressBar>(opt_.total_steps(), opt_.progress_options(), out_);
}

Monitor::~Monitor() {
  try {
    close();
  } catch (...) {  // NOTE: a destructor must not throw; call close() to see write errors
  }
}

void Monitor::add_scalar(const std::string& tag, double value, int64_t step) {
  if (writer_) writer_->add_scalar(tag, value, step);
}

void Monitor::save() {
  if (!opt_.csv_path().empty()) history_.write_csv(opt_.csv_path());
  if (writer_) writer_->flush();
}

void Monitor::step(const StepRecord& r) {
  GRADLAB_CHECK(!closed_, ValueError, "Monitor::step", "the monitor is closed",
                "an open Monitor", "closed");
  history_.add(r);
  if (writer_) {
    writer_->add_scalar("loss", r.loss, r.step);
    writer_->add_scalar("grad_norm", r.grad_norm, r.step);
    writer_->add_scalar("lr", r.lr, r.step);
  }
  if (bar_) bar_->update(r.loss);

  if (!std::isfinite(r.loss)) {
    const std::string what = error_message(
        "Monitor::step", "the loss is not finite", "a finite loss",
        num(r.loss) + " at step " + std::to_string(r.step) + " (epoch " +
            std::to_string(r.epoch) + ")",
        "lower the lr, clip the gradients, or find where the NaN is born with "
        "DetectAnomalyGuard (lesson 13); the records up to this step are saved");
    if (bar_) bar_->write("stopped: " + what.substr(0, what.find("; hint")));
    save();
    if (bar_) bar_->close();
    closed_ = true;
    if (writer_) writer_->close();
    throw NonFiniteLossError(what);
  }

  // the grad-norm watch
  if (seen_ < opt_.watch_warmup()) {
    baseline_ = std::max(baseline_, r.grad_norm);
  } else if (!watch_fired_at_ &&
             (!std::isfinite(r.grad_norm) || r.grad_norm > opt_.watch_factor() * baseline_)) {
    watch_fired_at_ = r.step;
    const std::string msg = "grad-norm watch: |grad| " + num(r.grad_norm) + " > " +
                            num(opt_.watch_factor()) + " x " + num(baseline_) +
                            " (the largest of the first " + std::to_string(opt_.watch_warmup()) +
                            " steps) at step " + std::to_string(r.step);
    if (bar_)
      bar_->write(msg);
    else
      out_ << msg << "\n";
    if (opt_.stop_on_watch()) {
      save();
      throw GradNormWatchError(error_message("Monitor::step", "the grad-norm watch fired",
                                             "|grad| <= " + num(opt_.watch_factor() * baseline_),
                                             num(r.grad_norm) + " at step " +
                                                 std::to_string(r.step),
                                             "lower the lr or clip the gradients"));
    }
  }
  ++seen_;
}

void Monitor::close(const std::map<std::string, double>& final_metrics) {
  if (closed_) return;
  closed_ = true;
  if (bar_) bar_->close();
  if (!opt_.csv_path().empty()) history_.write_csv(opt_.csv_path());
  if (writer_) {
    const RunInfo& run = *history_.run_info();
    std::map<std::string, HParam> hp = run.config();
    if (run.seed()) hp.emplace("seed", *run.seed());
    if (!hp.empty() || !final_metrics.empty()) writer_->add_hparams(hp, final_metrics, "hparams");
    writer_->close();
  }
}

}  // namespace gradlab::train
