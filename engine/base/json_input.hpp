// The one way meshinfer reads a JSON input (scenarios, cards, model configs,
// measurements, cluster files): every refusal is an InputError naming the
// file, the JSON Pointer of the culprit and the reason, in the same words
// whichever reader refuses, with "did you mean ..." when a name is a typo away.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/base/enums.hpp"
#include "engine/base/error.hpp"

namespace engine {

// The text of `path`. Throws InputError "cannot open the file".
std::string read_text_file(const std::string& path);

// `text` parsed; a syntax error is refused with its line and column.
nlohmann::json parse_json(const std::string& text, const std::string& file);
// The file at `path`, read and parsed as above.
nlohmann::json load_json(const std::string& path);

// `base` + "/" + `key`, escaped as RFC 6901 says ('~' as "~0", '/' as "~1").
std::string json_pointer(const std::string& base, std::string_view key);
std::string json_pointer(const std::string& base, std::size_t index);

// A JSON value for a message: its text when short, else "an object" or "an array".
std::string describe_json(const nlohmann::json& j);

// "unknown model 'x' (did you mean 'y'?); known: a, b", the hint only when a
// known name is a typo away.
std::string unknown_name(std::string_view what, std::string_view got, const std::vector<std::string>& known);
template <class Names>
std::string unknown_name(std::string_view what, std::string_view got, const Names& known) {
  return unknown_name(what, got, std::vector<std::string>(std::begin(known), std::end(known)));
}

// Lower bound for a number: value > bound (strict) or value >= bound.
struct Min {
  double bound;
  bool strict;
};
inline constexpr Min kAny{-std::numeric_limits<double>::infinity(), false};
inline constexpr Min kPositive{0, true};
inline constexpr Min kNonNegative{0, false};
inline constexpr Min kOne{1, false};

// A JSON value and where it is: what every check needs to refuse it.
// REQUIRES: `j` and `file` outlive it.
class JsonValue {
 public:
  JsonValue(const nlohmann::json& j, std::string path, const std::string& file)
      : j_(&j), path_(std::move(path)), file_(&file) {}

  const nlohmann::json& raw() const { return *j_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  [[noreturn]] void fail(const std::string& reason) const { throw InputError(*file_, path_, reason); }

  // The one typed accessor: a string, a bool, a finite double or an in-range
  // integer, at or above `min`.
  template <class T>
  T as(Min min = kAny) const {
    if constexpr (std::is_same_v<T, std::string>) {
      if (!j_->is_string()) fail("must be a string, got " + describe_json(*j_));
      return j_->get<std::string>();
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!j_->is_boolean()) fail("must be true or false, got " + describe_json(*j_));
      return j_->get<bool>();
    } else {
      T out = number<T>();
      if (out < min.bound || (min.strict && out == min.bound)) {
        fail(fmt::format("must be {} {}, got {}", min.strict ? ">" : ">=", min.bound, out));
      }
      return out;
    }
  }

  std::vector<JsonValue> elements() const;

 private:
  template <class T>
  T number() const {
    if constexpr (std::is_floating_point_v<T>) {
      if (!j_->is_number()) fail("must be a number, got " + describe_json(*j_));
      T out = j_->get<T>();
      if (!std::isfinite(out)) fail("must be a finite number");
      return out;
    } else {
      // JSON Schema counts 512.0 as an integer, so the loader does too.
      bool integral =
          j_->is_number_integer() || (j_->is_number_float() && std::trunc(j_->get<double>()) == j_->get<double>());
      if (!integral) fail("must be an integer, got " + describe_json(*j_));
      bool fits = j_->is_number_unsigned() ? std::in_range<T>(j_->get<std::uint64_t>())
                  : j_->is_number_integer()
                      ? std::in_range<T>(j_->get<std::int64_t>())
                      : std::abs(j_->get<double>()) <= 0x1p53 && std::in_range<T>(std::int64_t(j_->get<double>()));
      if (!fits) {
        fail(fmt::format("must be an integer from {} to {}, got {}", std::numeric_limits<T>::lowest(),
                         std::numeric_limits<T>::max(), describe_json(*j_)));
      }
      return j_->get<T>();
    }
  }

  const nlohmann::json* j_;
  std::string path_;
  const std::string* file_;
};

// A JSON object being read. It remembers every key asked for, present or not,
// so finish() can refuse the others as typos and list what is allowed.
class JsonObject {
 public:
  explicit JsonObject(JsonValue v);

  const JsonValue& value() const { return v_; }

  std::optional<JsonValue> find(std::string_view key);
  JsonValue need(std::string_view key);  // "missing required key 'x'" when absent

  template <class T>
  T req(std::string_view key, Min min = kAny) {
    return need(key).as<T>(min);
  }

  template <class T>
  T opt(std::string_view key, T fallback, Min min = kAny) {
    auto v = find(key);
    return v ? v->as<T>(min) : fallback;
  }

  // An optional sub-object; absent reads as {} so its own defaults apply.
  JsonObject section(std::string_view key);

  // Refuses every key not asked for so far.
  void finish() const;
  // Refuses, now, every key but `keys`: a typo is named before the key it
  // misspells would be missed.
  void only(std::initializer_list<std::string_view> keys);

 private:
  JsonValue v_;
  std::vector<std::string> asked_;
};

// A string that must be one of `known`.
template <class Names>
std::string choice(const JsonValue& v, std::string_view what, const Names& known) {
  auto got = v.as<std::string>();
  if (std::find(std::begin(known), std::end(known), got) == std::end(known)) v.fail(unknown_name(what, got, known));
  return got;
}

// The E a string names (see engine/base/enums.hpp), refused with the known names otherwise.
template <class E>
E choice(const JsonValue& v, std::string_view what) {
  const auto got = v.as<std::string>();
  if (auto e = parse_name<E>(got)) return *e;
  v.fail(unknown_name(what, got, Names<E>::value));
}

// Same for an optional key, `fallback` when absent.
template <class Names>
std::string choice(JsonObject& o, std::string_view key, std::string_view what, const Names& known,
                   std::string fallback) {
  if (auto v = o.find(key)) return choice(*v, what, known);
  // A catalog of one's own may lack the default.
  if (std::find(std::begin(known), std::end(known), fallback) == std::end(known)) {
    throw InputError(o.value().file(), json_pointer(o.value().path(), key),
                     unknown_name(fmt::format("default {}", what), fallback, known));
  }
  return fallback;
}

}  // namespace engine
