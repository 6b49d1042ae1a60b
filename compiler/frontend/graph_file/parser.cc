#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "compiler/frontend/graph_file/call.h"
#include "compiler/frontend/graph_file/graph_file.h"
#include "compiler/frontend/graph_file/lexer.h"
#include "compiler/support/error.h"
#include "compiler/tensor/npy.h"

namespace kiln {

namespace {

using kg::Tok;
using kg::Token;
using kg::Value;

class Parser {
 public:
  Parser(std::vector<Token> toks, std::string file, std::string dir, int64_t max_generated_bytes,
         Graph& g)
      : t_(std::move(toks)),
        file_(std::move(file)),
        dir_(std::move(dir)),
        max_generated_bytes_(max_generated_bytes),
        generated_left_(max_generated_bytes),
        g_(g) {}

  void run() {
    while (peek().kind != Tok::End) {
      if (peek().kind == Tok::Newline) {
        ++p_;
        continue;
      }
      statement();
    }
    if (g_.outputs().empty()) throw Error(file_ + ": the graph has no 'output' statement");
  }

 private:
  const Token& peek(size_t k = 0) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  std::string at(const Token& t) const { return str_cat(file_, ":", t.line, ":", t.col); }
  [[noreturn]] void fail(const Token& t, const std::string& what) const {
    throw Error(at(t) + ": " + what);
  }
  [[noreturn]] void expected(const std::string& what) const {
    const Token& t = peek();
    std::string got =
        t.kind == Tok::Ident || t.kind == Tok::Number ? "'" + t.text + "'" : kg::tok_name(t.kind);
    fail(t, "expected " + what + ", got " + got);
  }
  const Token& expect(Tok k, const std::string& what) {
    if (peek().kind != k) expected(what);
    return t_[p_++];
  }
  bool accept(Tok k) {
    if (peek().kind != k) return false;
    ++p_;
    return true;
  }
  std::string name(const std::string& what) {
    if (peek().kind == Tok::Ident || peek().kind == Tok::String) return t_[p_++].text;
    expected(what);
  }

  void statement() {
    const Token& first = peek();
    if (first.kind == Tok::Ident && (first.text == "input" || first.text == "weight") &&
        (peek(1).kind == Tok::Ident || peek(1).kind == Tok::String) && peek(2).kind == Tok::Colon) {
      declaration(first.text == "weight");
    } else if (first.kind == Tok::Ident && first.text == "output" && peek(1).kind != Tok::Equals &&
               peek(1).kind != Tok::Comma) {
      output();
    } else {
      assignment();
    }
    expect(Tok::Newline, "end of line");
  }

  // input NAME: DTYPE[dims]   |   weight NAME: DTYPE[dims] = init(...)
  void declaration(bool is_weight) {
    ++p_;
    const Token& nt = peek();
    std::string n = name("a name");
    if (tensors_.count(n)) fail(nt, "'" + n + "' is already defined");
    expect(Tok::Colon, "':'");
    const Token& dt = peek();
    std::string dname = name("a dtype");
    ScalarKind k;
    if (!parse_scalar(dname, &k) || k == ScalarKind::Void || k == ScalarKind::Index)
      fail(dt, "unknown dtype '" + dname + "'");
    DType d(k);
    expect(Tok::LBracket, "'[' and the shape");
    Shape shape;
    if (!accept(Tok::RBracket)) {
      do {
        const Token& dim = expect(Tok::Number, "a dimension");
        int64_t v = to_int(dim);
        if (v < 0) fail(dim, "negative dimension");
        shape.push_back(v);
      } while (accept(Tok::Comma));
      expect(Tok::RBracket, "',' or ']'");
    }
    try {
      shape_numel(shape);
    } catch (const Error& e) {
      fail(dt, e.what());
    }
    if (!is_weight) {
      tensors_[n] = Tensor::input(g_, n, d, shape);
      return;
    }
    expect(Tok::Equals, "'=' and an initializer (npy, random, values, zeros)");
    tensors_[n] = Tensor::weight(g_, n, initializer(n, d, shape));
  }

