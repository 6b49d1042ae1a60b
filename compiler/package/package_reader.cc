#include "compiler/package/package_reader.h"

#include <map>
#include <sstream>

#include "compiler/package/package_signing.h"
#include "compiler/package/package_writer.h"
#include "compiler/support/error.h"
#include "kiln/schema/kiln_generated.h"

namespace kiln {

namespace {

std::string json_str(const flatbuffers::String* s) {
  std::string r = "\"";
  if (s)
    for (char c : s->str()) {
      if (c == '"' || c == '\\') r += '\\';
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        r += buf;
        continue;
      }
      r += c;
    }
  return r + "\"";
}

std::string shape_of(const flatbuffers::Vector<int64_t>* s) {
  std::string r = "[";
  if (s)
    for (size_t i = 0; i < s->size(); ++i)
      r += (i ? "," : "") + std::to_string(s->Get(static_cast<flatbuffers::uoffset_t>(i)));
  return r + "]";
}

// What `inspect` says of one variant (the package's own, or one of its `variants`: both tables
// have these fields).
struct VariantFacts {
  std::string cpu;
  std::vector<std::string> features;
  size_t kernels = 0, launches = 0, groups = 0, arena_slots = 0, code = 0;
  uint64_t arena = 0, lower_bound = 0, flops = 0;  // flops: per run, over the launches
  std::map<uint64_t, uint64_t> weights;            // offset in the constants -> bytes
  uint64_t weight_bytes = 0, shared_bytes = 0;
};

template <typename T>
VariantFacts facts_of(const T* v) {
  VariantFacts f;
  if (v->target() && v->target()->cpu()) f.cpu = v->target()->cpu()->str();
  if (v->target() && v->target()->required_features())
    for (const flatbuffers::String* s : *v->target()->required_features())
      f.features.push_back(s->str());
  f.kernels = v->kernels() ? v->kernels()->size() : 0;
  f.groups = v->groups() ? v->groups()->size() : 0;
  if (v->groups())
    for (const fb::Group* g : *v->groups()) {
      if (!g->launches()) continue;
      f.launches += g->launches()->size();
      for (const fb::Launch* l : *g->launches())
        if (v->kernels() && l->kernel() < v->kernels()->size())
          f.flops += v->kernels()->Get(l->kernel())->flops();
    }
  if (v->slots())
    for (const fb::Slot* sl : *v->slots()) {
      f.arena_slots += sl->kind() == fb::SlotKind::Arena;
      if (sl->kind() == fb::SlotKind::Constant) f.weights[sl->offset()] = sl->size();
    }
  for (const auto& [off, size] : f.weights) f.weight_bytes += size;
  f.code = v->code() ? v->code()->size() : 0;
  f.arena = v->arena_size();
  f.lower_bound = v->arena_lower_bound();
  return f;
}

// Every variant's facts, with the weight bytes each shares with another variant.
std::vector<VariantFacts> variant_facts(const fb::Package* p) {
  std::vector<VariantFacts> all = {facts_of(p)};
  if (p->variants())
    for (const fb::Variant* v : *p->variants()) all.push_back(facts_of(v));
  for (size_t i = 0; i < all.size(); ++i)
    for (const auto& [off, size] : all[i].weights)
      for (size_t j = 0; j < all.size(); ++j)
        if (j != i && all[j].weights.count(off)) {
          all[i].shared_bytes += size;
          break;
        }
  return all;
}

}  // namespace

const fb::Package* verified_package(const std::vector<uint8_t>& bytes) {
  flatbuffers::Verifier v(bytes.data(), bytes.size(), 64, 10000000);
  if (bytes.size() < 8 || !fb::PackageBufferHasIdentifier(bytes.data()) ||
      !fb::VerifyPackageBuffer(v))
    throw Error("not a valid kiln package (FlatBuffers verification failed)");
  return fb::GetPackage(bytes.data());
}

