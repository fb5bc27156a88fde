#include "hw/verbs/device_matrix.hpp"

#include <fmt/format.h>

#include <fstream>

#include "engine/error.hpp"

namespace hw {

DeviceMatrix DeviceMatrix::parse(const nlohmann::json& rows, const std::string& file,
                                 const std::function<std::string(int)>& row_path) {
  const auto path_of = [&](int i) { return row_path ? row_path(i) : fmt::format("/{}", i); };
  if (!rows.is_array() || rows.empty())
    throw engine::InputError(file, "", "expected a non-empty array of rows, one per rank");
  const int world = static_cast<int>(rows.size());
  DeviceMatrix m;
  for (int from = 0; from < world; ++from) {
    const nlohmann::json& row = rows[from];
    if (!row.is_array() || static_cast<int>(row.size()) != world)
      throw engine::InputError(file, path_of(from),
                               fmt::format("rank {}'s row must be an array of {} entries, one per rank", from, world));
    Row parsed(world);
    for (int to = 0; to < world; ++to) {
      const nlohmann::json& cell = row[to];
      const std::string where = fmt::format("{}/{}", path_of(from), to);
      if (from == to) {
        if (!cell.is_null())
          throw engine::InputError(file, where,
                                   fmt::format("rank {} to itself must be null, got {}", from, cell.dump()));
        continue;
      }
      if (!cell.is_string() || cell.get<std::string>().empty())
        throw engine::InputError(file, where,
                                 fmt::format("rank {} -> rank {}: expected a device name such as \"rdma_en3\", got {}",
                                             from, to, cell.dump()));
      parsed[to] = cell.get<std::string>();
    }
    m.rows_.push_back(std::move(parsed));
  }
  return m;
}

DeviceMatrix DeviceMatrix::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw engine::InputError(path, "", "cannot open the device matrix file");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::parse_error& e) {
    throw engine::InputError(path, "", std::string("not valid JSON: ") + e.what());
  }
  return parse(j, path);
}

}  // namespace hw
