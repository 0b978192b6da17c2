// A build of the engine loaded from a library (src/engine_plugin): the `engine@LABEL` strategies
// copy through it, so one process measures two builds sample by sample and the host's state of
// the moment is the same for both. The library is never unloaded: copies, threads and pinned
// memory of the build live until the process ends.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>
#include <mtc/copier.h>

#include <map>
#include <memory>
#include <string>

struct mtc_engine_plugin_table;
struct mtc_plugin_copy;

namespace mtc::bench {

class LoadedEngine {
 public:
  // Loads the library at `path` for the strategies `*@label`. Throws UsageError (exit 2) naming
  // the label, the path and what is wrong: not loadable, not an engine library, another plugin
  // interface, another libtorch.
  LoadedEngine(std::string label, std::string path);
  LoadedEngine(const LoadedEngine&) = delete;  // owns the loaded library's table
  LoadedEngine& operator=(const LoadedEngine&) = delete;

  const std::string& label() const { return label_; }
  const std::string& path() const { return path_; }
  // The git revision of the engine's tree the library was built from.
  std::string revision() const;

  // One copy in flight; destroying it waits for its device work, as ~CopyHandle does.
  class Copy {
   public:
    Copy() = default;
    bool valid() const { return copy_ != nullptr; }

   private:
    friend class LoadedEngine;
    struct Release {
      const mtc_engine_plugin_table* table;
      void operator()(mtc_plugin_copy* copy) const;
    };
    std::unique_ptr<mtc_plugin_copy, Release> copy_{nullptr, Release{nullptr}};
  };

  // The engine's start_copy, get() and stats(); a failure throws std::runtime_error with the
  // engine's message (the case fails, as with the linked engine).
  Copy start_copy(const c10::IValue& data, const c10::Device& device,
                  const mtc::CopyOptions& options) const;
  c10::IValue get(Copy& copy) const;
  mtc::CopyStats stats(const Copy& copy) const;
  // This build's own process-wide pinned pool.
  mtc::PinnedPoolStats pinned_pool_stats() const;
  void set_pinned_pool_limit(int64_t bytes) const;

 private:
  std::string label_;
  std::string path_;
  const mtc_engine_plugin_table* table_ = nullptr;
};

// label -> engine, from --engine-lib LABEL=PATH.
using LoadedEngines = std::map<std::string, std::shared_ptr<const LoadedEngine>>;
LoadedEngines load_engines(const std::map<std::string, std::string>& libraries);

}  // namespace mtc::bench
