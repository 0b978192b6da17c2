// What the GPUs are doing besides this run: clocks, throttle reasons, other processes. Read
// through NVML, loaded with dlopen at run time so the tool builds and runs where NVML is absent
// (CI machines without a driver): everything then reads as unknown (null). No ATen.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mtc::bench {

class GpuMonitor {
 public:
  GpuMonitor();  // loads and initializes NVML when it can; never throws
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;  // owns the NVML session
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  bool available() const;
  // Why NVML is unavailable ("libnvidia-ml.so.1 not found"), or empty.
  const std::string& why_unavailable() const { return why_; }

  // One GPU's state now, by PCI bus id ("0000:1b:00.0"): {sm_clock_mhz, max_sm_clock_mhz,
  // memory_clock_mhz, temperature_c, throttle_reasons: [names], throttled: bool,
  // other_processes: [{pid, name, used_bytes}]}; fields NVML cannot give are null.
  nlohmann::json snapshot(const std::string& pci_bus_id) const;

 private:
  struct Library;
  std::unique_ptr<Library> library_;
  std::string why_;
};

// The names of the set bits of NVML's clock throttle (event) reason mask, and whether any of
// them slows the GPU below what the workload asks for (idle and application-clock settings do
// not count: they are not someone else's load or heat).
std::vector<std::string> throttle_reason_names(unsigned long long mask);
bool is_throttled(unsigned long long mask);

}  // namespace mtc::bench
