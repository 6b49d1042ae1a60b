#include "compiler/frontend/graph_file/call.h"

#include "compiler/support/error.h"

namespace kiln::kg {

void Call::fail(const std::string& what) const {
  throw Error(where_ + ": " + op_ + ": " + what);
}

Tensor Call::tensor(size_t i) {
  if (i >= args.size()) fail("missing argument " + std::to_string(i + 1) + " (a tensor)");
  if (args[i].kind != Value::Kind::Tensor)
    fail("argument " + std::to_string(i + 1) + " must be a tensor name");
  return args[i].t;
}

Tensor Call::operand(size_t i, const Tensor& like) {
  if (i < args.size() && args[i].is_number()) return like.like(args[i].number());
  return tensor(i);
}

std::vector<Tensor> Call::tensors(size_t i) {
  if (i >= args.size()) fail("missing argument " + std::to_string(i + 1) + " (a list of tensors)");
  std::vector<Tensor> out;
  if (args[i].kind == Value::Kind::Tensor) return {args[i].t};
  if (args[i].kind != Value::Kind::List)
    fail("argument " + std::to_string(i + 1) + " must be a list of tensors");
  for (const Value& v : args[i].list) {
    if (v.kind != Value::Kind::Tensor)
      fail("argument " + std::to_string(i + 1) + " must hold tensor names only");
    out.push_back(v.t);
  }
  return out;
}

const Value* Call::kw(const std::string& key) {
  auto it = kwargs.find(key);
  if (it == kwargs.end()) return nullptr;
  used_.insert(key);
  return &it->second;
}

std::optional<Tensor> Call::opt_tensor(const std::string& key) {
  const Value* v = kw(key);
  if (!v) return std::nullopt;
  if (v->kind != Value::Kind::Tensor) fail("'" + key + "' must be a tensor name");
  return v->t;
}

int64_t Call::get_int(const std::string& key, std::optional<int64_t> dflt) {
  const Value* v = kw(key);
  if (!v) {
    if (!dflt) fail("missing attribute '" + key + "' (an integer)");
    return *dflt;
  }
  if (v->kind == Value::Kind::Bool) return v->i;
  if (v->kind != Value::Kind::Int) fail("'" + key + "' must be an integer");
  return v->i;
}

double Call::get_float(const std::string& key, std::optional<double> dflt) {
  const Value* v = kw(key);
  if (!v) {
    if (!dflt) fail("missing attribute '" + key + "' (a number)");
    return *dflt;
  }
  if (!v->is_number()) fail("'" + key + "' must be a number");
  return v->number();
}

bool Call::get_bool(const std::string& key, std::optional<bool> dflt) {
  const Value* v = kw(key);
  if (!v) {
    if (!dflt) fail("missing attribute '" + key + "' (true or false)");
    return *dflt;
  }
  if (v->kind == Value::Kind::Bool || v->kind == Value::Kind::Int) return v->i != 0;
  fail("'" + key + "' must be true or false");
}

std::string Call::get_str(const std::string& key, std::optional<std::string> dflt) {
  const Value* v = kw(key);
  if (!v) {
    if (!dflt) fail("missing attribute '" + key + "' (a string)");
    return *dflt;
  }
  if (v->kind != Value::Kind::String && v->kind != Value::Kind::Name)
    fail("'" + key + "' must be a string");
  return v->s;
}

DType Call::get_dtype(const std::string& key, std::optional<DType> dflt) {
  const Value* v = kw(key);
  if (!v) {
    if (!dflt) fail("missing attribute '" + key + "' (a dtype such as float32)");
    return *dflt;
  }
  ScalarKind k;
  if ((v->kind != Value::Kind::Name && v->kind != Value::Kind::String) || !parse_scalar(v->s, &k) ||
      k == ScalarKind::Void || k == ScalarKind::Index)
    fail("'" + key +
         "' must be a dtype (bool, int8..int64, uint8..uint64, float16, bfloat16, float32, "
         "float64)");
  return DType(k);
}

std::vector<int64_t> Call::get_ints(const std::string& key,
                                    std::optional<std::vector<int64_t>> dflt) {
  const Value* v = kw(key);
  if (!v) {
    if (!dflt) fail("missing attribute '" + key + "' (a list of integers)");
    return *dflt;
  }
  if (v->kind == Value::Kind::Int) return {v->i};
  if (v->kind != Value::Kind::List) fail("'" + key + "' must be a list of integers");
  std::vector<int64_t> out;
  for (const Value& x : v->list) {
    if (x.kind != Value::Kind::Int) fail("'" + key + "' must be a list of integers");
    out.push_back(x.i);
  }
  return out;
}

std::vector<std::pair<int64_t, int64_t>> Call::get_pairs(
    const std::string& key, std::optional<std::vector<std::pair<int64_t, int64_t>>> dflt) {
  const Value* v = kw(key);
  if (!v) {
    if (!dflt) fail("missing attribute '" + key + "' (a list of [a, b] pairs)");
    return *dflt;
  }
  if (v->kind != Value::Kind::List) fail("'" + key + "' must be a list of [a, b] pairs");
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const Value& x : v->list) {
    if (x.kind != Value::Kind::List || x.list.size() != 2 || x.list[0].kind != Value::Kind::Int ||
        x.list[1].kind != Value::Kind::Int)
      fail("'" + key + "' must be a list of [a, b] integer pairs");
    out.push_back({x.list[0].i, x.list[1].i});
  }
  return out;
}

void Call::done(size_t min_args, size_t max_args) {
  if (args.size() < min_args || args.size() > max_args)
    fail("takes " +
         (min_args == max_args ? std::to_string(min_args)
                               : std::to_string(min_args) + " to " + std::to_string(max_args)) +
         " positional arguments, got " + std::to_string(args.size()));
  for (const auto& [k, v] : kwargs)
    if (!used_.count(k)) fail("unexpected attribute '" + k + "'");
}

}  // namespace kiln::kg
