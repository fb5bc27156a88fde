// Reads report.html (as written, or as a browser serialized its DOM) through
// the ids, classes and data-* attributes that engine/report/report_html.hpp promises (and sim/studies/plan_html.hpp for
// plan.html).
#pragma once

#include <string>
#include <vector>

namespace testsupport {

// Occurrences of `needle` in `html`.
int count(const std::string& html, const std::string& needle);

// The markup of <figure class="chart" id="`id`"> up to its </figure>; empty when absent.
std::string figure(const std::string& html, const std::string& id);

// `attr`'s value on each element whose opening tag starts with `tag_start`
// (for example `<g class="lane" data-kind="node"`), in document order.
std::vector<std::string> attribute_values(const std::string& html, const std::string& tag_start,
                                          const std::string& attr);

// The same values as numbers, added up.
double attribute_sum(const std::string& html, const std::string& tag_start, const std::string& attr);

}  // namespace testsupport
