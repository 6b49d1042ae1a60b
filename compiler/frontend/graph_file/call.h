// One op call of a .kg file, with typed access to its arguments. Every accessor throws
// kiln::Error "file:line:col: op: what is wrong" on a missing or mistyped argument.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/tensor/tensor.h"

namespace kiln::kg {

struct Value {
  enum class Kind { Tensor, Int, Float, String, Bool, Name, List };
  Kind kind = Kind::Int;
  Tensor t;
  int64_t i = 0;
  double f = 0;
  std::string s;  // String contents or Name text
  std::vector<Value> list;
  int line = 0, col = 0;
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  double number() const { return kind == Kind::Int ? static_cast<double>(i) : f; }
};

class Call {
 public:
  Call(std::string where, std::string op, Graph& g)
      : where_(std::move(where)), op_(std::move(op)), g_(g) {}

  std::vector<Value> args;
  std::map<std::string, Value> kwargs;

  Graph& graph() { return g_; }
  const std::string& op() const { return op_; }

  size_t nargs() const { return args.size(); }
  Tensor tensor(size_t i);
  // A tensor, or a number that becomes a scalar constant of `like`'s dtype.
  Tensor operand(size_t i, const Tensor& like);
  std::vector<Tensor> tensors(size_t i);
  std::optional<Tensor> opt_tensor(const std::string& key);

  int64_t get_int(const std::string& key, std::optional<int64_t> dflt = std::nullopt);
  double get_float(const std::string& key, std::optional<double> dflt = std::nullopt);
  bool get_bool(const std::string& key, std::optional<bool> dflt = std::nullopt);
  std::string get_str(const std::string& key, std::optional<std::string> dflt = std::nullopt);
  DType get_dtype(const std::string& key, std::optional<DType> dflt = std::nullopt);
  std::vector<int64_t> get_ints(const std::string& key,
                                std::optional<std::vector<int64_t>> dflt = std::nullopt);
  std::vector<std::pair<int64_t, int64_t>> get_pairs(
      const std::string& key,
      std::optional<std::vector<std::pair<int64_t, int64_t>>> dflt = std::nullopt);
  // Checks the call used exactly `min..max` positional arguments and every keyword.
  void done(size_t min_args, size_t max_args);

  [[noreturn]] void fail(const std::string& what) const;

 private:
  const Value* kw(const std::string& key);
  std::string where_, op_;
  Graph& g_;
  std::set<std::string> used_;
};

using OpFn = std::function<std::vector<Tensor>(Call&)>;
const std::map<std::string, OpFn>& op_registry();

}  // namespace kiln::kg
