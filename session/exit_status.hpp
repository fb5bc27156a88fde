// The exit status of every meshinfer program: errors of input (exit 2) and any
// other error (exit 3) are thrown and reported by main(), never left unreported.
#pragma once

namespace session {

inline constexpr int kExitBreach = 1;    // an expectation or invariant failed
inline constexpr int kExitBadInput = 2;  // the scenario or a card was refused
inline constexpr int kExitFailed = 3;    // the run could not go on (a rank could not join, a system call failed)

}  // namespace session
