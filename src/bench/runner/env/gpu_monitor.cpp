#include "runner/env/gpu_monitor.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <utility>

namespace mtc::bench {
namespace {

// The few NVML declarations used here, from its stable C ABI (no nvml.h on build machines).
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
constexpr int kClockSm = 1;
constexpr int kClockMemory = 2;
constexpr int kTemperatureGpu = 0;
// nvmlProcessInfo_v2_t, which nvmlDeviceGetComputeRunningProcesses_v3 fills.
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

// Throttle (clock event) reason bits, as NVML defines them.
constexpr std::array<std::pair<unsigned long long, const char*>, 9> kReasons{{
    {0x1ULL, "gpu_idle"},
    {0x2ULL, "applications_clocks_setting"},
    {0x4ULL, "sw_power_cap"},
    {0x8ULL, "hw_slowdown"},
    {0x10ULL, "sync_boost"},
    {0x20ULL, "sw_thermal_slowdown"},
    {0x40ULL, "hw_thermal_slowdown"},
    {0x80ULL, "hw_power_brake_slowdown"},
    {0x100ULL, "display_clock_setting"},
}};
constexpr unsigned long long kNotThrottling = 0x1ULL | 0x2ULL;

std::string process_name(unsigned int pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  if (!comm || !std::getline(comm, name)) return "unknown (another PID namespace?)";
  return name;
}

}  // namespace

std::vector<std::string> throttle_reason_names(unsigned long long mask) {
  std::vector<std::string> names;
  for (const auto& [bit, name] : kReasons) {
    if ((mask & bit) != 0) names.emplace_back(name);
  }
  return names;
}

bool is_throttled(unsigned long long mask) { return (mask & ~kNotThrottling) != 0; }

struct GpuMonitor::Library {
  void* handle = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*by_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*clock)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*max_clock)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*throttle)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*processes)(NvmlDevice, unsigned int*, NvmlProcessInfo*) = nullptr;

  template <typename F>
  bool bind(F& function, const char* name) {
    function = reinterpret_cast<F>(dlsym(handle, name));
    return function != nullptr;
  }
};

GpuMonitor::GpuMonitor() : library_(std::make_unique<Library>()) {
  Library& l = *library_;
  l.handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (l.handle == nullptr) {
    why_ = "libnvidia-ml.so.1 not found";
    library_.reset();
    return;
  }
  const bool bound = l.bind(l.init, "nvmlInit_v2") && l.bind(l.shutdown, "nvmlShutdown") &&
                     l.bind(l.by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") &&
                     l.bind(l.clock, "nvmlDeviceGetClockInfo") &&
                     l.bind(l.max_clock, "nvmlDeviceGetMaxClockInfo") &&
                     l.bind(l.temperature, "nvmlDeviceGetTemperature") &&
                     l.bind(l.throttle, "nvmlDeviceGetCurrentClocksThrottleReasons") &&
                     l.bind(l.processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!bound || l.init() != kNvmlSuccess) {
    why_ = bound ? "nvmlInit failed" : "libnvidia-ml.so.1 lacks a needed function";
    dlclose(l.handle);
    library_.reset();
  }
}

GpuMonitor::~GpuMonitor() {
  if (!library_) return;
  library_->shutdown();
  dlclose(library_->handle);
}

bool GpuMonitor::available() const { return library_ != nullptr; }

nlohmann::json GpuMonitor::snapshot(const std::string& pci_bus_id) const {
  using json = nlohmann::json;
  json s{{"sm_clock_mhz", nullptr},   {"max_sm_clock_mhz", nullptr}, {"memory_clock_mhz", nullptr},
         {"temperature_c", nullptr},  {"throttle_reasons", nullptr}, {"throttled", nullptr},
         {"other_processes", nullptr}};
  if (!library_) return s;
  const Library& l = *library_;
  NvmlDevice device = nullptr;
  if (l.by_bus_id(pci_bus_id.c_str(), &device) != kNvmlSuccess) return s;
  unsigned int value = 0;
  if (l.clock(device, kClockSm, &value) == kNvmlSuccess) s["sm_clock_mhz"] = value;
  if (l.max_clock(device, kClockSm, &value) == kNvmlSuccess) s["max_sm_clock_mhz"] = value;
  if (l.clock(device, kClockMemory, &value) == kNvmlSuccess) s["memory_clock_mhz"] = value;
  if (l.temperature(device, kTemperatureGpu, &value) == kNvmlSuccess) s["temperature_c"] = value;
  unsigned long long mask = 0;
  if (l.throttle(device, &mask) == kNvmlSuccess) {
    s["throttle_reasons"] = throttle_reason_names(mask);
    s["throttled"] = is_throttled(mask);
  }
  std::array<NvmlProcessInfo, 64> infos{};
  auto count = static_cast<unsigned int>(infos.size());
  const NvmlReturn r = l.processes(device, &count, infos.data());
  if (r == kNvmlSuccess || r == kNvmlInsufficientSize) {
    json others = json::array();
    const auto self = static_cast<unsigned int>(getpid());
    for (unsigned int i = 0; i < std::min<unsigned int>(count, infos.size()); ++i) {
      if (infos[i].pid == self) continue;
      others.push_back({{"pid", infos[i].pid},
                        {"name", process_name(infos[i].pid)},
                        {"used_bytes", infos[i].used_gpu_memory}});
    }
    s["other_processes"] = std::move(others);
  }
  return s;
}

}  // namespace mtc::bench
