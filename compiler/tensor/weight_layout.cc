#include "compiler/tensor/weight_layout.h"

#include "compiler/support/error.h"

namespace kiln {

bool is_constant(const Tensor& t) {
  for (const UOp* u : t.uop()->toposort())
    if (u->op == Op::BUFFER && !t.graph()->is_weight(u)) return false;
  return true;
}

Tensor packed_in_panels(const Tensor& w, int64_t axis) {
  int64_t nd = w.ndim();
  if (axis < 0 || axis >= nd || w.dim(axis) % kWeightPanel != 0)
    throw Error(str_cat("packed_in_panels: axis ", axis, " of ", shape_str(w.shape()),
                        " is not a multiple of ", kWeightPanel));
  // Split the axis into (panel, lane): shape (..., A/P, P, ...), axis `axis` and `axis + 1`.
  Shape split = w.shape();
  split[static_cast<size_t>(axis)] = w.dim(axis) / kWeightPanel;
  split.insert(split.begin() + axis + 1, kWeightPanel);
  // Storage order: panel, the other axes, lane.
  std::vector<int64_t> to_panels = {axis};
  for (int64_t j = 0; j < nd + 1; ++j)
    if (j != axis && j != axis + 1) to_panels.push_back(j);
  to_panels.push_back(axis + 1);
  std::vector<int64_t> back(to_panels.size());
  for (size_t j = 0; j < to_panels.size(); ++j)
    back[static_cast<size_t>(to_panels[j])] = static_cast<int64_t>(j);
  return w.reshape(split).permute(to_panels).contiguous().permute(back).reshape(w.shape());
}

}  // namespace kiln
