#include "engine/checkpoint/checkpoint_writer.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/checkpoint/checkpoint.hpp"

namespace engine {

void write_checkpoint(const std::string& dir, const std::vector<RawTensor>& tensors,
                      const std::map<std::string, std::string>& metadata, const CheckpointLayout& layout) {
  std::uint64_t total = 0, parameters = 0;
  for (const RawTensor& t : tensors) {
    total += t.bytes.size();
    std::uint64_t n = 1;
    for (std::int64_t d : t.shape) n *= d;
    parameters += n;
  }
  const int n = std::max(1, std::min<int>(layout.shards, static_cast<int>(tensors.size())));
  nlohmann::json weight_map = nlohmann::json::object();
  std::size_t next = 0;
  std::uint64_t written = 0;
  for (int s = 0; s < n; ++s) {
    // huggingface_hub's names: 1-based, five digits; one file alone is model.safetensors.
    const std::string file = n == 1 ? "model.safetensors" : fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, n);
    std::vector<RawTensor> shard;
    // Up to this shard's share of the bytes, at least one tensor, and one left for each shard after.
    const std::uint64_t upto = total * (s + 1) / n;
    while (next < tensors.size() && (shard.empty() || written + tensors[next].bytes.size() <= upto) &&
           tensors.size() - next > static_cast<std::size_t>(n - s - 1)) {
      written += tensors[next].bytes.size();
      weight_map[tensors[next].name] = file;
      shard.push_back(tensors[next++]);
    }
    if (s == n - 1)
      while (next < tensors.size()) {
        weight_map[tensors[next].name] = file;
        shard.push_back(tensors[next++]);
      }
    write_safetensors((std::filesystem::path(dir) / file).string(), shard, metadata, layout.pad);
  }
  if (n == 1 && !layout.always_index) return;
  const std::string index = (std::filesystem::path(dir) / kWeightIndexFile).string();
  const nlohmann::json j = {{"metadata", {{"total_size", total}, {"total_parameters", parameters}}},
                            {"weight_map", weight_map}};
  std::ofstream out(index, std::ios::trunc);
  if (!(out << j.dump(4) << '\n')) throw InputError(index, "", "cannot write");
}

}  // namespace engine
