// Runs every collective on a runtime with data each rank can regenerate, and
// checks the results. Used on SimGrid and on TCP so both can be compared.
#pragma once

#include <cstdint>
#include <string>

#include "engine/base/runtime.hpp"

namespace testsupport {

// Deterministic test datum of `rank` at index `i`, in [-1, 1).
float test_value(int rank, std::uint64_t i);

// Runs ring, one-shot and two-shot all-reduce, all-gather, broadcast and
// all-to-all on `elements` floats. Throws on a wrong result; returns a digest
// ("ring=<hash> one-shot=<hash> ...") of the all-reduce results' bits.
std::string run_collective_suite(engine::Runtime& rt, std::uint64_t elements);

// FNV-1a of raw bytes.
std::uint64_t fnv1a(const void* data, std::size_t n);

}  // namespace testsupport
