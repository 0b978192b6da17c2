// Prefetches of what a container's walk reads next: the headers of its children (a tensor's
// TensorImpl, a nested container's object), then each child tensor's StorageImpl, and the bytes
// that fill_staging copies a few copies ahead.
//
// A training step's batch is new to the caches: after the caller's gap its TensorImpls,
// StorageImpls and data lie in memory, and a walk that reads them one leaf at a time waits for
// each miss in turn (a CPU->GPU step's walk took 2-2.5x its back-to-back time on the GPU hosts).
// The reference batch's leaves sit in dicts of 3-5 tensors, so prefetching a container's
// children before walking them lets their misses overlap; a second pass then prefetches each
// tensor's StorageImpl, whose address is in the header the first pass brought in.
//
// The walk keeps kHeadersAhead children's headers and kStoragesAhead children's storages asked
// for ahead of the child it walks (Lookahead): all of a small container's at its start, and no
// more than that many for a large one, whose prefetches would otherwise evict each other.
//
// What it buys is small (docs/engine-copies-after-a-gap.md, "Prefetches in the walk"; 1 x H200,
// 2026-11-29): in the in-process A/B, GPU->CPU steps 1.1-2.2 % shorter with it, copies back to back
// 1-2 % longer (a second pass over children the caches already hold), CPU->GPU steps the same; the
// micro-benchmarks' medians favoured it more, within their repetitions' spread. Kept for the
// steps. set_enabled() for benchmarks that compare the two in one process (BM_EngineCopy bit
// 8388608).
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/TensorImpl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace mtc::detail::prefetch {

inline std::atomic<bool> g_enabled{true};
inline void set_enabled(bool on) { g_enabled.store(on); }
inline bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

inline constexpr size_t kLine = 64;

// The cache lines of [p, p + bytes), the first `max_lines` of them; kForWrite 1 for lines about
// to be written (an object's reference count, its destructor's fields).
template <int kForWrite>
inline void lines_of(const void* p, size_t bytes, size_t max_lines) {
  const auto* first = static_cast<const char*>(p);
  const auto start = reinterpret_cast<uintptr_t>(first) & ~uintptr_t{kLine - 1};
  const uintptr_t end = reinterpret_cast<uintptr_t>(first) + bytes;
  size_t n = 0;
  for (uintptr_t at = start; at < end && n < max_lines; at += kLine, ++n)
    __builtin_prefetch(reinterpret_cast<const void*>(at), kForWrite);
}
inline void lines(const void* p, size_t bytes, size_t max_lines) {
  lines_of<0>(p, bytes, max_lines);
}
inline void lines_for_write(const void* p, size_t bytes, size_t max_lines) {
  lines_of<1>(p, bytes, max_lines);
}

// A child's header: a tensor's TensorImpl (whole), a container's object (its first two lines:
// its count and its elements' or table's address). Reads only the IValue itself.
inline void header(const c10::IValue& v) {
  if (v.isTensor()) {
    lines(v.unsafeToTensorImpl(), sizeof(c10::TensorImpl), 8);
  } else if (v.isList() || v.isTuple() || v.isGenericDict()) {
    if (const void* object = v.internalToPointer()) lines(object, 2 * kLine, 2);
  }
}

// A tensor child's StorageImpl, read from its TensorImpl (best after header() brought it in).
inline void storage(const c10::IValue& v) {
  if (!v.isTensor()) return;
  if (const c10::StorageImpl* s = v.unsafeToTensorImpl()->unsafe_storage().unsafeGetStorageImpl())
    __builtin_prefetch(s);
}

inline constexpr int kHeadersAhead = 16;
inline constexpr int kStoragesAhead = 8;

// Prefetches for a walk over the children [begin, end) of a container, `value` giving an
// iterator's IValue: the first children's at construction, then one child further at each
// advance(), which the walk calls once per child, before walking it.
template <class It, class Value>
class Lookahead {
 public:
  Lookahead(It begin, It end, Value value)
      : headers_(begin), storages_(begin), end_(end), value_(value) {
    if (!enabled()) {
      headers_ = storages_ = end_;
      return;
    }
    for (int i = 0; i < kHeadersAhead && headers_ != end_; ++i, ++headers_)
      header(value_(*headers_));
    for (int i = 0; i < kStoragesAhead && storages_ != end_; ++i, ++storages_)
      storage(value_(*storages_));
  }
  void advance() {
    if (headers_ != end_) header(value_(*headers_++));
    if (storages_ != end_) storage(value_(*storages_++));
  }

 private:
  It headers_;
  It storages_;
  It end_;
  Value value_;
};

}  // namespace mtc::detail::prefetch
