// meshinfer plan: which cluster for this model? Sweeps node counts, hardware
// mixes, links and parallelism, and ranks what works against an SLO and price.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/progress_line.hpp"
#include "cli/study_shard.hpp"
#include "engine/base/error.hpp"
#include "engine/base/json_input.hpp"
#include "engine/checkpoint/config_card.hpp"
#include "engine/input/request_trace.hpp"
#include "engine/input/scenario.hpp"
#include "engine/input/scenario_file.hpp"
#include "nlohmann/json.hpp"
#include "sim/studies/plan_html.hpp"
#include "sim/studies/plan_sweep.hpp"

namespace cli {

namespace {

struct PlanOptions {
  std::string model, quant, workload_file, slo, profile = "meshinfer", out;
  std::vector<std::string> hardware{"m3-ultra-512gb"}, links{"tb5-rdma"}, strategies, cards;
  int max_nodes = 4;
  int jobs = 0;
  std::optional<engine::SimulationLevel> level;
  StudyShare share;
};

// "ttft=2s,itl=80ms" into seconds.
void parse_slo(const std::string& text, sim::PlanQuery& q) {
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    double seconds = 0;
    try {
      std::size_t used = 0;
      seconds = std::stod(value, &used);
      const std::string unit = value.substr(used);
      if (unit == "ms")
        seconds /= 1e3;
      else if (unit != "s")  // a bare number is refused: itl=80 is 80 ms to one reader and 80 s to another
        throw std::invalid_argument(unit);
    } catch (const std::exception&) {
      throw engine::InputError("--slo", item, "expected ttft=<seconds>s or itl=<milliseconds>ms (a unit, s or ms)");
    }
    if (key == "ttft")
      q.slo_ttft_s = seconds;
    else if (key == "itl")
      q.slo_itl_s = seconds;
    else
      throw engine::InputError("--slo", item, engine::unknown_name("SLO", key, std::vector<std::string>{"ttft", "itl"}));
  }
}

// A workload file holds a scenario's "workload" object. The scenario loader
// checks it inside a wrapper cluster big enough for any catalog model (16
// switched nodes), so its errors name the same paths as in a scenario.
engine::Workload load_workload(const std::string& file, const std::string& model, const std::string& quant,
                               const engine::Catalog& catalog) {
  if (file.empty()) {
    engine::Workload w;
    w.prompt_tokens.value = 512;
    w.output_tokens.value = 128;
    return w;
  }
  if (file.starts_with("trace:")) {  // a request log as it is, every request at its logged time
    engine::Workload w;
    w.trace = engine::read_request_trace(file.substr(6));
    w.requests = static_cast<int>(w.trace.size());
    w.arrival = "trace";
    return w;
  }
  std::ifstream in(file);
  if (!in) throw engine::InputError(file, "", "cannot open the file");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json wrapper = {
      {"name", "plan-workload"},
      {"cluster", {{"nodes", nlohmann::json::array()}, {"fabric", {{"type", "full-mesh"}, {"link", "10gbe"}}}}},
      {"model", {{"name", model}, {"quant", quant}}},
      {"parallelism", "pipeline"}};
  for (int i = 1; i <= 16; ++i)
    wrapper["cluster"]["nodes"].push_back({{"name", fmt::format("n{}", i)}, {"hardware", "m3-ultra-512gb"}});
  const std::string head = wrapper.dump();
  return engine::parse_scenario(head.substr(0, head.size() - 1) + ", \"workload\": " + text.str() + "}", file, catalog)
      .workload;
}

int plan(PlanOptions& o) {
  engine::Catalog catalog = engine::Catalog::builtin();
  for (const auto& card : o.cards) catalog.add_card_file(card);
  if (!catalog.has_model(o.model) && engine::is_model_path(o.model)) {  // planned from its config.json
    engine::ModelCard card = engine::config_card(o.model);
    o.model = card.name;
    catalog.add(std::move(card));
  } else if (!catalog.has_model(o.model)) {
    throw engine::InputError("--model", o.model,
                             "no model directory or config.json at that path, and " +
                                 engine::unknown_name("model", o.model, catalog.model_names()));
  }
  const auto& model = catalog.model(o.model);
  if (o.quant.empty()) o.quant = model.quantizations.front().name;
  try {
    model.quant(o.quant);
  } catch (const std::out_of_range& e) {
    throw engine::InputError("--quant", o.quant, e.what());
  }
  for (const auto& h : o.hardware)
    if (!catalog.has_hardware(h))
      throw engine::InputError("--hardware", h, engine::unknown_name("hardware card", h, catalog.hardware_names()));
  for (const auto& l : o.links)
    if (!catalog.has_link(l))
      throw engine::InputError("--links", l, engine::unknown_name("link card", l, catalog.link_names()));
  std::vector<engine::Strategy> strategies;
  for (const auto& name : o.strategies) {
    const auto s = engine::parse_name<engine::Strategy>(name);
    if (!s)
      throw engine::InputError("--strategies", name,
                               engine::unknown_name("strategy", name, engine::Names<engine::Strategy>::value));
    strategies.push_back(*s);
  }
  if (strategies.empty()) {
    strategies = {engine::Strategy::kTensor, engine::Strategy::kTensorUneven, engine::Strategy::kPipeline};
    if (model.moe) strategies.push_back(engine::Strategy::kExpert);
  }
  sim::PlanQuery q;
  q.model = o.model;
  q.quant = o.quant;
  q.hardware = o.hardware;
  q.max_nodes = o.max_nodes;
  q.links = o.links;
  q.strategies = strategies;
  q.workload = load_workload(o.workload_file, o.model, o.quant, catalog);
  parse_slo(o.slo, q);
  q.profile = o.profile;
  if (o.level) q.level = *o.level;
  q.workers = o.share.workers(o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))));

  const auto result = [&] {
    const StudyProgress progress("plan");
    return sim::run_plan_sweep(q, catalog);
  }();
  const std::string dir = o.out.empty() ? fmt::format("reports/out/plan-{}-{}", o.model, o.quant) : o.out;
  if (o.share.sharded()) {
    o.share.write(o.share.file_in(dir));
    return 0;
  }
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/plan.json") << result.dump(2) << "\n";
  std::ofstream(dir + "/plan.md") << sim::render_plan_markdown(result);
  std::ofstream(dir + "/plan.html") << sim::render_plan_html(result);
  fmt::print("{}reports: {}/plan.json {}/plan.md {}/plan.html\n", sim::render_plan_table(result), dir, dir, dir);
  // Like a failed expectation: a pipeline asking for an SLO learns nothing meets it.
  return result["cheapest_meeting_slo"].is_null() ? kExitBreach : 0;
}

}  // namespace

