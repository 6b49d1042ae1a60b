// kilnc's arguments: the usage text, parsing into CompileOptions, and how each compile option
// is spelled on the command line.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/support/error.h"

namespace kilnc {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string command, model, output, emit = "package", output_dir, tuning_cache, sign_key;
  std::string svg, dot;  // inspect --svg, plan --dot: picture files
  std::string dump_dir = "kiln-dump";
  kiln::CompileOptions compile;
  kiln::TargetOptions target;
  int opt_level = 2;
  bool json = false, time_passes = false, quiet = false;
  std::vector<std::pair<std::string, std::string>> inputs;  // NAME, FILE.npy
  std::vector<std::string> frozen_flags;                    // as given, for the provenance
};

std::string usage();
// "kilnc 0.1.0 (LLVM 19.1.7)" and the package formats it writes and reads.
std::string version();
// Throws UsageError for what the command line itself gets wrong; exits after --help.
Args parse_args(int argc, char** argv);
// How kilnc spells a compile option (the library names them in neutral words).
const char* flag_for(kiln::Option o);

}  // namespace kilnc
