// Errors raised by the compiler. User-facing errors (bad models, bad flags) are kiln::Error with a
// message that names the thing at fault; broken internal invariants are kiln::InternalError.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
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