  NDArray initializer(const std::string& n, DType d, const Shape& shape) {
    const Token& it = peek();
    std::string kind = name("an initializer");
    kg::Call c(at(it), kind, g_);
    arguments(c);
    if (kind == "npy") {
      if (c.args.size() != 1 || c.args[0].kind != Value::Kind::String)
        c.fail("takes one string: the .npy path");
      std::string path = (std::filesystem::path(dir_) / c.args[0].s).string();
      NpyArray a = read_npy(path);
      if (a.dtype != d || a.shape != shape)
        c.fail("'" + path + "' holds " + a.dtype.str() + shape_str(a.shape) + ", weight '" + n +
               "' is declared " + d.str() + shape_str(shape));
      return NDArray(d, shape, std::move(a.data));
    }
    // zeros(), random() and values() build the weight in the compiler's memory from a few
    // characters of text; the file's total is bounded (npy() has no limit), so that a typo or a
    // hostile file cannot make the compiler build gigabytes.
    if (shape_numel(shape) > generated_left_ / d.itemsize())
      c.fail(str_cat("weight '", n, "' ", d.str(), shape_str(shape),
                     " is larger than what zeros(), random() and values() may still build in this "
                     "file: ",
                     generated_left_, " of its ", max_generated_bytes_,
                     " bytes are left (store large weights with npy(\"file.npy\"))"));
    generated_left_ -= shape_numel(shape) * d.itemsize();
    NDArray a(d, shape);
    if (kind == "zeros") {
      c.done(0, 0);
      return a;
    }
    if (kind == "random") {
      uint64_t seed = static_cast<uint64_t>(c.get_int("seed", 0));
      double scale = c.get_float("scale", 1.0);
      c.done(0, 0);
      std::mt19937_64 rng(seed);
      std::uniform_real_distribution<double> u(-scale, scale);
      for (int64_t i = 0; i < a.numel(); ++i) {
        double v = u(rng);
        a.set(i, d.is_float() ? ConstValue::of_float(v)
                              : ConstValue::of_int(static_cast<int64_t>(std::round(v))));
      }
      return a;
    }
    if (kind == "values") {
      if (c.args.size() != 1 || c.args[0].kind != Value::Kind::List)
        c.fail("takes one list of numbers");
      const auto& l = c.args[0].list;
      if (static_cast<int64_t>(l.size()) != a.numel())
        c.fail(str_cat(l.size(), " values for a weight of ", a.numel(), " elements"));
      for (size_t i = 0; i < l.size(); ++i) {
        if (!l[i].is_number()) c.fail("values must be numbers");
        a.set(static_cast<int64_t>(i),
              d.is_float() ? ConstValue::of_float(l[i].number()) : ConstValue::of_int(l[i].i));
      }
      return a;
    }
    c.fail(
        "unknown initializer (use npy(\"file.npy\"), random(seed=, scale=), values([...]) or "
        "zeros())");
  }

  // output NAME   |   output NAME = TENSOR
  void output() {
    ++p_;
    const Token& nt = peek();
    std::string n = name("the output's name");
    std::string src = n;
    if (accept(Tok::Equals)) src = name("a tensor name");
    auto it = tensors_.find(src);
    if (it == tensors_.end()) fail(nt, "output '" + src + "' is not defined");
    try {
      g_.add_output(n, it->second.uop());
    } catch (const Error& e) {
      fail(nt, e.what());
    }
  }

  // a, b = op(args...)
  void assignment() {
    std::vector<std::pair<std::string, Token>> lhs;
    do {
      const Token& t = peek();
      lhs.push_back({name("a name"), t});
    } while (accept(Tok::Comma));
    expect(Tok::Equals, "'='");
    const Token& ot = peek();
    std::string op = name("an op name");
    auto& reg = kg::op_registry();
    auto fn = reg.find(op);
    if (fn == reg.end()) fail(ot, "unknown op '" + op + "'");
    kg::Call c(at(ot), op, g_);
    arguments(c);
    std::vector<Tensor> out;
    try {
      out = fn->second(c);
    } catch (const Error& e) {
      std::string msg = e.what();
      if (msg.rfind(file_ + ":", 0) == 0) throw;
      fail(ot, op + ": " + msg);  // a Tensor API error: add the position
    }
    if (out.size() != lhs.size())
      fail(ot, str_cat(op, " gives ", out.size(), " results, ", lhs.size(), " names on the left"));
    std::vector<const UOp*> results;
    for (size_t i = 0; i < out.size(); ++i) {
      if (tensors_.count(lhs[i].first))
        fail(lhs[i].second, "'" + lhs[i].first + "' is already defined");
      tensors_[lhs[i].first] = out[i];
      results.push_back(out[i].uop());
    }
    g_.label_origin(results, lhs[0].first);  // a statement is named by its first result
  }

