// Recurrent ONNX ops: RNN, GRU and LSTM (opsets 7-14).
//
// One input projection for every step at once (X @ W^T plus both biases, a single GEMM over
// seq*batch rows), then per step the recurrent GEMM (H @ R^T) and the gate math, which fusion
// runs as the GEMM's epilogue where the gates allow. A short static sequence is unrolled at
// import: each step its own small graph, a few launches per step, and consecutive steps' kernels
// fuse and deduplicate. A long one (past kMaxUnrolledSteps, 16), or one over a symbolic length
// (`--dim seq=1..512`), is a loop group (docs/control-flow.md): the step built once, every
// direction in the same iteration, the states carried in the arena and Y's rows stacked, for
// as many iterations as the time axis holds at run time.
//
// sequence_lens masks the steps at or past a batch row's length: the row's state is held and its
// Y rows are zero, as the spec says; a reverse direction starts at each row's last valid step,
// which the mask gives for free (the held state is the initial one until then).
#include <cctype>
#include <map>
#include <tuple>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/tensor/extent_analysis.h"
#include "compiler/tensor/indexing.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/nn.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

enum class Cell { kRnn, kGru, kLstm };

struct Activation {
  std::string name;  // lower case
  double alpha = 0, beta = 0;
};

Tensor activate(const Activation& a, const Tensor& x) {
  const std::string& f = a.name;
  if (f == "sigmoid") return x.sigmoid();
  if (f == "tanh") return x.tanh();
  if (f == "relu") return relu(x);
  if (f == "affine") return x.mul(a.alpha).add(a.beta);
  if (f == "leakyrelu") return leaky_relu(x, a.alpha);
  if (f == "thresholdedrelu") return x.gt(a.alpha).where(x, x.like(0.0));
  if (f == "scaledtanh") return x.mul(a.beta).tanh().mul(a.alpha);
  if (f == "hardsigmoid") return hard_sigmoid(x, a.alpha, a.beta);
  if (f == "elu") return elu(x, a.alpha);
  if (f == "softsign") return x.div(x.abs().add(1.0));
  return softplus(x);  // the names were checked in activations()
}

// The `activations` attribute (per direction: f for RNN; f, g for GRU; f, g, h for LSTM), with
// activation_alpha / activation_beta consumed in order by the activations that take them and the
// ONNX op's default where the list runs out.
std::vector<Activation> activations(NodeContext& n, Cell cell, int64_t dirs) {
  size_t per = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 2 : 3;
  std::vector<std::string> dflt = cell == Cell::kRnn ? std::vector<std::string>{"Tanh"}
                                  : cell == Cell::kGru
                                      ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                      : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  std::vector<std::string> names;
  if (n.has_attr("activations")) {
    const onnx::AttributeProto* at = nullptr;
    for (const auto& a : n.node().attribute())
      if (a.name() == "activations") at = &a;
    for (const std::string& s : at->strings()) names.push_back(s);
  } else {
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), dflt.begin(), dflt.end());
  }
  if (names.size() != per * static_cast<size_t>(dirs))
    n.invalid("activations must name " + std::to_string(per * static_cast<size_t>(dirs)) +
              " functions (" + std::to_string(per) + " per direction), got " +
              std::to_string(names.size()));
  std::vector<double> alphas = n.attr_floats("activation_alpha", std::vector<double>{});
  std::vector<double> betas = n.attr_floats("activation_beta", std::vector<double>{});
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string& s : names) {
    Activation a;
    for (char c : s) a.name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // {takes alpha, default alpha, takes beta, default beta}
    struct Params {
      bool a;
      double da;
      bool b;
      double db;
    };
    static const std::map<std::string, Params> kParams = {
        {"sigmoid", {false, 0, false, 0}},      {"tanh", {false, 0, false, 0}},
        {"relu", {false, 0, false, 0}},         {"affine", {true, 1.0, true, 0.0}},
        {"leakyrelu", {true, 0.01, false, 0}},  {"thresholdedrelu", {true, 1.0, false, 0}},
        {"scaledtanh", {true, 1.0, true, 1.0}}, {"hardsigmoid", {true, 0.2, true, 0.5}},
        {"elu", {true, 1.0, false, 0}},         {"softsign", {false, 0, false, 0}},
        {"softplus", {false, 0, false, 0}},
    };
    auto it = kParams.find(a.name);
    if (it == kParams.end()) n.unsupported("activation '" + s + "'");
    if (it->second.a) a.alpha = ai < alphas.size() ? alphas[ai++] : it->second.da;
    if (it->second.b) a.beta = bi < betas.size() ? betas[bi++] : it->second.db;
    out.push_back(a);
  }
  return out;
}

