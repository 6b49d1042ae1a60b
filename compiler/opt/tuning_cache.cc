#include "compiler/opt/tuning_cache.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/support/error.h"

namespace kiln {

namespace {
constexpr const char* kHeader = "kiln-tuning-cache 1";
}

std::string tuning_key(const UOp* kernel_ast, const std::string& target_id) {
  return kernel_ast->digest().hex() + " " + target_id;
}

std::vector<Opt> parse_opts(const std::string& text) {
  std::vector<Opt> opts;
  std::istringstream in(text);
  for (std::string tok; in >> tok;) {
    if (tok == "-") continue;
    size_t open = tok.find("(r"), comma = tok.find(','), close = tok.find(')');
    if (open == std::string::npos || comma == std::string::npos || close != tok.size() - 1 ||
        comma < open)
      throw Error("tuning cache: '" + tok + "' is not an opt");
    std::string kind = tok.substr(0, open);
    Opt o{OptKind::Upcast, 0, 0};
    if (kind == "UPCAST")
      o.kind = OptKind::Upcast;
    else if (kind == "UNROLL")
      o.kind = OptKind::Unroll;
    else if (kind == "TILE")
      o.kind = OptKind::Tile;
    else if (kind == "PARALLEL")
      o.kind = OptKind::Parallel;
    else
      throw Error("tuning cache: unknown opt kind '" + kind + "'");
    try {
      o.range_id = std::stoll(tok.substr(open + 2, comma - open - 2));
      o.amount = std::stoll(tok.substr(comma + 1, close - comma - 1));
    } catch (const std::exception&) {
      throw Error("tuning cache: '" + tok + "' is not an opt");
    }
    opts.push_back(o);
  }
  return opts;
}

std::string format_opts(const std::vector<Opt>& opts) {
  if (opts.empty()) return "-";
  std::string s;
  for (const Opt& o : opts) s += (s.empty() ? "" : " ") + o.str();
  return s;
}

TuningCache TuningCache::load(const std::string& path) {
  TuningCache c;
  std::ifstream f(path);
  if (!f) return c;
  std::string line;
  if (!std::getline(f, line) || line != kHeader)
    throw Error("tuning cache '" + path + "': not a kiln tuning cache (the first line is not '" +
                kHeader + "')");
  for (int n = 2; std::getline(f, line); ++n) {
    if (line.empty()) continue;
    size_t tab = line.find('\t');
    if (tab == std::string::npos)
      throw Error(str_cat("tuning cache '", path, "' line ", n, ": no tab between key and opts"));
    try {
      c.entries_[line.substr(0, tab)] = parse_opts(line.substr(tab + 1));
    } catch (const Error& e) {
      throw Error(str_cat("tuning cache '", path, "' line ", n, ": ", e.what()));
    }
  }
  return c;
}

std::optional<std::vector<Opt>> TuningCache::find(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void TuningCache::put(const std::string& key, const std::vector<Opt>& opts) {
  entries_[key] = opts;
}

void TuningCache::save(const std::string& path) const {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << kHeader << "\n";
    for (const auto& [key, opts] : entries_) f << key << "\t" << format_opts(opts) << "\n";
    if (!f) throw Error("cannot write the tuning cache '" + path + "'");
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace kiln
