#include "engine/checkpoint/checkpoint.hpp"

#include <algorithm>
#include <filesystem>

#include "engine/base/error.hpp"
#include "engine/base/json_input.hpp"

namespace engine {

namespace fs = std::filesystem;

Checkpoint::Checkpoint(const std::string& dir) : dir_(dir) {
  const std::string index = (fs::path(dir) / kWeightIndexFile).string();
  if (fs::is_regular_file(index))
    index_files(index);
  else
    glob_files();
}

void Checkpoint::add_file(const std::string& path) {
  files_.push_back(std::make_unique<SafetensorsFile>(path));
  const SafetensorsFile& f = *files_.back();
  for (const auto& [name, _] : f.tensors()) {
    const auto [it, added] = where_.emplace(name, &f);
    if (!added)
      throw InputError(f.path(), "/" + name,
                       fmt::format("is also in {}: a tensor must be in exactly one shard", it->second->path()));
  }
}

// mlx-lm's loader ignores the index and globs; without an index, so do we.
void Checkpoint::glob_files() {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.starts_with("model") && name.ends_with(".safetensors"))
      paths.push_back(entry.path().string());
  }
  if (paths.empty())
    throw InputError((fs::path(dir_) / "model.safetensors").string(), "",
                     "cannot open (a model directory needs config.json and model.safetensors, its shards "
                     "model-*-of-*.safetensors, or model.safetensors.index.json)");
  std::sort(paths.begin(), paths.end());  // the same order, so the same errors, on every file system
  for (const std::string& p : paths) add_file(p);
}

void Checkpoint::index_files(const std::string& index) {
  index_ = index;
  const nlohmann::json j = load_json(index);
  JsonObject top(JsonValue(j, "", index));
  const JsonValue map = top.need("weight_map");
  if (!map.raw().is_object() || map.raw().empty()) map.fail("must be an object of tensor: shard file, not empty");
  // Only the shards the map names are opened, each once, in name order.
  std::map<std::string, std::vector<std::string>> by_shard;
  for (const auto& [tensor, shard] : map.raw().items()) {
    const JsonValue v(shard, json_pointer(map.path(), tensor), index);
    const std::string file = v.as<std::string>();
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..")
      v.fail(fmt::format("'{}' is not a file name in the model directory", file));
    if (!fs::is_regular_file(fs::path(dir_) / file)) v.fail(fmt::format("shard '{}' does not exist", file));
    by_shard[file].push_back(tensor);
  }
  for (const auto& [file, tensors] : by_shard) {
    add_file((fs::path(dir_) / file).string());
    const SafetensorsFile& f = *files_.back();
    for (const std::string& tensor : tensors)
      if (!f.has(tensor))
        throw InputError(f.path(), "/" + tensor,
                         fmt::format("missing tensor: {}'s weight_map places it in this shard", kWeightIndexFile));
  }
  // A tensor a shard holds but the map places elsewhere is the "two shards" case above;
  // one the map leaves out is not loaded by transformers either: drop it.
  for (auto it = where_.begin(); it != where_.end();)
    it = map.raw().contains(it->first) ? std::next(it) : where_.erase(it);
}

const SafetensorsFile& Checkpoint::file(const std::string& name) const {
  const auto it = where_.find(name);
  if (it != where_.end()) return *it->second;
  if (!index_.empty()) throw InputError(index_, json_pointer("/weight_map", name), "missing tensor");
  if (files_.size() == 1) return *files_.front();  // its info() names the file and the tensor
  throw InputError(files_.front()->path(), "/" + name,
                   fmt::format("missing tensor: in none of the {} files model*.safetensors", files_.size()));
}

}  // namespace engine
