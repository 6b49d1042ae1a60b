// The persistent tuning cache (--tuning-cache PATH): the opts the tuner chose for a kernel, keyed
// by the kernel's structural digest and the target (triple, CPU, features), so that a second
// compile of the same model — or of another model sharing kernels — reuses them without timing
// anything.
//
// File format (text, one entry per line, sorted, so diffs are readable):
//   kiln-tuning-cache 1
//   <digest hex> <target id> <TAB> UPCAST(r0,8) UPCAST(r1,16) UNROLL(r2,4)
// An empty opt list is written as "-". A file that does not parse is an error naming the line.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/opt/opts.h"

namespace kiln {

class TuningCache {
 public:
  // Reads `path`; a missing file is an empty cache.
  static TuningCache load(const std::string& path);
  std::optional<std::vector<Opt>> find(const std::string& key) const;
  void put(const std::string& key, const std::vector<Opt>& opts);
  // Writes atomically (a temporary file next to `path`, renamed).
  void save(const std::string& path) const;
  size_t size() const { return entries_.size(); }

 private:
  std::map<std::string, std::vector<Opt>> entries_;
};

// "<digest hex> <target id>".
std::string tuning_key(const UOp* kernel_ast, const std::string& target_id);

// Parses what Opt::str() prints, space-separated ("UPCAST(r0,8) UNROLL(r2,4)"); "-" is empty.
std::vector<Opt> parse_opts(const std::string& text);
std::string format_opts(const std::vector<Opt>& opts);

}  // namespace kiln