// Everything one direction's recurrence needs, in layout 0 and sliced to the direction.
struct Direction {
  Tensor w, r;    // (G*H, I), (G*H, H)
  Tensor wb, rb;  // (G*H,) each, or invalid
  Tensor p;       // LSTM peepholes (3*H,) [i o f], or invalid
  Tensor h0, c0;  // (B, H) each
  bool reverse = false;
  std::vector<Activation> act;  // this direction's f[, g[, h]]
};

struct Sequence {
  Tensor x;     // (T, B, I)
  Tensor lens;  // (B,) int, or invalid
  int64_t t = 0, b = 0, hidden = 0;
  double clip = 0;  // 0: none
  bool linear_before_reset = false, input_forget = false;
  bool symbolic_batch = false;  // B's extent is a symbol (--dim batch=1..8)
};

// Rows [k*H, (k+1)*H) of the last axis: gate k of a (.., G*H) tensor.
Tensor gate(const Tensor& x, int64_t k, int64_t h) {
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t d = 0; d + 1 < x.ndim(); ++d) b.push_back({0, x.dim(d)});
  b.push_back({k * h, (k + 1) * h});
  return x.shrink(b);
}

// Rows [lo, hi) of a matrix: gate rows of W, R (G*H, K).
Tensor rows(const Tensor& x, int64_t lo, int64_t hi) {
  return x.shrink({{lo, hi}, {0, x.dim(1)}});
}

// a @ b_nkᵀ (+ bias) as a matmul over b's transpose: a constant weight is then packed into the
// panel layout GEMM kernels read contiguously (linear() reads it as stored, (N, K), and a step's
// GEMV over a (4H, H) weight read that way runs an order of magnitude slower).
Tensor mat_t(const Tensor& a, const Tensor& b_nk, const Tensor* bias) {
  Tensor r = matmul(a, b_nk.transpose());
  return bias ? r.add(*bias) : r;
}

Tensor clipped(const Sequence& s, const Tensor& x) {
  return s.clip > 0 ? x.maximum(-s.clip).minimum(s.clip) : x;
}

