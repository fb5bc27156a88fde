// Which RDMA device each rank uses to reach each peer, in the format MLX-based
// tools use (MLX_IBV_DEVICES): a world x world JSON matrix of device names such
// as "rdma_en3", null on the diagonal. No verbs dependency.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/base/json_input.hpp"

namespace hw {

class DeviceMatrix {
 public:
  using Row = std::vector<std::optional<std::string>>;

  int world() const { return static_cast<int>(rows_.size()); }
  // REQUIRES: from != to, both in [0, world()).
  const std::string& device(int from, int to) const { return *rows_.at(from).at(to); }
  // What rank `rank` needs: its device per peer, nullopt for itself.
  const Row& row(int rank) const { return rows_.at(rank); }

  // One row per rank, each read where it sits: a matrix file's own rows, or
  // the "rdma" rows of a hostfile. Throws engine::InputError naming the file,
  // the JSON pointer and the pair of ranks.
  static DeviceMatrix parse(const std::vector<engine::JsonValue>& rows);
  // A whole matrix: a non-empty JSON array of rows.
  static DeviceMatrix parse(const engine::JsonValue& matrix);
  // Reads and parses a matrix file. Throws engine::InputError.
  static DeviceMatrix load(const std::string& path);

 private:
  std::vector<Row> rows_;
};

}  // namespace hw
