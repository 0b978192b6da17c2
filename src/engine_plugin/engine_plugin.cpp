// The engine behind the C table of mtc_engine_plugin.h. Compiled from this tree against the
// public header mtc/copier.h of whichever engine it wraps (this tree's, or a baseline revision's
// added by standalone/CMakeLists.txt): an earlier revision with a compatible header can serve as
// the baseline. Members an older header lacks are detected, not required.
#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <mtc/copier.h>
#include <torch/headeronly/version.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <utility>

#include "mtc_engine_plugin.h"
#include "mtc_engine_revision.h"

struct mtc_plugin_copy {
  mtc::CopyHandle handle;
};

namespace {

// Writes what failed into the caller's buffer; returns the failure code.
int report(const std::exception& e, char* error, size_t error_size) {
  if (error != nullptr && error_size > 0) {
    // c10::Error's what() carries a C++ backtrace; the message alone is what the user needs.
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    const char* text = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
    const size_t n = std::min(std::strlen(text), error_size - 1);
    std::memcpy(error, text, n);
    error[n] = '\0';
  }
  return 1;
}

template <typename Body>
int guarded(char* error, size_t error_size, Body&& body) {
  try {
    body();
    return 0;
  } catch (const std::exception& e) {
    return report(e, error, error_size);
  } catch (...) {
    const std::runtime_error unknown("unknown exception in the engine");
    return report(unknown, error, error_size);
  }
}

template <typename Options>
void set_pinned_host_outputs(Options& options, bool value) {
  if constexpr (requires { options.pinned_host_outputs; }) options.pinned_host_outputs = value;
}

template <typename Stats>
void copy_stats(const Stats& s, mtc_plugin_stats& out) {
  out = mtc_plugin_stats{};
  out.tensors = s.tensors;
  out.bytes = s.bytes;
  out.reused = s.reused;
  out.packed = s.packed;
  out.chunks = s.chunks;
  out.per_tensor = s.per_tensor;
  out.pinned_bytes = s.pinned_bytes;
  if constexpr (requires { s.walk_threads; }) out.walk_threads = s.walk_threads;
  if constexpr (requires { s.queued_us; }) out.queued_us = s.queued_us;
  if constexpr (requires { s.traverse_us; }) out.traverse_us = s.traverse_us;
  if constexpr (requires { s.submit_us; }) out.submit_us = s.submit_us;
  if constexpr (requires { s.outputs_us; }) out.outputs_us = s.outputs_us;
}

int start_copy(const void* data, int32_t device_type, int32_t device_index,
               const mtc_plugin_options* options, mtc_plugin_copy** copy, char* error,
               size_t error_size) {
  return guarded(error, error_size, [&] {
    mtc::CopyOptions o;
    o.use_pinned_staging = options->use_pinned_staging != 0;
    o.pack_cpu_tensors = options->pack_cpu_tensors != 0;
    o.use_background_thread = options->use_background_thread != 0;
    o.min_packed_alignment_bytes = options->min_packed_alignment_bytes;
    o.max_packed_chunk_bytes = options->max_packed_chunk_bytes;
    set_pinned_host_outputs(o, options->pinned_host_outputs != 0);
    const c10::Device device(static_cast<c10::DeviceType>(device_type),
                             static_cast<c10::DeviceIndex>(device_index));
    auto* created =
        new mtc_plugin_copy{mtc::start_copy(*static_cast<const c10::IValue*>(data), device, o)};
    *copy = created;
  });
}

int get(mtc_plugin_copy* copy, void* result, char* error, size_t error_size) {
  return guarded(error, error_size,
                 [&] { *static_cast<c10::IValue*>(result) = copy->handle.get(); });
}

int ready(mtc_plugin_copy* copy, int32_t* is_ready, char* error, size_t error_size) {
  return guarded(error, error_size, [&] { *is_ready = copy->handle.ready() ? 1 : 0; });
}

void stats(const mtc_plugin_copy* copy, mtc_plugin_stats* out) {
  copy_stats(copy->handle.stats(), *out);
}

void release(mtc_plugin_copy* copy) { delete copy; }

int pool_stats(mtc_plugin_pool_stats* out, char* error, size_t error_size) {
  return guarded(error, error_size, [&] {
    const mtc::PinnedPoolStats s = mtc::pinned_pool_stats();
    *out = mtc_plugin_pool_stats{s.reserved_bytes,    s.peak_reserved_bytes, s.in_use_bytes,
                                 s.peak_in_use_bytes, s.limit_bytes,         s.slabs,
                                 s.slab_allocations,  s.slab_frees};
  });
}

int set_pool_limit(int64_t bytes, char* error, size_t error_size) {
  return guarded(error, error_size, [&] { mtc::set_pinned_pool_limit(bytes); });
}

const mtc_engine_plugin_table kTable{MTC_ENGINE_PLUGIN_ABI,
                                     sizeof(mtc_engine_plugin_table),
                                     MTC_GIT_REVISION,
                                     TORCH_VERSION,
                                     sizeof(c10::IValue),
                                     &start_copy,
                                     &get,
                                     &ready,
                                     &stats,
                                     &release,
                                     &pool_stats,
                                     &set_pool_limit};

}  // namespace

extern "C" __attribute__((visibility("default"))) const mtc_engine_plugin_table*
mtc_engine_plugin_table_v1() {
  return &kTable;
}
