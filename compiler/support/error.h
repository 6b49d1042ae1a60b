// Errors raised by the compiler. User-facing errors (bad models, bad flags) are kiln::Error with a
// message that names the thing at fault; broken internal invariants are kiln::InternalError.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln {

// The compile options a user sets, named in words that do not depend on how a front end spells
// them (kilnc's flags, another program's keywords).
enum class Option : uint8_t {
  InputShape,   // the shape of a model input
  DimParam,     // the value of an ONNX dim parameter
  Freeze,       // a model input made a constant
  Target,       // the target triple
  Cpu,          // the target CPU
  Beam,         // beam search over kernel optimizations
  TuningCache,  // the tuning cache
  Input,        // a value for a model input (running, the self-test)
  DumpIr,       // the stages whose IR is printed
};

// `hints` are the options that would fix the error (an unbound dim: an input shape or a dim
// parameter); a front end says how to give them in its own spelling.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg, std::vector<Option> hints = {})
      : std::runtime_error(msg), hints_(std::move(hints)) {}
  const std::vector<Option>& hints() const { return hints_; }

 private:
  std::vector<Option> hints_;
};

// An error in the value of an option: the message names the option's subject in neutral words
// ("input shape for 'x': ..."); a front end may prefix its spelling of `option`.
class OptionError : public Error {
 public:
  OptionError(Option option, const std::string& msg, std::vector<Option> hints = {})
      : Error(msg, std::move(hints)), option_(option) {}
  Option option() const { return option_; }

 private:
  Option option_;
};

class InternalError : public Error {
 public:
  explicit InternalError(const std::string& msg) : Error("internal error: " + msg) {}
};

namespace detail {
inline void str_into(std::ostringstream&) {}
template <typename T, typename... Rest>
void str_into(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  str_into(os, rest...);
}
}  // namespace detail

// Concatenates its arguments with operator<<.
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  detail::str_into(os, args...);
  return os.str();
}

}  // namespace kiln

// Checks an internal invariant; on failure throws InternalError with file:line and the message.
#define KILN_CHECK(cond, ...)                                                                    \
  do {                                                                                           \
    if (!(cond))                                                                                 \
      throw ::kiln::InternalError(                                                               \
          ::kiln::str_cat(__FILE__, ":", __LINE__, ": check failed: " #cond ": ", __VA_ARGS__)); \
  } while (0)
