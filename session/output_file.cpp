#include "session/output_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/base/error.hpp"

namespace session {

void write_text_file(const std::string& path, const std::string& text) {
  const auto parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw engine::InputError(path, "", std::string("cannot write it: ") + std::strerror(errno));
}

}  // namespace session
