#include "engine/report/markup.hpp"

namespace engine {

std::string escape_markup(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";  // &apos; is not HTML 4; this reads the same in both
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n')
          out += "\xEF\xBF\xBD";
        else
          out += ch;
    }
  }
  return out;
}

}  // namespace engine
