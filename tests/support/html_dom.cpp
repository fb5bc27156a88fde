#include "support/html_dom.hpp"

#include <regex>

namespace testsupport {

int count(const std::string& html, const std::string& needle) {
  int n = 0;
  for (auto at = html.find(needle); at != std::string::npos; at = html.find(needle, at + 1)) ++n;
  return n;
}

std::string figure(const std::string& html, const std::string& id) {
  const auto start = html.find("<figure class=\"chart\" id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  return html.substr(start, html.find("</figure>", start) - start);
}

std::vector<std::string> attribute_values(const std::string& html, const std::string& tag_start,
                                          const std::string& attr) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  const std::regex re(std::regex_replace(tag_start, special, R"(\$&)") + "[^>]*\\s" + attr + "=\"([^\"]*)\"");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

double attribute_sum(const std::string& html, const std::string& tag_start, const std::string& attr) {
  double sum = 0;
  for (const auto& v : attribute_values(html, tag_start, attr)) sum += std::stod(v);
  return sum;
}

}  // namespace testsupport