void add_plan_command(CLI::App& app, int& status) {
  auto o = std::make_shared<PlanOptions>();
  auto* cmd = app.add_subcommand("plan", "which cluster for this model: sweep node counts, hardware, links and plans");
  cmd->add_option("--model", o->model, "model card, or a model directory or config.json to plan from its config")
      ->required();
  cmd->add_option("--quant", o->quant, "quantization (default: the card's first)");
  cmd->add_option("--hardware", o->hardware, "hardware cards to mix")->delimiter(',');
  cmd->add_option("--max-nodes", o->max_nodes, "largest cluster to consider")->check(CLI::Range(1, 16));
  cmd->add_option("--links", o->links, "link cards")->delimiter(',');
  cmd->add_option("--strategies", o->strategies, "parallelism to consider (default: all that apply)")->delimiter(',');
  cmd->add_option("--workload", o->workload_file,
                  "JSON file with a scenario's workload object, or trace:FILE, a request log (CSV or JSON Lines)");
  cmd->add_option("--slo", o->slo, "service level, e.g. ttft=2s,itl=80ms");
  cmd->add_option("--profile", o->profile, "software-stack profile");
  cmd->add_option("--card", o->cards, "what-if hardware or link card file (repeatable)");
  cmd->add_option("--jobs", o->jobs, "worker processes (default: all cores); results do not depend on it");
  cmd->add_option("--out", o->out, "directory for plan.json and plan.md");
  add_level_option(cmd, o->level);
  o->share.add_option(cmd);
  cmd->callback([o, &status] { status = plan(*o); });
}

}  // namespace cli
