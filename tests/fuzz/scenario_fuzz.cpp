// libFuzzer target: whatever the bytes, parse_scenario either returns or
// refuses them with an InputError. Any other exception, a crash or a sanitizer
// report is a finding. bench/fuzz-scenario.sh builds and runs it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/base/error.hpp"
#include "engine/input/scenario.hpp"
#include "engine/input/scenario_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    engine::parse_scenario(text, "fuzz.json", engine::Catalog::builtin());
  } catch (const engine::InputError&) {
  }
  return 0;
}
