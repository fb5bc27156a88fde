#include "engine/base/json_input.hpp"

#include <fstream>
#include <numeric>
#include <sstream>

namespace engine {

namespace {

using nlohmann::json;

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error
// at line 3, column 11: " prefix: parse_json computes the position itself.
std::string json_reason(const json::exception& e) {
  std::string_view what = e.what();
  if (auto id = what.find("] "); id != std::string_view::npos) what.remove_prefix(id + 2);
  auto colon = what.find(": ");
  if (what.starts_with("parse error") && colon != std::string_view::npos) what.remove_prefix(colon + 2);
  return std::string(what);
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

json parse_json(const std::string& text, const std::string& file) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // e.byte counts the bytes read, the culprit last.
    auto head = std::string_view(text).substr(0, e.byte == 0 ? 0 : e.byte - 1);
    size_t line = 1 + std::count(head.begin(), head.end(), '\n');
    size_t newline = head.rfind('\n');
    size_t column = head.size() - (newline == std::string_view::npos ? 0 : newline + 1) + 1;
    throw InputError(file, "", fmt::format("malformed JSON at line {}, column {}: {}", line, column, json_reason(e)));
  } catch (const json::exception& e) {  // a number too large for a double
    throw InputError(file, "", "malformed JSON: " + json_reason(e));
  }
}

json load_json(const std::string& path) { return parse_json(read_text_file(path), path); }

std::string json_pointer(const std::string& base, std::string_view key) {
  std::string out = base + '/';
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

std::string json_pointer(const std::string& base, std::size_t index) { return base + '/' + std::to_string(index); }

std::string describe_json(const json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  std::string text = j.dump();
  return text.size() <= 40 ? text : text.substr(0, 37) + "...";
}

std::string unknown_name(std::string_view what, std::string_view got, const std::vector<std::string>& known) {
  std::string_view best;
  size_t best_distance = 3;
  for (std::string_view name : known) {
    if (size_t d = edit_distance(got, name); d < best_distance) {
      best = name;
      best_distance = d;
    }
  }
  std::string hint = best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
  return fmt::format("unknown {} '{}'{}; known: {}", what, got, hint, fmt::join(known, ", "));
}

std::vector<JsonValue> JsonValue::elements() const {
  if (!j_->is_array()) fail("must be an array, got " + describe_json(*j_));
  std::vector<JsonValue> out;
  for (size_t i = 0; i < j_->size(); ++i) out.emplace_back((*j_)[i], json_pointer(path_, i), *file_);
  return out;
}

JsonObject::JsonObject(JsonValue v) : v_(std::move(v)) {
  if (!v_.raw().is_object()) v_.fail("must be an object, got " + describe_json(v_.raw()));
}

std::optional<JsonValue> JsonObject::find(std::string_view key) {
  asked_.emplace_back(key);
  auto it = v_.raw().find(key);
  if (it == v_.raw().end()) return std::nullopt;
  return JsonValue(*it, json_pointer(v_.path(), key), v_.file());
}

JsonValue JsonObject::need(std::string_view key) {
  if (auto v = find(key)) return *v;
  throw InputError(v_.file(), json_pointer(v_.path(), key), fmt::format("missing required key '{}'", key));
}

JsonObject JsonObject::section(std::string_view key) {
  static const json empty = json::object();
  auto v = find(key);
  return JsonObject(v ? *v : JsonValue(empty, json_pointer(v_.path(), key), v_.file()));
}

void JsonObject::only(std::initializer_list<std::string_view> keys) {
  asked_.insert(asked_.end(), keys.begin(), keys.end());
  finish();
}

void JsonObject::finish() const {
  for (const auto& [key, _] : v_.raw().items()) {
    if (std::find(asked_.begin(), asked_.end(), key) == asked_.end()) {
      throw InputError(v_.file(), json_pointer(v_.path(), key), unknown_name("key", key, asked_));
    }
  }
}

}  // namespace engine
