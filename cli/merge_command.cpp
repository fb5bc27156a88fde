// meshinfer merge: the shard files of a study spread over machines (chaos or
// plan with --shard) become the output a single run would have written.
#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/study_shard.hpp"
#include "engine/base/error.hpp"

namespace cli {

namespace {

struct MergeOptions {
  std::vector<std::string> files;
  std::string out;
};

// `args` without `--name VALUE` / `--name=VALUE`.
std::vector<std::string> without_option(const std::vector<std::string>& args, const std::string& name) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name) {
      ++i;
      continue;
    }
    if (!args[i].starts_with(name + "=")) out.push_back(args[i]);
  }
  return out;
}

nlohmann::json read_shard(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw engine::InputError(file, "", "cannot open the shard file");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw engine::InputError(file, "", std::string("not JSON: ") + e.what());
  }
  if (j.value("schema", "") != "meshinfer.shard/1")
    throw engine::InputError(file, "schema", "not a meshinfer shard file (meshinfer.shard/1)");
  return j;
}

int merge(const MergeOptions& o) {
  std::vector<std::string> command;
  int count = 0, items = 0;
  std::set<int> shards;
  std::vector<sim::ChildResult> results;
  std::vector<bool> have;
  for (const auto& file : o.files) {
    const nlohmann::json j = read_shard(file);
    std::vector<std::string> cmd;
    int k = 0, n = 0, m = 0;
    try {
      cmd = without_option(j.at("command").get<std::vector<std::string>>(), "--shard");
      k = j.at("shard").at(0).get<int>();
      n = j.at("shard").at(1).get<int>();
      m = j.at("items").get<int>();
    } catch (const nlohmann::json::exception& e) {
      throw engine::InputError(file, "", std::string("malformed shard file: ") + e.what());
    }
    if (command.empty()) {
      command = cmd;
      count = n;
      items = m;
      results.resize(items);
      have.assign(items, false);
    }
    if (cmd != command) throw engine::InputError(file, "command", "not the same command as " + o.files[0]);
    if (n != count || m != items)
      throw engine::InputError(
          file, "shard", fmt::format("{} shards of {} items, not {} of {} as {}", n, m, count, items, o.files[0]));
    if (!shards.insert(k).second) throw engine::InputError(file, "shard", fmt::format("shard {} given twice", k));
    for (const auto& r : j.at("results")) {
      const int item = r.at("item").get<int>();
      if (item < 0 || item >= items || item % count != k || have[item])
        throw engine::InputError(file, "results", fmt::format("item {} does not belong to shard {}/{}", item, k, n));
      results[item] = {r.at("ok").get<bool>(), r.at("output").get<std::string>()};
      have[item] = true;
    }
  }
  for (int k = 0; k < count; ++k)
    if (!shards.contains(k))
      throw engine::InputError("merge", "shard",
                               fmt::format("shard {}/{} is missing; give every shard's file", k, count));
  if (!o.out.empty()) {
    command = without_option(command, "--out");
    command.insert(command.end(), {"--out", o.out});
  }
  set_merged_results(&results);
  const int status = run_app(command);
  set_merged_results(nullptr);
  return status;
}

}  // namespace

void add_merge_command(CLI::App& app, int& status) {
  auto o = std::make_shared<MergeOptions>();
  auto* cmd = app.add_subcommand(
      "merge", "join the shard files of a chaos campaign or plan sweep run with --shard into a single run's output");
  cmd->add_option("shards", o->files, "every shard's file (run from the directory the shards ran in)")->required();
  cmd->add_option("--out", o->out, "where the output goes (default: the --out the shards were given)");
  cmd->callback([o, &status] { status = merge(*o); });
}

}  // namespace cli