// One step of the cell: the new (H, C) from the projected input xw (B, G*H) and the old state.
std::pair<Tensor, Tensor> step(Cell cell, const Sequence& s, const Direction& d, const Tensor& xw,
                               const Tensor& h, const Tensor& c) {
  int64_t hs = s.hidden;
  const std::vector<Activation>& a = d.act;
  // Every step reads xw at its own offset, so the recurrent GEMMs are kept in kernels of their
  // own (`contiguous`): identical across steps, they deduplicate into one compiled kernel, and
  // the offset read moves into the cheap elementwise gate kernel (half the compile time of a
  // GEMM per step, at the same run time). RNN and LSTM: both biases are in xw already.
  if (cell == Cell::kRnn) {
    Tensor pre = xw.add(mat_t(h, d.r, nullptr).contiguous());
    return {activate(a[0], clipped(s, pre)), c};
  }
  if (cell == Cell::kLstm) {
    Tensor g = xw.add(mat_t(h, d.r, nullptr).contiguous());
    Tensor gi = gate(g, 0, hs), go = gate(g, 1, hs), gf = gate(g, 2, hs), gc = gate(g, 3, hs);
    if (d.p.valid()) {
      gi = gi.add(gate(d.p, 0, hs).mul(c));
      gf = gf.add(gate(d.p, 2, hs).mul(c));
    }
    Tensor i = activate(a[0], clipped(s, gi));
    Tensor f = s.input_forget ? i.like(1.0).sub(i) : activate(a[0], clipped(s, gf));
    Tensor cand = activate(a[1], clipped(s, gc));
    Tensor c_new = f.mul(c).add(i.mul(cand));
    if (d.p.valid()) go = go.add(gate(d.p, 1, hs).mul(c_new));
    Tensor o = activate(a[0], clipped(s, go));
    return {o.mul(activate(a[2], c_new)), c_new};
  }
  // GRU: z and r from one GEMM; the candidate's recurrent term depends on linear_before_reset.
  Tensor rz = rows(d.r, 0, 2 * hs), rh = rows(d.r, 2 * hs, 3 * hs);
  Tensor rbz, rbh;
  if (d.rb.valid()) {
    rbz = gate(d.rb, 0, 2 * hs);
    rbh = gate(d.rb, 2, hs);
  }
  Tensor zr = gate(xw, 0, 2 * hs).add(mat_t(h, rz, rbz.valid() ? &rbz : nullptr).contiguous());
  Tensor z = activate(a[0], clipped(s, gate(zr, 0, hs)));
  Tensor r = activate(a[0], clipped(s, gate(zr, 1, hs)));
  Tensor rec = s.linear_before_reset ? r.mul(mat_t(h, rh, rbh.valid() ? &rbh : nullptr))
                                     : mat_t(r.mul(h), rh, rbh.valid() ? &rbh : nullptr);
  Tensor cand = activate(a[1], clipped(s, gate(xw, 2, hs).add(rec)));
  Tensor h_new = z.like(1.0).sub(z).mul(cand).add(z.mul(h));
  return {h_new, c};
}

// Where the line is between unrolling a static sequence and a loop group. Unrolled, a step is
// two launches (the recurrent GEMM, deduplicated into one compiled kernel, and the gate math)
// and its index math folds; a loop group adds per step a gather of the step's projected input,
// copies of the states and a group boundary, but its few kernels stay in the caches and it
// compiles once. Measured (LSTM, hidden 128, batch 1, one thread, AMD EPYC): the group is
// slower at 8 and 16 steps (0.024 against 0.019 ms at 8), as fast or faster from 24 (0.73
// against 1.10 ms at 256), and the benchmark's LSTM and GRU models (40 and 50 steps) run at
// least as fast as unrolled and compile in 0.6 s instead of 1.0 and 4.6 s.
constexpr int64_t kMaxUnrolledSteps = 16;

// The input projection of every step in one GEMM, both biases folded into it: (T, B, G*H).
// A symbolic batch cannot be merged into the rows (its extent would sit inside T's): then one
// product per step.
Tensor project(Cell cell, const Sequence& s, const Direction& d) {
  Tensor bias;
  if (d.wb.valid()) bias = d.wb;
  if (d.rb.valid() && cell != Cell::kGru) bias = bias.valid() ? bias.add(d.rb) : d.rb;
  if (s.symbolic_batch) return mat_t(s.x, d.w, bias.valid() ? &bias : nullptr);
  return mat_t(s.x.reshape({s.t * s.b, s.x.dim(2)}), d.w, bias.valid() ? &bias : nullptr)
      .reshape({s.t, s.b, d.w.dim(0)});
}

// A step's output row and next states under sequence_lens: `live` (B,) says which batch rows
// are still inside their sequence; the others output zeros and hold their states.
struct Masked {
  Tensor y, h, c;
};
Masked mask_step(Cell cell, const Sequence& s, const Tensor& live, const Tensor& hn,
                 const Tensor& cn, const Tensor& h, const Tensor& c) {
  Tensor l = live.reshape({s.b, 1});
  return {l.where(hn, hn.like(0.0)), l.where(hn, h), cell == Cell::kLstm ? l.where(cn, c) : cn};
}

