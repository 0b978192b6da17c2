// One way of copying a nested structure to a device. The runner times start() (how long the
// caller is held) and start() + finish() + a device synchronize (until the data is usable).
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>
#include <mtc/copier.h>

#include <optional>
#include <string>
#include <string_view>

#include "types.h"

namespace mtc::bench {

// Where one case copies from and to.
struct Route {
  Direction direction;
  c10::Device source;
  c10::Device target;
};

class Strategy {
 public:
  virtual ~Strategy() = default;

  virtual std::string_view name() const = 0;
  // Why this strategy cannot run `route` on this build or machine (beyond the catalog's
  // static rules), or empty.
  virtual std::string unsupported_reason(const Route& /*route*/) const { return {}; }
  // Untimed, once per case before warm-up: what a user would set up once (streams, events).
  virtual void prepare(const Route& route) = 0;
  // Begins the copy; returns when the caller is free again.
  virtual void start(const c10::IValue& input) = 0;
  // Blocks until the result is usable on the target and returns it.
  virtual c10::IValue finish() = 0;
  // What the last copy did, for the engine strategies.
  virtual std::optional<mtc::CopyStats> last_stats() const { return std::nullopt; }
};

}  // namespace mtc::bench
