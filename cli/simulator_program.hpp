// meshinfer runs `launch` and `node` itself and hands every other command to
// meshinfer-sim beside it, on the same command line: a program that links
// the simulator (SimGrid, and the ns-3 it loads) spends 18 ms before main,
// which made a launch's start-up 1.7 times llama.cpp's.
#pragma once

namespace cli {

// REQUIRES: main's argv, kept to be handed on.
void keep_command_line(char** argv);

// Replaces this process with meshinfer-sim on the kept command line; throws
// (naming the program) if it cannot.
[[noreturn]] void become_simulator();

}  // namespace cli
