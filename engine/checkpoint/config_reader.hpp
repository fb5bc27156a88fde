// config.json as Hugging Face writes it, read through engine/base/json_input: keys
// this reader does not know are normal there (and ignored unless refused by
// name), and null means absent, as transformers' `None` defaults treat it.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>

#include "engine/base/json_input.hpp"

namespace engine {

class ConfigReader {
 public:
  explicit ConfigReader(JsonObject o) : o_(std::move(o)) {}

  const JsonValue& value() const { return o_.value(); }
  std::optional<JsonValue> find(std::string_view key) {
    auto v = o_.find(key);
    return v && !v->raw().is_null() ? v : std::nullopt;
  }
  // The key is written out as null (where transformers tells None from absent).
  bool is_null(std::string_view key) {
    auto v = o_.find(key);
    return v && v->raw().is_null();
  }
  JsonValue need(std::string_view key) {
    auto v = find(key);
    return v ? *v : o_.need(key);
  }
  // Refuses `key`, present or defaulted: a default can fail a check too.
  [[noreturn]] void fail(std::string_view key, const std::string& reason) const {
    throw InputError(value().file(), json_pointer(value().path(), key), reason);
  }

  // A size: an integer from 1 to 2^30, so products of sizes stay in range.
  int positive(std::string_view key) {
    const JsonValue v = need(key);
    const int n = v.as<int>(kOne);
    if (n > (1 << 30)) v.fail(fmt::format("must be at most 2^30, got {}", n));
    return n;
  }
  int integer(std::string_view key, int fallback) { return find(key) ? positive(key) : fallback; }
  double number(std::string_view key, double fallback, Min min = kPositive) {
    auto v = find(key);
    return v ? v->as<double>(min) : fallback;
  }
  bool flag(std::string_view key, bool fallback) {
    auto v = find(key);
    return v ? v->as<bool>() : fallback;
  }

 private:
  JsonObject o_;
};

}  // namespace engine
