#pragma once

#include <string>
#include <string_view>

namespace engine {

// Text made safe for XML and HTML content and attribute values. Control characters that XML 1.0 forbids
// (all below U+0020 but tab and newline) become U+FFFD, so a stray byte in a name cannot break a file.
std::string escape_markup(std::string_view text);

}  // namespace engine
