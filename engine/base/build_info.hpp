#pragma once

// What this binary was built from. Defined in the build tree's generated build_info.cpp, so that a new commit
// recompiles that one file rather than every file a command-line define reaches.
namespace engine {

extern const char* const kVersion;    // project(VERSION) in CMakeLists.txt
extern const char* const kGitCommit;  // `git describe --always --dirty` at configure time, or "unknown"
extern const char* const kSourceDir;  // the source tree, where the shipped scenarios and catalog are

}  // namespace engine
