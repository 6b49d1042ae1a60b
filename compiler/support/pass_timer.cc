#include "compiler/support/pass_timer.h"

#include <cstdio>
#include <iomanip>
#include <iostream>

namespace kiln {

PassTimes::PassTimes() : start_(std::chrono::steady_clock::now()) {}

double PassTimes::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void PassTimes::add(const std::string& pass, double ms) {
  for (auto& [name, t] : times_)
    if (name == pass) {
      t += ms;
      return;
    }
  times_.emplace_back(pass, ms);
}

void PassTimes::starting(const std::string& pass, const std::string& detail) {
  double s = elapsed_s();
  if (!progress || s < 2.0) return;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  std::cerr << "kilnc: " << pass << (detail.empty() ? "" : " " + detail) << " (" << buf
            << " s so far)\n";
}

void PassTimes::print(std::ostream& os) const {
  double total = 0;
  for (const auto& [name, t] : times_) total += t;
  os << "--- time-passes ---\n";
  for (const auto& [name, t] : times_) {
    char line[96];
    std::snprintf(line, sizeof line, "  %-16s %10.1f ms  %5.1f%%\n", name.c_str(), t,
                  total > 0 ? 100.0 * t / total : 0.0);
    os << line;
  }
  char line[96];
  std::snprintf(line, sizeof line, "  %-16s %10.1f ms\n", "total", total);
  os << line;
}

ScopedPass::ScopedPass(PassTimes* times, std::string pass, const std::string& detail)
    : times_(times), pass_(std::move(pass)), t0_(std::chrono::steady_clock::now()) {
  if (times_) times_->starting(pass_, detail);
}

ScopedPass::~ScopedPass() {
  if (times_)
    times_->add(
        pass_,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count());
}

}  // namespace kiln
