// Reading a scenario file: load_scenario() refuses bad input before anything
// runs (InputError), naming the file, the JSON Pointer of the culprit and why.
#pragma once

#include <string>

#include "engine/cards/catalog.hpp"
#include "engine/input/scenario.hpp"

namespace engine {

// Parses and validates `path` against `catalog`. Throws InputError.
Scenario load_scenario(const std::string& path, const Catalog& catalog);
// Same, from text already read (the fuzzer's entry point); `file` names it in errors.
Scenario parse_scenario(const std::string& text, const std::string& file, const Catalog& catalog);

// The catalog to run `s` against: `catalog`, plus the card of the model
// directory the scenario names, if any.
Catalog catalog_for(const Scenario& s, const Catalog& catalog);

}  // namespace engine
