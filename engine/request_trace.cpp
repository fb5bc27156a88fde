#include "engine/request_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/error.hpp"
#include "engine/json_input.hpp"

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

// Long double: a date's seconds since 1970 (1.7e9) in a double would keep only
// a quarter of a microsecond.
long double seconds(const RawRow& r, const Layout& l, const std::string& file) {
  if (l.datetime) {
    int y, mo, d, h, mi, used = 0;
    long double s;
    if (std::sscanf(r.time.c_str(), "%4d-%2d-%2d%*1[ T]%2d:%2d:%Lf%n", &y, &mo, &d, &h, &mi, &s, &used) != 6 ||
        mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s < 0 || s >= 61 ||
        r.time.find_first_not_of("Z ", used) != std::string::npos)
      refuse(file, r.line, fmt::format("{} '{}' is not a time like 2023-11-16 18:15:46.68", l.time, r.time));
    return 86400.0L * days_from_civil(y, mo, d) + 3600.0L * h + 60.0L * mi + s;
  }
  long double t = 0;
  const auto [end, ec] = std::from_chars(r.time.data(), r.time.data() + r.time.size(), t);
  if (ec != std::errc() || end != r.time.data() + r.time.size() || !std::isfinite(t))
    refuse(file, r.line, fmt::format("{} '{}' is not a number of seconds", l.time, r.time));
  return t;
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
    long double t;
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
  const long double t0 = timed.front().t;
  const double from = window ? window->first : 0, to = window ? window->second : INFINITY;
  std::vector<Request> out;
  for (const Timed& x : timed) {
    const double rel = static_cast<double>(x.t - t0);
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
