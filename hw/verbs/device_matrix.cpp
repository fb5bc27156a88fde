#include "hw/verbs/device_matrix.hpp"

#include <fmt/format.h>

#include "engine/base/error.hpp"

namespace hw {

DeviceMatrix DeviceMatrix::parse(const std::vector<engine::JsonValue>& rows) {
  const int world = static_cast<int>(rows.size());
  DeviceMatrix m;
  for (int from = 0; from < world; ++from) {
    const std::vector<engine::JsonValue> cells = rows[from].elements();
    if (static_cast<int>(cells.size()) != world)
      rows[from].fail(fmt::format("rank {}'s row must be an array of {} entries, one per rank", from, world));
    Row parsed(world);
    for (int to = 0; to < world; ++to) {
      const nlohmann::json& cell = cells[to].raw();
      if (from == to) {
        if (!cell.is_null())
          cells[to].fail(fmt::format("rank {} to itself must be null, got {}", from, engine::describe_json(cell)));
        continue;
      }
      if (!cell.is_string() || cell.get_ref<const std::string&>().empty())
        cells[to].fail(fmt::format("rank {} -> rank {}: expected a device name such as \"rdma_en3\", got {}", from, to,
                                   engine::describe_json(cell)));
      parsed[to] = cell.get<std::string>();
    }
    m.rows_.push_back(std::move(parsed));
  }
  return m;
}

DeviceMatrix DeviceMatrix::parse(const engine::JsonValue& matrix) {
  const std::vector<engine::JsonValue> rows = matrix.elements();
  if (rows.empty()) matrix.fail("must be a non-empty array of rows, one per rank");
  return parse(rows);
}

DeviceMatrix DeviceMatrix::load(const std::string& path) {
  const nlohmann::json j = engine::load_json(path);
  return parse(engine::JsonValue(j, "", path));
}

}  // namespace hw
