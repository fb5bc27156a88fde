#include "cli/run_cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "engine/base/build_info.hpp"
#include "engine/base/error.hpp"
#include "engine/plan/planner.hpp"
#include "hw/os.hpp"
#include "session/exit_status.hpp"

namespace cli {

using session::kExitBadInput, session::kExitFailed;

namespace {

std::string features() {
#ifdef MESHINFER_HAVE_VERBS
  const std::string transports = std::string("transports: tcp, verbs (") + MESHINFER_VERBS_LIB + ")";
#else
  const char* transports = "transports: tcp (verbs transport not built: no verbs library and header found)";
#endif
  return fmt::format("{}, OS calls: {}", transports, hw::platform_name());
}

}  // namespace

std::string version_line() {
  return fmt::format("meshinfer {} ({}), {}", engine::kVersion, engine::kGitCommit, features());
}

int run_cli(CLI::App& app, std::vector<std::string> args, const int& status) {
  try {
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // A bad flag is bad input, as a bad scenario is: `error:` and exit 2, not CLI11's own codes (105, 106, ...).
    fmt::print(stderr, "error: {}\nRun with --help for more information.\n", e.what());
    return kExitBadInput;
  } catch (const engine::InputError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitBadInput;
  } catch (const engine::PlanError& e) {
    fmt::print(stderr, "error: cannot place the model: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitFailed;
  }
  return status;
}

}  // namespace cli
