// The per-tensor baselines: what most code does today (Lightning's move_data_to_device,
// accelerate's send_to_device, hand-written loops).
#pragma once

#include "runner/strategies/strategy.h"

namespace mtc::bench {

// What the three per-tensor strategies share: the route and the last output.
class PerTensorStrategy : public Strategy {
 public:
  // `non_blocking`: the copies were queued asynchronously, so finish() synchronizes the
  // current streams they went to.
  explicit PerTensorStrategy(bool non_blocking) : non_blocking_(non_blocking) {}
  void prepare(const Route& route) override { route_ = route; }
  c10::IValue finish() override;

 protected:
  bool non_blocking_;
  std::optional<Route> route_;
  c10::IValue output_;
};

// tensor.to(device) for every leaf: each copy is synchronous with the host.
class ToStrategy final : public PerTensorStrategy {
 public:
  ToStrategy() : PerTensorStrategy(false) {}
  std::string_view name() const override { return "to"; }
  void start(const c10::IValue& input) override;
};

// tensor.to(device, non_blocking=true) for every leaf, then one synchronize of the current
// stream: the usual "fast" idiom. From pageable memory the driver still stages each copy.
class ToNonBlockingStrategy final : public PerTensorStrategy {
 public:
  ToNonBlockingStrategy() : PerTensorStrategy(true) {}
  std::string_view name() const override { return "to_nb"; }
  void start(const c10::IValue& input) override;
};

// tensor.pin_memory().to(device, non_blocking=true) for every CPU leaf: pinning makes the DMA
// asynchronous but pays for a pinned allocation (and its driver lock) per tensor.
class PinToNonBlockingStrategy final : public PerTensorStrategy {
 public:
  PinToNonBlockingStrategy() : PerTensorStrategy(true) {}
  std::string_view name() const override { return "pin_to_nb"; }
  void start(const c10::IValue& input) override;
};

// Synchronizes the current stream of each CUDA device of `route`: where the per-tensor
// strategies queued their copies.
void synchronize_current_streams(const Route& route);

}  // namespace mtc::bench
