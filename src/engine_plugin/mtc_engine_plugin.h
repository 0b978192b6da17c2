// mtc_engine_plugin.h: the C interface of an engine built as a loadable library, so that one
// process can hold two builds of the engine (this one and a baseline) and measure them sample
// by sample. Plain C types over opaque handles: nothing of the engine's C++ classes crosses it,
// so the two builds may differ in every internal. The structure to copy and its result do cross
// it, as c10::IValue pointers: both sides must use the same libtorch, which the loader checks
// (torch_version, ivalue_size).
//
// A plugin exports one symbol, MTC_ENGINE_PLUGIN_ENTRY, a function returning its table. Every other
// symbol is local (engine_plugin.map), so each loaded build keeps its own pools, workers and
// caches. Functions that can fail return 0 on success and otherwise write a NUL-terminated
// message (truncated to error_size) into `error`.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Bumped on any change to the structs below; the loader refuses another version.
#define MTC_ENGINE_PLUGIN_ABI 1

typedef struct mtc_plugin_copy mtc_plugin_copy;  // one copy in flight: a CopyHandle

typedef struct mtc_plugin_options {
  int32_t use_pinned_staging;
  int32_t pack_cpu_tensors;
  int32_t use_background_thread;
  int32_t pinned_host_outputs;  // ignored by an engine that predates the option
  int64_t min_packed_alignment_bytes;
  int64_t max_packed_chunk_bytes;
} mtc_plugin_options;

// mtc::CopyStats; fields an older engine lacks stay 0.
typedef struct mtc_plugin_stats {
  int64_t tensors, bytes, reused, packed, chunks, per_tensor, pinned_bytes, walk_threads;
  double queued_us, traverse_us, submit_us, outputs_us;
} mtc_plugin_stats;

// mtc::PinnedPoolStats.
typedef struct mtc_plugin_pool_stats {
  int64_t reserved_bytes, peak_reserved_bytes, in_use_bytes, peak_in_use_bytes, limit_bytes, slabs,
      slab_allocations, slab_frees;
} mtc_plugin_pool_stats;

typedef struct mtc_engine_plugin_table {
  uint32_t abi_version;  // MTC_ENGINE_PLUGIN_ABI of the plugin
  uint32_t table_size;   // sizeof(mtc_engine_plugin_table) as the plugin was compiled
  const char* revision;  // the git revision of the engine's source tree, "-dirty" if modified
  const char* torch_version;
  uint32_t ivalue_size;  // sizeof(c10::IValue) in the plugin

  // data: a const c10::IValue*. device_type: c10::DeviceType; device_index -1 for none.
  int (*start_copy)(const void* data, int32_t device_type, int32_t device_index,
                    const mtc_plugin_options* options, mtc_plugin_copy** copy, char* error,
                    size_t error_size);
  // Blocks until done; *result (a c10::IValue*) receives the structure on the target.
  int (*get)(mtc_plugin_copy* copy, void* result, char* error, size_t error_size);
  // *ready: 1 once every copy has completed.
  int (*ready)(mtc_plugin_copy* copy, int32_t* ready, char* error, size_t error_size);
  // Valid after get() succeeded.
  void (*stats)(const mtc_plugin_copy* copy, mtc_plugin_stats* stats);
  // Destroys the copy as ~CopyHandle does (waits for its device work). Never fails.
  void (*release)(mtc_plugin_copy* copy);
  // This build's process-wide pinned pool.
  int (*pool_stats)(mtc_plugin_pool_stats* stats, char* error, size_t error_size);
  int (*set_pool_limit)(int64_t bytes, char* error, size_t error_size);
} mtc_engine_plugin_table;

typedef const mtc_engine_plugin_table* (*mtc_engine_plugin_entry_fn)(void);

#define MTC_ENGINE_PLUGIN_ENTRY "mtc_engine_plugin_table_v1"

#ifdef __cplusplus
}  // extern "C"
#endif
