// The cards of scenarios/catalog (models/, hardware/, links/), checked as they
// load, and the what-if cards a user adds. What a card holds is cards.hpp's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/cards/cards.hpp"

namespace engine {

class Catalog {
 public:
  // Loads every card under `dir` (models/, hardware/, links/). Throws InputError.
  static Catalog load(const std::string& dir);
  // The repository's own catalog (scenarios/catalog), found relative to the build.
  static const Catalog& builtin();

  const ModelCard& model(const std::string& name) const;  // throws std::out_of_range
  const HardwareCard& hardware(const std::string& name) const;
  const LinkCard& link(const std::string& name) const;
  bool has_model(const std::string& n) const { return models_.count(n) > 0; }
  bool has_hardware(const std::string& n) const { return hardware_.count(n) > 0; }
  bool has_link(const std::string& n) const { return links_.count(n) > 0; }
  std::vector<std::string> model_names() const;
  std::vector<std::string> hardware_names() const;
  std::vector<std::string> link_names() const;

  // What-if cards a user adds (for example from a scenario or a plan).
  void add(HardwareCard card) { hardware_[card.name] = std::move(card); }
  void add(LinkCard card) { links_[card.name] = std::move(card); }
  void add(ModelCard card) { models_[card.name] = std::move(card); }
  // A hardware or link card file (told apart by its fields), checked like the
  // catalog's own; its name is the file's stem. Throws InputError.
  void add_card_file(const std::string& path);

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::map<std::string, ModelCard> models_;
  std::map<std::string, HardwareCard> hardware_;
  std::map<std::string, LinkCard> links_;
};

}  // namespace engine
