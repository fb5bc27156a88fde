// softrdma exports only the libibverbs entry points it replaces, each under
// libibverbs's symbol version (softrdma.map), so a preload serves binaries
// linked against libibverbs.so.1.
#pragma once

#define SOFTRDMA_EXPORT __attribute__((visibility("default")))
