// The optimizer steps of the ai.onnx.preview.training domain (version 1): Adagrad, Adam and
// Momentum (standard and Nesterov), each over one or more tensors at once — an update a device
// can apply to its own weights (on-device fine-tuning). Deterministic elementwise math, as the
// spec's reference equations give it; the learning rate R and step count T may be run-time
// inputs. (The domain's Gradient op needs autodiff and is not built.)
#include <cmath>

#include "compiler/frontend/onnx/onnx_context.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

// R, T and the tensor groups: inputs 2.. split into `groups` lists of n tensors each.
struct Step {
  Tensor r, t;  // learning rate, step count (as X's float dtype)
  std::vector<V> lists;
};

Step step_inputs(NodeContext& n, size_t groups) {
  if (n.num_inputs() < 2 + groups || (n.num_inputs() - 2) % groups)
    n.invalid("takes R, T and " + std::to_string(groups) + " lists of tensors of one length");
  size_t count = (n.num_inputs() - 2) / groups;
  Step s;
  s.lists.resize(groups);
  for (size_t k = 0; k < groups; ++k)
    for (size_t i = 0; i < count; ++i) {
      Tensor x = n.input(2 + k * count + i);
      if (!x.dtype().is_float()) n.invalid("the optimized tensors must be floats");
      if (k && x.shape() != s.lists[0][i].shape())
        n.invalid("input " + std::to_string(2 + k * count + i) + " has shape " +
                  shape_str(x.shape()) + ", its tensor " + shape_str(s.lists[0][i].shape()));
      s.lists[k].push_back(x);
    }
  DType f = s.lists[0][0].dtype();
  if (n.input(0).numel() != 1 || n.input(1).numel() != 1)
    n.invalid("R and T must each hold one value");
  s.r = n.input(0).reshape({}).cast(f);
  s.t = n.input(1).reshape({}).cast(f);
  return s;
}

V adagrad(NodeContext& n) {
  Step s = step_inputs(n, 3);
  double norm = n.attr_float("norm_coefficient", 0.0), eps = n.attr_float("epsilon", 1e-6),
         decay = n.attr_float("decay_factor", 0.0);
  Tensor r = s.r.div(s.t.mul(decay).add(1.0));
  V x_new, h_new;
  for (size_t i = 0; i < s.lists[0].size(); ++i) {
    const Tensor &x = s.lists[0][i], &g = s.lists[1][i], &h = s.lists[2][i];
    Tensor gr = x.mul(norm).add(g);
    Tensor h2 = h.add(gr.mul(gr));
    x_new.push_back(x.sub(r.mul(gr).div(h2.sqrt().add(eps))));
    h_new.push_back(h2);
  }
  x_new.insert(x_new.end(), h_new.begin(), h_new.end());
  return x_new;
}

V momentum(NodeContext& n) {
  Step s = step_inputs(n, 3);
  double norm = n.attr_float("norm_coefficient"), alpha = n.attr_float("alpha"),
         beta = n.attr_float("beta");
  std::string mode = n.attr_string("mode");
  if (mode != "standard" && mode != "nesterov")
    n.invalid("mode is '" + mode + "', not 'standard' or 'nesterov'");
  // The gradient's coefficient is 1 in the first step.
  Tensor b = s.t.gt(s.t.like(0.0)).where(s.t.like(beta), s.t.like(1.0));
  V x_new, v_new;
  for (size_t i = 0; i < s.lists[0].size(); ++i) {
    const Tensor &x = s.lists[0][i], &g = s.lists[1][i], &v = s.lists[2][i];
    Tensor gr = x.mul(norm).add(g);
    Tensor v2 = v.mul(alpha).add(b.mul(gr));
    x_new.push_back(x.sub(s.r.mul(mode == "standard" ? v2 : gr.add(v2.mul(alpha)))));
    v_new.push_back(v2);
  }
  x_new.insert(x_new.end(), v_new.begin(), v_new.end());
  return x_new;
}

V adam(NodeContext& n) {
  Step s = step_inputs(n, 4);
  double norm = n.attr_float("norm_coefficient", 0.0),
         post = n.attr_float("norm_coefficient_post", 0.0), alpha = n.attr_float("alpha", 0.9),
         beta = n.attr_float("beta", 0.999), eps = n.attr_float("epsilon", 1e-6);
  // The bias correction from the second step on: R * sqrt(1 - beta^T) / (1 - alpha^T).
  Tensor t = s.t;
  Tensor corrected = s.r.mul(t.like(1.0).sub(t.like(beta).pow(t)).sqrt())
                         .div(t.like(1.0).sub(t.like(alpha).pow(t)));
  Tensor r = t.gt(t.like(0.0)).where(corrected, s.r);
  V x_new, v_new, h_new;
  for (size_t i = 0; i < s.lists[0].size(); ++i) {
    const Tensor &x = s.lists[0][i], &g = s.lists[1][i], &v = s.lists[2][i], &h = s.lists[3][i];
    Tensor gr = x.mul(norm).add(g);
    Tensor v2 = v.mul(alpha).add(gr.mul(1.0 - alpha));
    Tensor h2 = h.mul(beta).add(gr.mul(gr).mul(1.0 - beta));
    Tensor x2 = x.sub(r.mul(v2.div(h2.sqrt().add(eps))));
    x_new.push_back(x2.mul(1.0 - post));
    v_new.push_back(v2);
    h_new.push_back(h2);
  }
  x_new.insert(x_new.end(), v_new.begin(), v_new.end());
  x_new.insert(x_new.end(), h_new.begin(), h_new.end());
  return x_new;
}

}  // namespace

void register_training_ops(OpRegistry& r) {
  r[std::string(kTrainingDomain) + ":Adagrad"] = adagrad;
  r[std::string(kTrainingDomain) + ":Adam"] = adam;
  r[std::string(kTrainingDomain) + ":Momentum"] = momentum;
}

}  // namespace kiln::onnxfe
