#include "compiler/ir/printer.h"

#include <unordered_map>

namespace kiln {

namespace {

const char* infix(Op op) {
  switch (op) {
    case Op::ADD:
      return "+";
    case Op::MUL:
      return "*";
    case Op::IDIV:
      return "//";
    case Op::MOD:
      return "%";
    case Op::FDIV:
      return "/";
    case Op::CMPLT:
      return "<";
    case Op::CMPEQ:
      return "==";
    case Op::CMPNE:
      return "!=";
    case Op::AND:
      return "&";
    case Op::OR:
      return "|";
    case Op::XOR:
      return "^";
    case Op::SHL:
      return "<<";
    case Op::SHR:
      return ">>";
    default:
      return nullptr;
  }
}

std::string lower(const char* s) {
  std::string r = s;
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::string r(const UOp* u, int depth, bool top) {
  if (depth == 0) return "…";
  int d = depth < 0 ? -1 : depth - 1;
  switch (u->op) {
    case Op::CONST:
      if (u->dtype.is_bool()) return u->cval().i ? "true" : "false";
      return u->cval().str();
    case Op::RANGE:
      return "r" + std::to_string(u->range().id);
    case Op::DEFINE_VAR:
      return u->var().name;
    case Op::DEFINE_GLOBAL:
      return "buf" + std::to_string(u->iarg());
    case Op::TASK:
      return "task";
    default:
      break;
  }
  // bool x ^ true renders as !x
  if (u->op == Op::XOR && u->dtype.is_bool() && u->src[1]->is_const(1))
    return "!" + r(u->src[0], d, false);
  if (u->op == Op::NEG) return "-" + r(u->src[0], d, false);
  if (const char* op = infix(u->op); op && u->src.size() == 2) {
    std::string s = r(u->src[0], d, false) + op + r(u->src[1], d, false);
    return top ? s : "(" + s + ")";
  }
  if (u->op == Op::CAST) return "cast<" + u->dtype.str() + ">(" + r(u->src[0], d, true) + ")";
  std::string s = lower(op_name(u->op)) + "(";
  for (size_t i = 0; i < u->src.size(); ++i) s += (i ? ", " : "") + r(u->src[i], d, true);
  std::string a = arg_str(u->arg);
  if (!a.empty() && u->op != Op::REDUCE) s += (u->src.empty() ? "" : ", ") + a;
  if (u->op == Op::REDUCE) s += ", " + a;
  return s + ")";
}

}  // namespace

std::string render(const UOp* u, int max_depth) {
  return r(u, max_depth, true);
}

std::string print_graph(const UOp* root) {
  std::unordered_map<const UOp*, size_t> num;
  std::string out;
  for (const UOp* n : root->toposort()) {
    size_t k = num.size();
    num[n] = k;
    out += "%" + std::to_string(k) + " = " + op_name(n->op) + " " + n->dtype.str();
    for (size_t i = 0; i < n->src.size(); ++i)
      out += (i ? ", %" : " %") + std::to_string(num.at(n->src[i]));
    std::string a = arg_str(n->arg);
    if (!a.empty()) out += "  [" + a + "]";
    if (n->has_shape() && n->op != Op::CONST) {
      out += "  shape=(";
      const Shape& s = n->shape();
      for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
      out += ")";
    }
    out += "\n";
  }
  return out;
}

std::string describe_node(const UOp* u) {
  std::string s = "%" + std::to_string(u->id()) + " " + op_name(u->op) + " " + u->dtype.str();
  if (u->has_shape()) s += shape_str(u->shape());
  if (u->op == Op::BUFFER) s += " '" + u->buffer().name + "'";
  return s;
}

}  // namespace kiln
