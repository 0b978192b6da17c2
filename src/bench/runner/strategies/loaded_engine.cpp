#include "runner/strategies/loaded_engine.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <torch/headeronly/version.h>

#include <array>
#include <stdexcept>
#include <utility>
#include <vector>

#include "errors.h"
#include "mtc_engine_plugin.h"
#include "report/output_paths.h"
#include "shown.h"

namespace mtc::bench {
namespace {

constexpr size_t kErrorSize = 1024;
using ErrorText = std::array<char, kErrorSize>;

void check(int rc, const ErrorText& error) {
  if (rc != 0) throw std::runtime_error(error.data());
}

}  // namespace

LoadedEngine::LoadedEngine(std::string label, std::string path)
    : label_(std::move(label)), path_(std::move(path)) {
  const std::string what = fmt::format("--engine-lib {}={}", shown(label_), shown_path(path_));
  // RTLD_LOCAL: its symbols resolve nothing else; RTLD_NODELETE: never unloaded, since its
  // threads and pinned memory outlive any handle the runner holds.
  void* library = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (library == nullptr) {
    const char* error = dlerror();
    std::string why = error != nullptr ? error : "unknown error";
    // The loader's message starts with the path as given: cut as `what` cuts it, so that the
    // reason after it stays in view.
    if (why.starts_with(path_ + ":")) why = shown_path(path_) + why.substr(path_.size());
    throw UsageError(fmt::format("{}: cannot load it: {}", what, why));
  }
  void* entry = dlsym(library, MTC_ENGINE_PLUGIN_ENTRY);
  if (entry == nullptr) {
    throw UsageError(
        fmt::format("{}: not an mtc engine library (it has no {}; build one with "
                    "src/engine_plugin/standalone)",
                    what, MTC_ENGINE_PLUGIN_ENTRY));
  }
  table_ = reinterpret_cast<mtc_engine_plugin_entry_fn>(entry)();
  if (table_ == nullptr || table_->abi_version != MTC_ENGINE_PLUGIN_ABI ||
      table_->table_size < sizeof(mtc_engine_plugin_table)) {
    throw UsageError(
        fmt::format("{}: built for engine plugin interface {}, this mtc-bench reads {}: build the "
                    "library with this tree's src/engine_plugin/standalone",
                    what, table_ == nullptr ? 0U : table_->abi_version, MTC_ENGINE_PLUGIN_ABI));
  }
  if (std::string(table_->torch_version) != TORCH_VERSION ||
      table_->ivalue_size != sizeof(c10::IValue)) {
    throw UsageError(
        fmt::format("{}: built against libtorch {}, this mtc-bench against {}: both must use the "
                    "same libtorch",
                    what, table_->torch_version, TORCH_VERSION));
  }
}

std::string LoadedEngine::revision() const { return table_->revision; }

void LoadedEngine::Copy::Release::operator()(mtc_plugin_copy* copy) const { table->release(copy); }

LoadedEngine::Copy LoadedEngine::start_copy(const c10::IValue& data, const c10::Device& device,
                                            const mtc::CopyOptions& options) const {
  const mtc_plugin_options o{options.use_pinned_staging,         options.pack_cpu_tensors,
                             options.use_background_thread,      options.pinned_host_outputs,
                             options.min_packed_alignment_bytes, options.max_packed_chunk_bytes};
  ErrorText error{};
  mtc_plugin_copy* raw = nullptr;
  check(table_->start_copy(&data, static_cast<int32_t>(device.type()), device.index(), &o, &raw,
                           error.data(), error.size()),
        error);
  Copy copy;
  copy.copy_ = std::unique_ptr<mtc_plugin_copy, Copy::Release>(raw, Copy::Release{table_});
  return copy;
}

c10::IValue LoadedEngine::get(Copy& copy) const {
  ErrorText error{};
  c10::IValue result;
  check(table_->get(copy.copy_.get(), &result, error.data(), error.size()), error);
  return result;
}

mtc::CopyStats LoadedEngine::stats(const Copy& copy) const {
  mtc_plugin_stats s{};
  table_->stats(copy.copy_.get(), &s);
  mtc::CopyStats out;
  out.tensors = s.tensors;
  out.bytes = s.bytes;
  out.reused = s.reused;
  out.packed = s.packed;
  out.chunks = s.chunks;
  out.per_tensor = s.per_tensor;
  out.pinned_bytes = s.pinned_bytes;
  out.walk_threads = s.walk_threads;
  out.queued_us = s.queued_us;
  out.traverse_us = s.traverse_us;
  out.submit_us = s.submit_us;
  out.outputs_us = s.outputs_us;
  return out;
}

mtc::PinnedPoolStats LoadedEngine::pinned_pool_stats() const {
  ErrorText error{};
  mtc_plugin_pool_stats s{};
  check(table_->pool_stats(&s, error.data(), error.size()), error);
  return mtc::PinnedPoolStats{s.reserved_bytes,    s.peak_reserved_bytes, s.in_use_bytes,
                              s.peak_in_use_bytes, s.limit_bytes,         s.slabs,
                              s.slab_allocations,  s.slab_frees};
}

void LoadedEngine::set_pinned_pool_limit(int64_t bytes) const {
  ErrorText error{};
  check(table_->set_pool_limit(bytes, error.data(), error.size()), error);
}

LoadedEngines load_engines(const std::map<std::string, std::string>& libraries) {
  // The loader keeps one instance of a file: two labels on one file would be one build, one
  // state, measured against itself as if it were two.
  std::vector<std::pair<FileIdentity, std::string>> files;  // with its label
  for (const auto& [label, path] : libraries) {
    FileIdentity file = identity_of(path);
    if (!file.exists) continue;  // the loader says what is wrong with it
    for (const auto& [seen, seen_label] : files) {
      if (seen == file) {
        throw UsageError(
            fmt::format("--engine-lib {}={}: the same file as --engine-lib {}: one library is one "
                        "build with one state; load a copy of it under another name",
                        shown(label), shown_path(path), shown(seen_label)));
      }
    }
    files.emplace_back(std::move(file), label);
  }
  LoadedEngines engines;
  for (const auto& [label, path] : libraries)
    engines[label] = std::make_shared<const LoadedEngine>(label, path);
  return engines;
}

}  // namespace mtc::bench
