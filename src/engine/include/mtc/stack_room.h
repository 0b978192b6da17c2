// How much of the calling thread's stack is left. The engine's walk and the Python module's walk
// recurse once per level of nesting, and both accept 1,000 levels: about half a megabyte of stack
// for the Python module's walk, more than a thread made with a small stack has
// (threading.stack_size(256 * 1024) in Python, a 384 KiB `ulimit -s`). There a deep structure
// overflowed the stack and ended the process; each walk now refuses a level once less than
// kWalkStackReserve is left, with an error that names the place, as it refuses level 1,001.
#pragma once

#include <cstddef>

namespace mtc {

// What a walk keeps free below it: for its own next levels and for the code it calls (a dict
// key's __hash__, a named tuple's constructor, torch's own checks).
inline constexpr size_t kWalkStackReserve = size_t{64} << 10;

// Bytes between the caller's frame and the end of its thread's stack, or SIZE_MAX where the
// stack's bounds cannot be read. The first call on a thread reads them (pthread_getattr_np);
// later calls cost a thread-local read and a subtraction.
size_t stack_bytes_left() noexcept;

// Whether a walk may go one level deeper on this thread.
inline bool stack_room_for_a_level() noexcept { return stack_bytes_left() >= kWalkStackReserve; }

}  // namespace mtc
