// A software stack's profile (scenarios/catalog/profiles/NAME.json): the few
// calibrated parameters that turn a hardware card into op times for one
// stack (MLX, llama.cpp, ...). It belongs to a stack and its hardware, never
// to one model or node count.
#pragma once

#include <string>
#include <vector>

namespace engine {

struct StackProfile {
  std::string name;
  std::string based_on;                      // the profile this one starts from ("" when none)
  double memory_bandwidth_efficiency = 0.5;  // fraction of card bandwidth
  double compute_efficiency = 0.5;           // fraction of card FLOP/s
  double expert_compute_efficiency = 0.5;    // the same for routed-expert matmuls (default: compute_efficiency)
  double per_kernel_overhead_s = 0;          // dispatch and synchronisation per GPU kernel
  double per_expert_overhead_s = 0;          // per routed expert an expert kernel reads
  double per_message_overhead_s = 0;         // on top of the link card's
  bool stage_round_trip = false;             // llama.cpp RPC style pipeline

  // Loads catalog_dir/profiles/NAME.json. Throws InputError.
  static StackProfile load(const std::string& catalog_dir, const std::string& name);

  // The numeric parameters by their file key, in the file's unit (for fitting).
  static const std::vector<std::string>& numeric_keys();
  double get(const std::string& key) const;        // throws std::out_of_range
  void set(const std::string& key, double value);  // throws std::out_of_range
};

}  // namespace engine
