#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app{"meshinfer: LLM inference on a simulated or real mesh of machines"};
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
