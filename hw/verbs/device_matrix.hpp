// Which RDMA device each rank uses to reach each peer, in the format MLX-based
// tools use (MLX_IBV_DEVICES): a world x world JSON matrix of device names such
// as "rdma_en3", null on the diagonal. No verbs dependency.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace hw {

class DeviceMatrix {
 public:
  using Row = std::vector<std::optional<std::string>>;

  int world() const { return static_cast<int>(rows_.size()); }
  // REQUIRES: from != to, both in [0, world()).
  const std::string& device(int from, int to) const { return *rows_.at(from).at(to); }
  // What rank `rank` needs: its device per peer, nullopt for itself.
  const Row& row(int rank) const { return rows_.at(rank); }

  // `rows` is the matrix itself, or the "rdma" rows gathered from a hostfile;
  // `row_path(i)` is where row i sits in `file` (default "/i"), for errors.
  // Throws engine::InputError naming the file, the JSON path and the pair.
  static DeviceMatrix parse(const nlohmann::json& rows, const std::string& file,
                            const std::function<std::string(int)>& row_path = {});
  // Reads and parses a matrix file. Throws engine::InputError.
  static DeviceMatrix load(const std::string& path);

 private:
  std::vector<Row> rows_;
};

}  // namespace hw
