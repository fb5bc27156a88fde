// meshinfer compare A/report.json B/report.json: two runs side by side; exit 0
// when they agree, 1 when a row differs (printed as DIFFERS), 2 on bad input.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "cli/commands.hpp"
#include "engine/base/json_input.hpp"
#include "engine/report/compare.hpp"

namespace cli {

namespace {

struct CompareCommandOptions {
  std::string a, b;
  engine::CompareOptions compare;
};

int compare(const CompareCommandOptions& o) {
  const auto a = engine::parse_json(engine::read_text_file(o.a), o.a);
  const auto b = engine::parse_json(engine::read_text_file(o.b), o.b);
  const auto rows = engine::compare_reports(a, o.a, b, o.b, o.compare);
  fmt::print("{}", engine::render_comparison(rows, o.a, o.b));
  const bool agree = std::all_of(rows.begin(), rows.end(), [](const engine::CompareRow& r) { return r.agree; });
  return agree ? 0 : kExitBreach;
}

}  // namespace

void add_compare_command(CLI::App& app, int& status) {
  auto o = std::make_shared<CompareCommandOptions>();
  auto* cmd = app.add_subcommand("compare", "two runs' reports side by side: outcomes, recovery decisions, timings");
  cmd->add_option("A", o->a, "first report.json (e.g. simulated)")->required();
  cmd->add_option("B", o->b, "second report.json (e.g. real processes)")->required();
  cmd->add_option("--relative", o->compare.relative, "tolerance of speeds, TTFT and ITL, as a fraction")
      ->check(CLI::Range(0.0, 1.0));
  cmd->callback([o, &status] { status = compare(*o); });
}

}  // namespace cli
