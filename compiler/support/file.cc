#include "compiler/support/file.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "compiler/support/error.h"

namespace kiln {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open '" + path + "'");
  // A regular file in one read (a 100 MB model byte by byte through a growing vector took 0.3 s
  // of resnet50's compile); anything else (a pipe) to its end.
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec) {
      std::vector<uint8_t> bytes(static_cast<size_t>(size));
      if (!f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size)))
        throw Error("cannot read '" + path + "'");
      return bytes;
    }
  }
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const void* data, size_t size) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw Error("cannot write '" + path + "'");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw Error("cannot write '" + path + "': " + ec.message());
  }
}

}  // namespace kiln
