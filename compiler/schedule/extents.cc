#include "compiler/schedule/extents.h"

#include <bit>
#include <functional>

#include "compiler/ir/printer.h"
#include "compiler/ir/rewrite.h"
#include "compiler/ir/symbolic.h"
#include "compiler/support/error.h"
#include "schema/kiln_abi.h"

namespace kiln {

std::vector<int64_t> extent_program(const UOp* e) {
  std::vector<int64_t> out;
  std::function<void(const UOp*)> emit = [&](const UOp* u) {
    if (u->op == Op::CONST) {
      out.insert(out.end(), {KILN_ABI_EXTENT_CONST, u->cval().i});
      return;
    }
    if (u->op == Op::DEFINE_VAR) {
      out.insert(out.end(), {KILN_ABI_EXTENT_VAR, u->var().slot});
      return;
    }
    // Programs compute in int64: a cast between integer kinds (or of a 0/1 comparison) is a
    // no-op.
    if (u->op == Op::CAST) {
      emit(u->src[0]);
      return;
    }
    // A check's conditions (format 2.5): comparisons give 0 or 1, so AND and OR are MIN and
    // MAX; a != b and not-a compare with 0.
    bool negate = u->op == Op::CMPNE || (u->op == Op::XOR && u->dtype == dtypes::bool_);
    int64_t code = u->op == Op::ADD               ? KILN_ABI_EXTENT_ADD
                   : u->op == Op::MUL             ? KILN_ABI_EXTENT_MUL
                   : u->op == Op::IDIV            ? KILN_ABI_EXTENT_IDIV
                   : u->op == Op::MOD             ? KILN_ABI_EXTENT_MOD
                   : u->op == Op::MAX             ? KILN_ABI_EXTENT_MAX
                   : u->op == Op::MIN             ? KILN_ABI_EXTENT_MIN
                   : u->op == Op::AND             ? KILN_ABI_EXTENT_MIN
                   : u->op == Op::OR              ? KILN_ABI_EXTENT_MAX
                   : u->op == Op::CMPEQ || negate ? KILN_ABI_EXTENT_EQ
                   : u->op == Op::CMPLT           ? KILN_ABI_EXTENT_LT
                                                  : -1;
    if (code < 0 || u->src.size() != 2)
      throw InternalError(
          str_cat("extent ", render(e), ": no package opcode for ", op_name(u->op)));
    emit(u->src[0]);
    emit(u->src[1]);
    out.push_back(code);
    if (negate) out.insert(out.end(), {KILN_ABI_EXTENT_CONST, 0, KILN_ABI_EXTENT_EQ});
  };
  emit(e);
  return out;
}

void bind_value_symbols(const Plan& plan, const std::map<std::string, NDArray>& inputs,
                        std::vector<int64_t>& vars) {
  for (int id : plan.inputs) {
    const PlanBuffer& b = plan.buffer(id);
    for (size_t e = 0; e < b.value_symbols.size(); ++e) {
      const NDArray& a = inputs.at(b.name);
      int64_t v = a.get(static_cast<int64_t>(e)).as_int();
      if (a.dtype().is_float())  // the float32's bit pattern, as the runtime reads it
        v = std::bit_cast<int32_t>(static_cast<float>(a.get(static_cast<int64_t>(e)).as_double()));
      vars.at(static_cast<size_t>(b.value_symbols[e])) = v;
    }
  }
  // The runtime's interpreter, so a run the JIT accepts is one kiln_session_run accepts: an
  // overflow or a division by zero fails the check.
  for (const GraphCheck& c : plan.checks) {
    std::vector<int64_t> code = extent_program(c.holds);
    int64_t holds = 0;
    if (kiln_abi_extent_eval(code.data(), static_cast<uint32_t>(code.size()), vars.data(),
                             static_cast<uint32_t>(vars.size()), &holds) != 0 ||
        holds == 0)
      throw Error(c.message);
  }
}

std::vector<int64_t> bind_symbols(const std::vector<Symbol>& symbols,
                                  const std::vector<std::string>& names,
                                  const std::vector<Shape>& static_shapes,
                                  const std::vector<std::vector<const UOp*>>& extents,
                                  const std::vector<Shape>& shapes) {
  std::vector<int64_t> vars(symbols.size(), -1);
  std::vector<std::string> bound_by(symbols.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const Shape& want = static_shapes[i];
    const Shape& got = shapes[i];
    if (got.size() != want.size())
      throw Error(str_cat("input '", names[i], "' has rank ", got.size(), ", the model wants ",
                          want.size()));
    for (size_t a = 0; a < got.size(); ++a) {
      const UOp* e = extents[i].empty() ? nullptr : extents[i][a];
      if (!e || e->op != Op::DEFINE_VAR) {
        if (got[a] != want[a])
          throw Error(str_cat("input '", names[i], "' axis ", a, " is ", got[a],
                              ", the model fixes it to ", want[a]));
        continue;
      }
      size_t slot = static_cast<size_t>(e->var().slot);
      const Symbol& s = symbols.at(slot);
      if (got[a] < s.min || got[a] > s.max)
        throw Error(str_cat("input '", names[i], "' axis ", a, " is ", got[a], ": '", s.name,
                            "' must be in [", s.min, ", ", s.max, "]"));
      if (vars[slot] >= 0 && vars[slot] != got[a])
        throw Error(str_cat("input '", names[i], "' axis ", a, " is ", got[a], ": '", s.name,
                            "' is ", vars[slot], " (", bound_by[slot], ")"));
      vars[slot] = got[a];
      bound_by[slot] = str_cat("input '", names[i], "' axis ", a);
    }
  }
  for (size_t k = 0; k < symbols.size(); ++k)
    if (vars[k] < 0 && !symbols[k].value && symbols[k].loop < 0 && symbols[k].count < 0)
      throw Error("no input sets the symbol '" + symbols[k].name + "'");
  return vars;
}

}  // namespace kiln