// Runs one direction over the sequence, unrolled: Y (T, B, H), the last H and C (B, H).
std::tuple<Tensor, Tensor, Tensor> unrolled(Cell cell, const Sequence& s, const Direction& d) {
  int64_t gh = d.w.dim(0);
  Tensor xw = project(cell, s, d);
  Tensor h = d.h0, c = d.c0;
  std::vector<Tensor> ys(static_cast<size_t>(s.t));
  for (int64_t k = 0; k < s.t; ++k) {
    int64_t t = d.reverse ? s.t - 1 - k : k;
    Tensor xt = xw.shrink({{t, t + 1}, {0, s.b}, {0, gh}}).reshape({s.b, gh});
    auto [hn, cn] = step(cell, s, d, xt, h, c);
    if (s.lens.valid()) {
      Masked m = mask_step(cell, s, s.lens.gt(static_cast<double>(t)), hn, cn, h, c);
      ys[static_cast<size_t>(t)] = m.y;
      hn = m.h;
      cn = m.c;
    }
    // The state is stored every step: left to fusion, a step's consumers would recompute the
    // whole chain of earlier steps inline (the last steps of a 40-step LSTM ran 15x slower).
    h = hn.contiguous();
    c = cell == Cell::kLstm ? cn.contiguous() : cn;
    if (!s.lens.valid()) ys[static_cast<size_t>(t)] = h;
  }
  std::vector<Tensor> rows;
  for (const Tensor& y : ys) rows.push_back(y.unsqueeze(0));
  // Y is stored once: read through the concatenation of every step, a consumer GEMM (the next
  // layer's projection) would select among all the steps on every load.
  return {concat(rows, 0).contiguous(), h, c};
}

// Every direction over the sequence as one loop group of `steps` iterations (an index
// expression: the time axis's extent): iteration k runs step k forward and step steps-1-k in
// reverse. Per direction: Y (T, B, H) with `steps` rows, the last H and C (B, H).
std::vector<std::tuple<Tensor, Tensor, Tensor>> grouped(NodeContext& n, Cell cell,
                                                        const Sequence& s,
                                                        const std::vector<Direction>& dirs,
                                                        const UOp* steps) {
  Graph& g = n.graph();
  std::vector<Tensor> xws;
  for (const Direction& d : dirs) xws.push_back(project(cell, s, d));
  Tensor count = index_value(g, steps);
  int loop = g.begin_loop(n.where(), count.uop(), s.t);
  if (steps->op != Op::CONST) g.set_loop_rows(loop, steps);
  std::vector<const UOp*> next, stacked;
  try {
    Tensor k(&g, g.loop_iteration(loop));
    Tensor back = count.sub(k.like(1.0)).sub(k);
    Tensor lens = s.lens.valid() ? s.lens.cast(dtypes::int64) : Tensor();
    for (size_t i = 0; i < dirs.size(); ++i) {
      const Direction& d = dirs[i];
      Tensor t = d.reverse ? back : k;
      Tensor h(&g, g.add_loop_state(loop, d.h0.uop()));
      Tensor c = cell == Cell::kLstm ? Tensor(&g, g.add_loop_state(loop, d.c0.uop())) : h;
      auto [hn, cn] = step(cell, s, d, xws[i].gather(t, 0), h, c);
      Tensor y = hn;
      if (lens.valid()) {
        Masked m = mask_step(cell, s, lens.gt(t), hn, cn, h, c);
        y = m.y;
        hn = m.h;
        cn = m.c;
      }
      next.push_back(hn.uop());
      if (cell == Cell::kLstm) next.push_back(cn.uop());
      stacked.push_back(y.uop());
    }
  } catch (...) {
    g.abandon_loop(loop);
    throw;
  }
  std::vector<const UOp*> finals = g.end_loop(loop, next, stacked);
  std::vector<std::tuple<Tensor, Tensor, Tensor>> out;
  size_t per = cell == Cell::kLstm ? 2 : 1;
  for (size_t i = 0; i < dirs.size(); ++i) {
    Tensor y(&g, finals[next.size() + i]);
    // Stacked in iteration order: a reverse direction's rows run from the last step back.
    if (dirs[i].reverse) y = y.flip({0});
    Tensor h(&g, finals[per * i]);
    Tensor c = cell == Cell::kLstm ? Tensor(&g, finals[per * i + 1]) : h;
    out.emplace_back(y, h, c);
  }
  return out;
}

