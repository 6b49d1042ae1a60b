// Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 12 and 13).
//
// The class of each position is selected with a one-hot mask over the class axis (a WHERE, not a
// product, so -inf log-probabilities of other classes do not turn into NaN), which keeps both ops
// plain reductions that fuse with their producers.
#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/tensor/nn.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

// loss[n, d...] = -x[n, t, d...] * w[t] with t = target[n, d...] (0 where t == ignore_index),
// then reduced: none, sum, or mean (sum divided by the sum of the selected weights).
Tensor nll_loss(NodeContext& n, const Tensor& x, const Tensor& target, const Tensor* weight) {
  if (x.ndim() < 2) n.invalid("the input must have a class axis (rank >= 2)");
  if (target.ndim() != x.ndim() - 1) n.invalid("the target must have the input's rank minus one");
  if (target.dtype().is_float()) n.invalid("the target must hold integer class indices");
  int64_t classes = x.dim(1);
  std::string reduction = n.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    n.invalid("reduction '" + reduction + "' is not none, sum or mean");

  Tensor t = target.cast(dtypes::int64).unsqueeze(1);  // (N, 1, d...)
  Shape class_shape(static_cast<size_t>(x.ndim()), 1);
  class_shape[1] = classes;
  std::vector<double> ids(static_cast<size_t>(classes));
  for (int64_t c = 0; c < classes; ++c) ids[static_cast<size_t>(c)] = static_cast<double>(c);
  Tensor class_ids = n.constant(make_array(dtypes::int64, {classes}, ids)).reshape(class_shape);
  Tensor selected = class_ids.eq(t);  // (N, C, d...) bool
  Tensor zero = x.like(0.0);
  Tensor picked = selected.where(x, zero).sum({1});
  Tensor w = weight ? selected.where(weight->cast(x.dtype()).reshape(class_shape), zero).sum({1})
                    : selected.cast(x.dtype()).sum({1});
  if (n.has_attr("ignore_index")) {
    Tensor keep =
        target.cast(dtypes::int64).ne(t.like(static_cast<double>(n.attr_int("ignore_index"))));
    w = keep.where(w, zero);
  }
  Tensor loss = picked.neg().mul(w);
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum();
  return loss.sum().div(w.sum());
}

}  // namespace

void register_loss_ops(OpRegistry& r) {
  r["NegativeLogLikelihoodLoss"] = [](NodeContext& n) {
    Tensor x = n.input(0), target = n.input(1);
    std::optional<Tensor> w;
    if (n.has_input(2)) w = n.input(2);
    return V{nll_loss(n, x, target, w ? &*w : nullptr)};
  };
  r["SoftmaxCrossEntropyLoss"] = [](NodeContext& n) {
    Tensor scores = n.input(0), labels = n.input(1);
    std::optional<Tensor> w;
    if (n.has_input(2)) w = n.input(2);
    Tensor log_prob = log_softmax(scores, 1);
    return V{nll_loss(n, log_prob, labels, w ? &*w : nullptr), log_prob};
  };
}

}  // namespace kiln::onnxfe