  void arguments(kg::Call& c) {
    expect(Tok::LParen, "'('");
    if (accept(Tok::RParen)) return;
    do {
      if ((peek().kind == Tok::Ident) && peek(1).kind == Tok::Equals) {
        const Token& k = t_[p_++];
        ++p_;
        if (c.kwargs.count(k.text)) fail(k, "attribute '" + k.text + "' given twice");
        c.kwargs[k.text] = value();
      } else {
        if (!c.kwargs.empty()) expected("a keyword argument (positional arguments come first)");
        c.args.push_back(value());
      }
    } while (accept(Tok::Comma));
    expect(Tok::RParen, "',' or ')'");
  }

  int64_t to_int(const Token& t) const {
    try {
      size_t used = 0;
      int64_t v = std::stoll(t.text, &used);
      if (used != t.text.size()) fail(t, "expected an integer, got '" + t.text + "'");
      return v;
    } catch (const std::logic_error&) {
      fail(t, "expected an integer, got '" + t.text + "'");
    }
  }

  Value value() {
    const Token& t = peek();
    Value v;
    v.line = t.line;
    v.col = t.col;
    switch (t.kind) {
      case Tok::Number: {
        ++p_;
        bool is_float =
            t.text.find_first_of(".eEin") != std::string::npos && t.text.rfind("0x", 0) != 0;
        if (is_float) {
          v.kind = Value::Kind::Float;
          std::string s = t.text;
          if (s == "inf" || s == "+inf")
            v.f = INFINITY;
          else if (s == "-inf")
            v.f = -INFINITY;
          else {
            char* end = nullptr;
            v.f = std::strtod(s.c_str(), &end);
            if (end != s.c_str() + s.size()) fail(t, "bad number '" + s + "'");
          }
        } else {
          v.kind = Value::Kind::Int;
          v.i = to_int(t);
        }
        return v;
      }
      case Tok::String:
        ++p_;
        v.kind = Value::Kind::String;
        v.s = t.text;
        return v;
      case Tok::Ident: {
        ++p_;
        if (t.text == "true" || t.text == "false") {
          v.kind = Value::Kind::Bool;
          v.i = t.text == "true";
        } else if (t.text == "nan") {
          v.kind = Value::Kind::Float;
          v.f = NAN;
        } else if (t.text == "inf") {
          v.kind = Value::Kind::Float;
          v.f = INFINITY;
        } else if (auto it = tensors_.find(t.text); it != tensors_.end()) {
          v.kind = Value::Kind::Tensor;
          v.t = it->second;
        } else {
          v.kind = Value::Kind::Name;
          v.s = t.text;
        }
        return v;
      }
      case Tok::LBracket: {
        ++p_;
        v.kind = Value::Kind::List;
        if (accept(Tok::RBracket)) return v;
        do v.list.push_back(value());
        while (accept(Tok::Comma));
        expect(Tok::RBracket, "',' or ']'");
        return v;
      }
      default:
        expected("a value (a number, string, name or [list])");
    }
  }

  std::vector<Token> t_;
  size_t p_ = 0;
  std::string file_, dir_;
  int64_t max_generated_bytes_;
  int64_t generated_left_;
  Graph& g_;
  std::map<std::string, Tensor> tensors_;
};

}  // namespace

void parse_graph_text(const std::string& text, const std::string& name, const std::string& dir,
                      Graph& g, int64_t max_generated_bytes) {
  Parser(kg::lex(text, name), name, dir, max_generated_bytes, g).run();
}

void load_graph_file(const std::string& path, Graph& g) {
  std::ifstream f(path);
  if (!f) throw Error("cannot open graph file '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string dir = std::filesystem::path(path).parent_path().string();
  parse_graph_text(ss.str(), path, dir.empty() ? "." : dir, g);
}

}  // namespace kiln