// Direction k's slice of a (dirs, ...) tensor, without its leading axis.
Tensor of_direction(const Tensor& x, int64_t k) {
  std::vector<std::pair<int64_t, int64_t>> b = {{k, k + 1}};
  for (int64_t d = 1; d < x.ndim(); ++d) b.push_back({0, x.dim(d)});
  return x.shrink(b).squeeze({0});
}

V recurrent(NodeContext& n, Cell cell) {
  int64_t gates = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
  std::string direction = n.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    n.invalid("direction '" + direction + "' (forward, reverse or bidirectional)");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int64_t layout = n.attr_int("layout", 0);
  if (layout != 0 && layout != 1) n.invalid("layout must be 0 or 1, got " + std::to_string(layout));
  bool batch_first = layout == 1;

  Sequence s;
  s.x = n.input(0);
  if (s.x.ndim() != 3) n.invalid("X must be rank 3, got " + shape_str(s.x.shape()));
  if (!s.x.dtype().is_float()) n.unsupported("X of a non-float type");
  if (batch_first) s.x = s.x.permute({1, 0, 2});
  s.t = s.x.dim(0);
  s.b = s.x.dim(1);
  Tensor w = n.input(1), r = n.input(2);
  if (w.ndim() != 3 || r.ndim() != 3)
    n.invalid("W and R must be rank 3, got " + shape_str(w.shape()) + " and " +
              shape_str(r.shape()));
  s.hidden = n.attr_int("hidden_size", r.dim(2));
  int64_t h = s.hidden, gh = gates * h;
  if (w.shape() != Shape{dirs, gh, s.x.dim(2)})
    n.invalid("W is " + shape_str(w.shape()) + ", expected " + shape_str({dirs, gh, s.x.dim(2)}));
  if (r.shape() != Shape{dirs, gh, h})
    n.invalid("R is " + shape_str(r.shape()) + ", expected " + shape_str({dirs, gh, h}));
  if (w.dtype() != s.x.dtype() || r.dtype() != s.x.dtype()) n.invalid("W and R must have X's type");
  s.clip = n.has_attr("clip") ? n.attr_float("clip") : 0.0;
  if (n.has_attr("clip") && s.clip <= 0) n.invalid("clip must be positive");
  s.linear_before_reset = cell == Cell::kGru && n.attr_int("linear_before_reset", 0) != 0;
  s.input_forget = cell == Cell::kLstm && n.attr_int("input_forget", 0) != 0;
  if (n.has_input(4)) {
    s.lens = n.input(4);
    if (!s.lens.dtype().is_int() || s.lens.shape() != Shape{s.b})
      n.invalid("sequence_lens must be integers of shape (" + std::to_string(s.b) + "), got " +
                shape_str(s.lens.shape()));
  }

  // A state input: (dirs, B, H), or (B, dirs, H) in layout 1.
  auto state = [&](size_t i, const char* what) -> Tensor {
    if (!n.has_input(i)) return Tensor::full(n.graph(), {dirs, s.b, h}, 0.0, s.x.dtype());
    Tensor v = n.input(i);
    Shape want = batch_first ? Shape{s.b, dirs, h} : Shape{dirs, s.b, h};
    if (v.shape() != want)
      n.invalid(std::string(what) + " is " + shape_str(v.shape()) + ", expected " +
                shape_str(want));
    return batch_first ? v.permute({1, 0, 2}) : v;
  };
  Tensor h0 = state(5, "initial_h");
  Tensor c0 = cell == Cell::kLstm ? state(6, "initial_c") : h0;
  Tensor bias, peep;
  if (n.has_input(3)) {
    bias = n.input(3);
    if (bias.shape() != Shape{dirs, 2 * gh})
      n.invalid("B is " + shape_str(bias.shape()) + ", expected " + shape_str({dirs, 2 * gh}));
  }
  if (cell == Cell::kLstm && n.has_input(7)) {
    peep = n.input(7);
    if (peep.shape() != Shape{dirs, 3 * h})
      n.invalid("P is " + shape_str(peep.shape()) + ", expected " + shape_str({dirs, 3 * h}));
  }
  std::vector<Activation> act = activations(n, cell, dirs);
  size_t per = act.size() / static_cast<size_t>(dirs);

  std::vector<Direction> ds;
  for (int64_t k = 0; k < dirs; ++k) {
    Direction d;
    d.w = of_direction(w, k);
    d.r = of_direction(r, k);
    if (bias.valid()) {
      Tensor bk = of_direction(bias, k);
      d.wb = gate(bk, 0, gh);
      d.rb = gate(bk, 1, gh);
    }
    if (peep.valid()) d.p = of_direction(peep, k);
    d.h0 = of_direction(h0, k);
    d.c0 = of_direction(c0, k);
    d.reverse = direction == "reverse" || k == 1;
    d.act.assign(act.begin() + static_cast<std::ptrdiff_t>(per * static_cast<size_t>(k)),
                 act.begin() + static_cast<std::ptrdiff_t>(per * static_cast<size_t>(k + 1)));
    ds.push_back(std::move(d));
  }
  // The steps the time axis holds at run time: its size, or an expression over symbols.
  std::vector<const UOp*> x_extents = extents_now(n.graph(), s.x.uop());
  const UOp* steps = x_extents[0];
  s.symbolic_batch = x_extents[1]->op != Op::CONST;
  bool symbolic = steps->op != Op::CONST;
  if (!symbolic && s.t == 0) n.invalid("X has no time steps");
  std::vector<std::tuple<Tensor, Tensor, Tensor>> runs;
  // Inside a loop group's body the recurrence unrolls (loop groups do not nest).
  bool in_body = n.graph().in_loop_body();
  if (symbolic && in_body)
    n.unsupported(
        "a recurrence over a symbolic length inside a loop group's body (loop groups "
        "do not nest)");
  if (symbolic || (s.t > kMaxUnrolledSteps && !in_body)) {
    runs = grouped(n, cell, s, ds, steps);
  } else {
    for (const Direction& d : ds) runs.push_back(unrolled(cell, s, d));
  }
  std::vector<Tensor> ys, hs, cs;
  for (auto& [y, hl, cl] : runs) {
    ys.push_back(y.unsqueeze(1));  // (T, 1, B, H)
    hs.push_back(hl.unsqueeze(0));
    cs.push_back(cl.unsqueeze(0));
  }
  Tensor y = concat(ys, 1), yh = concat(hs, 0), yc = concat(cs, 0);
  if (batch_first) {
    y = y.permute({2, 0, 1, 3});  // (B, T, dirs, H)
    yh = yh.permute({1, 0, 2});
    yc = yc.permute({1, 0, 2});
  }
  if (cell == Cell::kLstm) return V{y, yh, yc};
  return V{y, yh};
}

}  // namespace

void register_recurrent_ops(OpRegistry& r) {
  r["RNN"] = [](NodeContext& n) { return recurrent(n, Cell::kRnn); };
  r["GRU"] = [](NodeContext& n) { return recurrent(n, Cell::kGru); };
  r["LSTM"] = [](NodeContext& n) { return recurrent(n, Cell::kLstm); };
}

}  // namespace kiln::onnxfe
