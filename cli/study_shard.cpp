#include "cli/study_shard.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "session/output_file.hpp"

namespace cli {

namespace {

std::vector<std::string>& command_line() {
  static std::vector<std::string> args;
  return args;
}

const std::vector<sim::ChildResult>*& merged_results() {
  static const std::vector<sim::ChildResult>* results = nullptr;
  return results;
}

int parse_count(const std::string& text, const std::string& source) {
  try {
    std::size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw engine::InputError(source, text, "expected a whole number");
}

}  // namespace

void set_command_line(std::vector<std::string> args) { command_line() = std::move(args); }

void set_merged_results(const std::vector<sim::ChildResult>* results) { merged_results() = results; }

sim::Shard parse_shard(const std::string& text, const std::string& source) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) throw engine::InputError(source, text, "expected K/N, for example 0/4");
  const sim::Shard s{parse_count(text.substr(0, slash), source), parse_count(text.substr(slash + 1), source)};
  if (s.count < 1 || s.index < 0 || s.index >= s.count)
    throw engine::InputError(source, text, "expected K/N with 0 <= K < N (shards count from 0)");
  return s;
}

std::optional<sim::Shard> shard_from_environment(const std::function<const char*(const char*)>& getenv) {
  auto var = [&](const char* name) { return getenv(name) ? std::optional<std::string>(getenv(name)) : std::nullopt; };
  std::optional<sim::Shard> s;
  if (auto v = var("MESHINFER_SHARD")) {
    s = parse_shard(*v, "MESHINFER_SHARD");
  } else if (auto id = var("SLURM_ARRAY_TASK_ID"), count = var("SLURM_ARRAY_TASK_COUNT"); id && count) {
    // Array indices need not start at 0 (--array=1-8): count from the first.
    const int first = parse_count(var("SLURM_ARRAY_TASK_MIN").value_or("0"), "SLURM_ARRAY_TASK_MIN");
    s = parse_shard(fmt::format("{}/{}", parse_count(*id, "SLURM_ARRAY_TASK_ID") - first, *count),
                    "SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN / SLURM_ARRAY_TASK_COUNT");
  } else if (auto rank = var("OMPI_COMM_WORLD_RANK"), size = var("OMPI_COMM_WORLD_SIZE"); rank && size) {
    s = parse_shard(*rank + "/" + *size, "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE");
  } else if (auto index = var("JOB_COMPLETION_INDEX")) {
    const auto count = var("MESHINFER_SHARD_COUNT");
    if (!count)
      throw engine::InputError("JOB_COMPLETION_INDEX", *index, "set MESHINFER_SHARD_COUNT to the completions");
    s = parse_shard(*index + "/" + *count, "JOB_COMPLETION_INDEX/MESHINFER_SHARD_COUNT");
  }
  if (s && s->count == 1) return std::nullopt;
  return s;
}

void StudyShare::add_option(CLI::App* cmd) {
  cmd->add_option("--shard", flag_,
                  "run share K of N (from 0) and write a shard file for `meshinfer merge`; default: from "
                  "MESHINFER_SHARD, Slurm array, mpirun or Kubernetes Indexed Job variables");
}

sim::Workers StudyShare::workers(int jobs) {
  sim::Workers w;
  w.jobs = jobs;
  if (merged_results()) {
    w.merged = merged_results();
    return w;
  }
  shard_ = flag_.empty() ? shard_from_environment(std::getenv).value_or(sim::Shard{}) : parse_shard(flag_, "--shard");
  w.shard = shard_;
  w.ran = &ran_;
  return w;
}

std::string StudyShare::file_in(const std::string& out) const {
  return (std::filesystem::path(out) / fmt::format("shard-{}-of-{}.json", shard_.index, shard_.count)).string();
}

void StudyShare::write(const std::string& path) const {
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const auto& [item, r] : ran_.results) results.push_back({{"item", item}, {"ok", r.ok}, {"output", r.output}});
  const nlohmann::ordered_json file{{"schema", "meshinfer.shard/1"},
                                    {"command", command_line()},
                                    {"shard", {shard_.index, shard_.count}},
                                    {"items", ran_.items},
                                    {"results", results}};
  session::write_text_file(path, file.dump() + "\n");
  fmt::print("shard {}/{}: ran {} of {} simulations; merge the shards with `meshinfer merge`: {}\n", shard_.index,
             shard_.count, ran_.results.size(), ran_.items, path);
}

}  // namespace cli
