#include "compiler/tensor/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "compiler/support/error.h"
#include "compiler/tensor/ndarray.h"

namespace kiln {

namespace {

struct DescrMap {
  const char* descr;
  ScalarKind kind;
};
constexpr DescrMap kDescrs[] = {
    {"<f2", ScalarKind::Float16}, {"<f4", ScalarKind::Float32}, {"<f8", ScalarKind::Float64},
    {"|i1", ScalarKind::Int8},    {"<i2", ScalarKind::Int16},   {"<i4", ScalarKind::Int32},
    {"<i8", ScalarKind::Int64},   {"|u1", ScalarKind::UInt8},   {"<u2", ScalarKind::UInt16},
    {"<u4", ScalarKind::UInt32},  {"<u8", ScalarKind::UInt64},  {"|b1", ScalarKind::Bool},
};

std::string dict_value(const std::string& header, const std::string& key, const std::string& what) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos)
    throw Error(what + ": .npy header has no '" + key + "' (header: " + header + ")");
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) throw Error(what + ": malformed .npy header: " + header);
  size_t v = header.find_first_not_of(' ', colon + 1);
  if (v == std::string::npos) throw Error(what + ": malformed .npy header: " + header);
  if (header[v] == '(') {
    size_t e = header.find(')', v);
    if (e == std::string::npos) throw Error(what + ": malformed shape in .npy header: " + header);
    return header.substr(v, e - v + 1);
  }
  size_t e = header.find_first_of(",}", v);
  return header.substr(v, e - v);
}

}  // namespace

int64_t NpyArray::numel() const {
  return shape_numel(shape);
}

std::string npy_descr(DType d) {
  for (const auto& m : kDescrs)
    if (m.kind == d.scalar) return m.descr;
  return "";
}

NpyArray parse_npy(const std::vector<uint8_t>& b, const std::string& what) {
  if (b.size() < 10 || std::memcmp(b.data(), "\x93NUMPY", 6) != 0)
    throw Error(what + ": not a .npy file (bad magic)");
  int major = b[6];
  size_t header_len, off;
  if (major == 1) {
    header_len = b[8] | (size_t(b[9]) << 8);
    off = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) throw Error(what + ": truncated .npy header");
    header_len = b[8] | (size_t(b[9]) << 8) | (size_t(b[10]) << 16) | (size_t(b[11]) << 24);
    off = 12;
  } else {
    throw Error(what + ": unsupported .npy version " + std::to_string(major));
  }
  if (off + header_len > b.size()) throw Error(what + ": truncated .npy header");
  std::string header(reinterpret_cast<const char*>(b.data() + off), header_len);
  std::string descr = dict_value(header, "descr", what);
  if (descr.size() >= 2 && (descr.front() == '\'' || descr.front() == '"'))
    descr = descr.substr(1, descr.size() - 2);
  if (descr == "<b1") descr = "|b1";
  if (descr == "<i1") descr = "|i1";
  if (descr == "<u1") descr = "|u1";
  NpyArray a;
  bool found = false;
  for (const auto& m : kDescrs)
    if (descr == m.descr) {
      a.dtype = DType(m.kind);
      found = true;
    }
  if (!found)
    throw Error(what + ": unsupported .npy dtype '" + descr + "' (big-endian or non-numeric?)");
  if (dict_value(header, "fortran_order", what).find("True") != std::string::npos)
    throw Error(what +
                ": Fortran-order .npy arrays are not supported; save with np.ascontiguousarray");
  std::string shape = dict_value(header, "shape", what);
  for (size_t i = 1; i < shape.size();) {
    size_t j = shape.find_first_of(",)", i);
    std::string tok = shape.substr(i, j - i);
    size_t s = tok.find_first_not_of(' ');
    if (s != std::string::npos) {
      try {
        a.shape.push_back(std::stoll(tok.substr(s)));
      } catch (const std::exception&) {
        throw Error(what + ": bad dimension '" + tok + "' in .npy shape " + shape);
      }
      if (a.shape.back() < 0) throw Error(what + ": negative dimension in .npy shape " + shape);
    }
    if (j == std::string::npos) break;
    i = j + 1;
  }
  size_t data_off = off + header_len;
  size_t want = static_cast<size_t>(a.numel()) * static_cast<size_t>(a.dtype.itemsize());
  if (b.size() - data_off < want)
    throw Error(what + ": truncated .npy data: " + std::to_string(b.size() - data_off) +
                " bytes, shape needs " + std::to_string(want));
  a.data.assign(b.begin() + static_cast<std::ptrdiff_t>(data_off),
                b.begin() + static_cast<std::ptrdiff_t>(data_off + want));
  return a;
}

NpyArray read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open '" + path + "'");
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_npy(b, path);
}

std::vector<uint8_t> serialize_npy(const NpyArray& a) {
  std::string descr = npy_descr(a.dtype);
  if (descr.empty()) throw Error("write_npy: dtype " + a.dtype.str() + " has no .npy form");
  std::string shape = "(";
  for (size_t i = 0; i < a.shape.size(); ++i) shape += std::to_string(a.shape[i]) + ", ";
  if (a.shape.size() > 1)
    shape.resize(shape.size() - 2);
  else if (a.shape.size() == 1)
    shape.resize(shape.size() - 1);
  shape += ")";
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.push_back(static_cast<uint8_t>(header.size() & 0xFF));
  out.push_back(static_cast<uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), a.data.begin(), a.data.end());
  return out;
}

void write_npy(const std::string& path, const NpyArray& a) {
  std::vector<uint8_t> b = serialize_npy(a);
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error("cannot write '" + path + "'");
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!f) throw Error("error writing '" + path + "'");
}

}  // namespace kiln
