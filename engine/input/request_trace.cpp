#include "engine/input/request_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>

#include "engine/base/error.hpp"
#include "engine/base/json_input.hpp"
#include "engine/base/portable_math.hpp"

namespace engine {

namespace {

struct Layout {
  const char* name;
  const char* time;
  const char* prompt;
  const char* output;
  bool datetime;  // time as "YYYY-MM-DD hh:mm:ss[.frac]", else seconds
};

constexpr Layout kLayouts[] = {
    {"meshinfer", "arrival_s", "prompt_tokens", "output_tokens", false},
    {"Azure", "TIMESTAMP", "ContextTokens", "GeneratedTokens", true},
    {"BurstGPT", "Timestamp", "Request tokens", "Response tokens", false},
};

// One row's three fields as text, and where it was.
struct RawRow {
  int line;
  std::string time, prompt, output;
};

[[noreturn]] void refuse(const std::string& file, int line, const std::string& reason) {
  throw InputError(file, fmt::format("line {}", line), reason);
}

// Fields of one CSV line: commas split, "quoted, fields" with "" for a quote.
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::string known_layouts() {
  std::string out;
  for (const Layout& l : kLayouts)
    out += fmt::format("{}{} ({}, {}, {})", out.empty() ? "" : "; ", l.name, l.time, l.prompt, l.output);
  return out;
}

// The layout whose three columns are all in `columns`.
const Layout& pick_layout(const std::vector<std::string>& columns, const std::string& file, int line) {
  auto has = [&](const char* c) { return std::find(columns.begin(), columns.end(), c) != columns.end(); };
  for (const Layout& l : kLayouts)
    if (has(l.time) && has(l.prompt) && has(l.output)) return l;
  refuse(file, line, fmt::format("no known column layout in {}; known: {}", fmt::join(columns, ", "), known_layouts()));
}

std::vector<RawRow> read_csv(std::istream& in, const std::string& file, const Layout*& layout) {
  std::string text;
  int line = 0;
  std::vector<std::string> header;
  std::vector<RawRow> rows;
  std::size_t at[3] = {0, 0, 0};
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.empty()) continue;
    auto fields = split_csv(text);
    if (header.empty()) {
      header = fields;
      layout = &pick_layout(header, file, line);
      const char* names[3] = {layout->time, layout->prompt, layout->output};
      for (int k = 0; k < 3; ++k) at[k] = std::find(header.begin(), header.end(), names[k]) - header.begin();
      continue;
    }
    if (fields.size() != header.size())
      refuse(file, line, fmt::format("has {} fields, the header has {}", fields.size(), header.size()));
    rows.push_back({line, fields[at[0]], fields[at[1]], fields[at[2]]});
  }
  if (header.empty()) throw InputError(file, "", "the file is empty");
  return rows;
}

