// macOS's RDMA stack failure as a switch: once the file named by
// SOFTRDMA_FAIL_FILE exists, every queue pair fails and the device is hidden
// until the process restarts (when RDMA fails, only a restart brings it back:
// docs/reference-facts.md#thunderbolt-instability). The path is read each time, so a test may set it late.
#pragma once

#include "hw/softrdma/objects.hpp"

namespace softrdma {

// True from the first time the switch file is seen on, for the process's life.
bool stack_failed();

// Moves every QP of `ctx` to ERR, flushing its receives, and posts
// IBV_EVENT_DEVICE_FATAL on ctx's async fd, once. REQUIRES: ctx.mu is held.
void fail_context(Context& ctx);

}  // namespace softrdma