std::string describe_package(const std::vector<uint8_t>& bytes, bool json) {
  const fb::Package* p = verified_package(bytes);
  SignatureInfo sig = package_signature(bytes);
  uint32_t crc = package_metadata_crc(bytes.data(), bytes.size());
  bool crc_ok = crc == p->metadata_crc32c();
  size_t launches = 0;
  if (p->groups())
    for (const fb::Group* g : *p->groups()) launches += g->launches() ? g->launches()->size() : 0;
  std::ostringstream os;
  auto tensors = [&](const flatbuffers::Vector<flatbuffers::Offset<fb::TensorInfo>>* ts) {
    std::string r = json ? "[" : "";
    if (!ts) return r + (json ? "]" : "");
    bool first = true;
    for (const fb::TensorInfo* t : *ts) {
      if (json) {
        r += std::string(first ? "" : ", ") + "{\"name\": " + json_str(t->name()) +
             ", \"dtype\": \"" + fb::EnumNameDType(t->dtype()) +
             "\", \"shape\": " + shape_of(t->shape()) + "}";
      } else {
        r += "  " + (t->name() ? t->name()->str() : std::string("?")) + ": " +
             fb::EnumNameDType(t->dtype()) + " " + shape_of(t->shape()) + "\n";
      }
      first = false;
    }
    return r + (json ? "]" : "");
  };
  // Format 2.4: the symbolic dims, with their bounds; 2.5: symbols an input's values set, and
  // the checks over them.
  auto value_of = [&](int32_t k) -> std::pair<const flatbuffers::String*, size_t> {
    if (p->inputs())
      for (const fb::TensorInfo* t : *p->inputs())
        if (t->value_symbols())
          for (size_t e = 0; e < t->value_symbols()->size(); ++e)
            if (t->value_symbols()->Get(static_cast<flatbuffers::uoffset_t>(e)) == k)
              return {t->name(), e};
    return {nullptr, 0};
  };
  auto symbols = [&] {
    std::string r = json ? "[" : "";
    if (p->symbols())
      for (flatbuffers::uoffset_t k = 0; k < p->symbols()->size(); ++k) {
        const fb::Symbol* sy = p->symbols()->Get(k);
        std::string name = sy->name() ? sy->name()->str() : "?";
        auto [input, element] = value_of(static_cast<int32_t>(k));
        if (json)
          r += std::string(r.size() > 1 ? ", " : "") + "{\"name\": " + json_str(sy->name()) +
               ", \"min\": " + std::to_string(sy->min()) +
               ", \"max\": " + std::to_string(sy->max()) +
               (!input ? std::string()
                       : ", \"value_of\": {\"input\": " + json_str(input) +
                             ", \"element\": " + std::to_string(element) + "}") +
               "}";
        else if (input)
          r += "symbol " + name + ": the value of input '" + input->str() + "' element " +
               std::to_string(element) + ", read at run time\n";
        else
          r += "symbol " + name + ": [" + std::to_string(sy->min()) + ", " +
               std::to_string(sy->max()) + "] (shapes below are at the maximums)\n";
      }
    return r + (json ? "]" : "");
  };
  auto checks = [&] {
    std::string r = json ? "[" : "";
    if (p->checks())
      for (const fb::Check* c : *p->checks())
        r += json ? std::string(r.size() > 1 ? ", " : "") + json_str(c->message())
                  : "check: " + (c->message() ? c->message()->str() : std::string("?")) + "\n";
    return r + (json ? "]" : "");
  };
  // Format 2.8: the loop groups (variant 0's).
  auto loops = [&] {
    std::string r = json ? "[" : "";
    if (p->loops())
      for (const fb::Loop* l : *p->loops()) {
        std::string name = l->name() ? l->name()->str() : "?";
        std::string trips =
            l->trips_slot() < 0 ? std::string("none") : "slot " + std::to_string(l->trips_slot());
        std::string cond =
            l->cond_slot() < 0 ? std::string("none") : "slot " + std::to_string(l->cond_slot());
        if (json)
          r += std::string(r.size() > 1 ? ", " : "") + "{\"name\": " + json_str(l->name()) +
               ", \"first_group\": " + std::to_string(l->first_group()) +
               ", \"last_group\": " + std::to_string(l->last_group()) +
               ", \"trips_slot\": " + std::to_string(l->trips_slot()) +
               ", \"cond_slot\": " + std::to_string(l->cond_slot()) +
               ", \"max_trips\": " + std::to_string(l->max_trips()) + "}";
        else
          r += "loop " + name + ": groups " + std::to_string(l->first_group()) + ".." +
               std::to_string(l->last_group()) + " per iteration, trip count " + trips +
               ", condition " + cond + ", at most " + std::to_string(l->max_trips()) +
               " iterations\n";
      }
    return r + (json ? "]" : "");
  };
  const fb::Provenance* prov = p->provenance();
  const fb::Target* tgt = p->target();
  std::string feats = json ? "[" : "";
  if (tgt && tgt->required_features())
    for (size_t i = 0; i < tgt->required_features()->size(); ++i)
      feats +=
          (i ? (json ? ", " : " ") : "") +
          (json ? json_str(tgt->required_features()->Get(static_cast<flatbuffers::uoffset_t>(i)))
                : tgt->required_features()->Get(static_cast<flatbuffers::uoffset_t>(i))->str());
  if (json) feats += "]";
  size_t arena_slots = 0;
  if (p->slots())
    for (const fb::Slot* sl : *p->slots()) arena_slots += sl->kind() == fb::SlotKind::Arena;
  size_t kernels = p->kernels() ? p->kernels()->size() : 0;
  size_t groups = p->groups() ? p->groups()->size() : 0;
  size_t code = p->code() ? p->code()->size() : 0,
         consts = p->constants() ? p->constants()->size() : 0;
  std::vector<VariantFacts> variants = variant_facts(p);
  auto variants_json = [&] {
    std::string r = "[";
    for (size_t i = 0; i < variants.size(); ++i) {
      const VariantFacts& v = variants[i];
      std::string fs;
      for (const std::string& f : v.features) fs += (fs.empty() ? "\"" : ", \"") + f + "\"";
      r += std::string(i ? ", " : "") + "{\"cpu\": \"" + v.cpu + "\", \"required_features\": [" +
           fs + "], \"kernels\": " + std::to_string(v.kernels) +
           ", \"launches\": " + std::to_string(v.launches) +
           ", \"groups\": " + std::to_string(v.groups) +
           ", \"arena_bytes\": " + std::to_string(v.arena) +
           ", \"code_bytes\": " + std::to_string(v.code) +
           ", \"weight_bytes\": " + std::to_string(v.weight_bytes) +
           ", \"shared_weight_bytes\": " + std::to_string(v.shared_bytes) + "}";
    }
    return r + "]";
  };
  if (json) {
    os << "{\"format\": \"" << (prov ? prov->format_major() : 0) << "."
       << (prov ? prov->format_minor() : 0)
       << "\", \"producer\": " << json_str(prov ? prov->producer() : nullptr)
       << ", \"model_sha256\": " << json_str(prov ? prov->model_sha256() : nullptr)
       << ", \"target\": " << json_str(tgt ? tgt->triple() : nullptr)
       << ", \"cpu\": " << json_str(tgt ? tgt->cpu() : nullptr)
       << ", \"required_features\": " << feats << ", \"inputs\": " << tensors(p->inputs())
       << ", \"outputs\": " << tensors(p->outputs()) << ", \"kernels\": " << kernels
       << ", \"launches\": " << launches << ", \"groups\": " << groups
       << ", \"flops\": " << variants[0].flops << ", \"arena_bytes\": " << p->arena_size()
       << ", \"arena_slots\": " << arena_slots
       << ", \"arena_lower_bound_bytes\": " << p->arena_lower_bound()
       << ", \"constant_bytes\": " << consts << ", \"code_bytes\": " << code
       << ", \"variants\": " << variants_json() << ", \"file_bytes\": " << bytes.size()
       << ", \"metadata_checksum_ok\": " << (crc_ok ? "true" : "false")
       << ", \"selftest\": " << (p->selftest() ? "true" : "false")
       << ", \"signed_by\": " << (sig.signer.empty() ? "null" : "\"" + sig.signer + "\"")
       << ", \"signature_ok\": " << (sig.valid ? "true" : "false") << ", \"symbols\": " << symbols()
       << ", \"checks\": " << checks() << ", \"loops\": " << loops() << "}";
    return os.str();
  }
  os << "format " << (prov ? prov->format_major() : 0) << "." << (prov ? prov->format_minor() : 0)
     << ", produced by " << (prov && prov->producer() ? prov->producer()->str() : "?") << "\n";
  if (prov && prov->model_sha256()) os << "model sha256: " << prov->model_sha256()->str() << "\n";
  if (prov && prov->flags()) {
    os << "flags:";
    for (const flatbuffers::String* f : *prov->flags()) os << " " << f->str();
    os << "\n";
  }
  os << "target: " << (tgt && tgt->triple() ? tgt->triple()->str() : "?") << " cpu "
     << (tgt && tgt->cpu() ? tgt->cpu()->str() : "?") << "\n";
  os << "required CPU features: " << feats << "\n";
  os << symbols() << checks() << "inputs:\n"
     << tensors(p->inputs()) << "outputs:\n"
     << tensors(p->outputs());
  os << loops();
  os << "kernels: " << kernels << ", launches: " << launches << ", groups: " << groups << ", "
     << static_cast<double>(variants[0].flops) * 1e-9 << " GFLOP per run\n";
  os << "arena: " << p->arena_size() << " bytes (lower bound " << p->arena_lower_bound() << "), "
     << arena_slots << " slots\n";
  os << "constants: " << consts << " bytes, code: " << code << " bytes, file: " << bytes.size()
     << " bytes\n";
  if (variants.size() > 1) {
    os << "variants: " << variants.size()
       << " (this CPU runs the last one whose features it has; kiln-run --variant CPU picks one)\n";
    for (size_t i = 0; i < variants.size(); ++i) {
      const VariantFacts& v = variants[i];
      os << "  " << i + 1 << " " << v.cpu << ": " << v.kernels << " kernels, " << v.launches
         << " launches, " << v.groups << " groups, arena " << v.arena << " bytes, code " << v.code
         << " bytes, weights " << v.weight_bytes << " bytes (" << v.shared_bytes
         << " shared with another variant, " << v.weight_bytes - v.shared_bytes
         << " its own); requires " << v.features.size() << " CPU features\n";
    }
  }
  os << "metadata checksum: " << (crc_ok ? "ok" : "MISMATCH") << "\n";
  if (p->selftest())
    os << "self-test: embedded (tolerance " << p->selftest()->tolerance()
       << " of max |expected|)\n";
  if (!sig.signer.empty())
    os << "signed by " << sig.signer << ": " << (sig.valid ? "valid" : "INVALID") << "\n";
  else
    os << "signature: none\n";
  return os.str();
}

}  // namespace kiln
