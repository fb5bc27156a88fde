// The weight files of a model directory (docs/checkpoint-formats.md#shards-and-the-index): the shards
// model.safetensors.index.json's weight_map names when it exists, else every
// model*.safetensors (one file, or shards written without an index, as
// mlx-lm's loader globs them). Every tensor is in exactly one file; an index
// naming a missing shard, a tensor its shard lacks or a tensor in two shards
// is refused with the file, the JSON path and the reason.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/checkpoint/safetensors.hpp"

namespace engine {

inline constexpr const char* kWeightIndexFile = "model.safetensors.index.json";

class Checkpoint {
 public:
  explicit Checkpoint(const std::string& dir);  // throws InputError

  bool has(const std::string& name) const { return where_.count(name) > 0; }
  // The file holding `name`; InputError naming the tensor when none does.
  const SafetensorsFile& file(const std::string& name) const;
  // As SafetensorsFile::info, in the file holding `name`.
  const TensorInfo& info(const std::string& name, const std::vector<std::int64_t>& shape = {}) const {
    return file(name).info(name, shape);
  }
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }

 private:
  void index_files(const std::string& index);
  void glob_files();
  void add_file(const std::string& path);

  std::string dir_;
  std::string index_;  // the index file, when there is one
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile*> where_;
};

}  // namespace engine