std::vector<RawRow> read_json_lines(std::istream& in, const std::string& file, const Layout*& layout) {
  std::string text;
  int line = 0;
  std::vector<RawRow> rows;
  auto field = [&](const nlohmann::json& row, const char* key) {
    if (!row.contains(key)) refuse(file, line, fmt::format("has no \"{}\"", key));
    const auto& v = row[key];
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  while (std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto row = nlohmann::json::parse(text, nullptr, false);
    if (!row.is_object()) refuse(file, line, "is not a JSON object");
    if (!layout) {
      std::vector<std::string> keys;
      for (const auto& [k, v] : row.items()) keys.push_back(k);
      layout = &pick_layout(keys, file, line);
    }
    rows.push_back({line, field(row, layout->time), field(row, layout->prompt), field(row, layout->output)});
  }
  if (!layout) throw InputError(file, "", "the file is empty");
  return rows;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
long days_from_civil(long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long>(doe) - 719468;
}

// A time as whole seconds and a fraction in [0, 1): a date's 1.7e9 s keep the log's
// microseconds, and the arithmetic is IEEE double only, so it gives the same bits on
// every platform (long double is 80 bits on x86-64, 128 on Linux arm64, 64 on a Mac).
struct Instant {
  long long whole = 0;
  double frac = 0;
  bool operator<(const Instant& o) const { return whole != o.whole ? whole < o.whole : frac < o.frac; }
  double since(const Instant& o) const { return static_cast<double>(whole - o.whole) + (frac - o.frac); }
};

// A number of seconds as portable::parse_decimal reads it; "[-]digits[.digits]" split exactly.
std::optional<Instant> parse_seconds(std::string_view text) {
  const std::optional<double> number = portable::parse_decimal(text);
  if (!number) return std::nullopt;
  const double v = *number;
  const bool negative = text.starts_with('-');
  const std::string_view digits = text.substr(negative);
  const auto dot = digits.find('.');
  const std::string_view integer = digits.substr(0, dot);
  Instant t;
  if (digits.find_first_of("eE") != std::string_view::npos ||
      std::from_chars(integer.data(), integer.data() + integer.size(), t.whole).ec != std::errc()) {
    t.whole = static_cast<long long>(std::floor(v));  // an exponent form: as exact as its double
    t.frac = v - static_cast<double>(t.whole);
    return t;
  }
  if (dot != std::string_view::npos) {
    t.frac = portable::parse_decimal("0" + std::string(digits.substr(dot))).value_or(0);
  }
  if (negative) {
    t.whole = -t.whole;
    if (t.frac > 0) {
      --t.whole;
      t.frac = 1 - t.frac;
    }
  }
  return t;
}

Instant seconds(const RawRow& r, const Layout& l, const std::string& file) {
  if (l.datetime) {
    int y, mo, d, h, mi, used = 0;
    const bool head = std::sscanf(r.time.c_str(), "%4d-%2d-%2d%*1[ T]%2d:%2d:%n", &y, &mo, &d, &h, &mi, &used) == 5;
    const std::string_view rest = std::string_view(r.time).substr(used);
    const auto s = head ? parse_seconds(rest.substr(0, rest.find_first_of("Z "))) : std::nullopt;
    if (!s || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s->whole < 0 || s->whole >= 61 ||
        rest.find_first_not_of("Z ", rest.find_first_of("Z ")) != std::string_view::npos)
      refuse(file, r.line, fmt::format("{} '{}' is not a time like 2023-11-16 18:15:46.68", l.time, r.time));
    return {86400LL * days_from_civil(y, mo, d) + 3600LL * h + 60LL * mi + s->whole, s->frac};
  }
  const auto t = parse_seconds(r.time);
  if (!t) refuse(file, r.line, fmt::format("{} '{}' is not a number of seconds", l.time, r.time));
  return *t;
}

int tokens(const std::string& text, const char* column, int line, const std::string& file) {
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size())
    refuse(file, line, fmt::format("{} '{}' is not a whole number of tokens", column, text));
  if (n < 1) refuse(file, line, fmt::format("{} is {}; a request needs at least 1 token", column, n));
  return n;
}

}  // namespace

std::vector<Request> read_request_trace(const std::string& file, double time_scale,
                                        std::optional<std::pair<double, double>> window) {
  std::istringstream in(read_text_file(file));
  const Layout* layout = nullptr;
  const bool json_lines =
      std::filesystem::path(file).extension() == ".jsonl" || std::filesystem::path(file).extension() == ".ndjson";
  const std::vector<RawRow> rows = json_lines ? read_json_lines(in, file, layout) : read_csv(in, file, layout);
  struct Timed {
    Instant t;
    Request r;
  };
  std::vector<Timed> timed;
  for (const RawRow& row : rows) {
    Request r;
    r.prompt_tokens = tokens(row.prompt, layout->prompt, row.line, file);
    r.output_tokens = tokens(row.output, layout->output, row.line, file);
    timed.push_back({seconds(row, *layout, file), r});
  }
  if (timed.empty()) throw InputError(file, "", "the log has a header but no request");
  // Logs are mostly in time order; a merged one may not be.
  std::stable_sort(timed.begin(), timed.end(), [](const Timed& a, const Timed& b) { return a.t < b.t; });
  const Instant t0 = timed.front().t;
  const double from = window ? window->first : 0, to = window ? window->second : INFINITY;
  std::vector<Request> out;
  for (const Timed& x : timed) {
    const double rel = x.t.since(t0);
    if (rel < from || rel >= to) continue;
    Request r = x.r;
    r.id = static_cast<int>(out.size());
    r.arrival_s = (rel - from) * time_scale;
    out.push_back(r);
  }
  if (out.empty())
    throw InputError(file, "", fmt::format("no request arrives in the window [{}, {}) s of the log", from, to));
  return out;
}

}  // namespace engine
