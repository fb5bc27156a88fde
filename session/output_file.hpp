// Files a subcommand writes where the user said (--out, --junit).
#pragma once

#include <string>

namespace session {

// Writes `text` to `path`, creating its parent directories.
// Throws InputError naming the path when it cannot.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace session
