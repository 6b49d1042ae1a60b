// Wall-clock time per compiler pass (--time-passes), and progress lines for long compiles: once a
// compile has run for more than two seconds, each pass that starts says so on stderr.
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

class PassTimes {
 public:
  PassTimes();
  // Records `ms` for the pass (repeated names accumulate).
  void add(const std::string& pass, double ms);
  // A progress line ("kilnc: rangeify ... (3.1 s)") when the compile has run > 2 s.
  void starting(const std::string& pass, const std::string& detail = "");
  // The table --time-passes prints: each pass, its share, and the total.
  void print(std::ostream& os) const;
  double elapsed_s() const;
  bool progress = true;  // print progress lines (kilnc turns them off with --quiet)

 private:
  std::chrono::steady_clock::time_point start_;
  std::vector<std::pair<std::string, double>> times_;
};

// Times one pass into `times` (no-op when null): starting() on construction, add() on destruction.
class ScopedPass {
 public:
  ScopedPass(PassTimes* times, std::string pass, const std::string& detail = "");
  ~ScopedPass();
  ScopedPass(const ScopedPass&) = delete;
  ScopedPass& operator=(const ScopedPass&) = delete;

 private:
  PassTimes* times_;
  std::string pass_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace kiln
