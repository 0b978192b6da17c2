// The host's state around a run, recorded in the report and checked for signs of a busy host:
// which CPUs the process may use, which CPUs and NUMA node are local to each GPU, the load, the
// CPU frequency governor, and (through GpuMonitor) the GPUs' clocks, throttling and other
// processes. Figures from a busy host are flagged, not hidden. No ATen.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runner/env/gpu_monitor.h"

namespace mtc::bench {

// "0-7,16" -> {0..7, 16}: the Linux CPU list syntax of sysfs and taskset; empty on bad text.
std::optional<std::vector<int>> cpu_list_from_text(std::string_view text);
// {0,1,2,3,8} -> "0-3,8".
std::string cpu_list_to_text(const std::vector<int>& cpus);

// The CPUs this process may run on.
std::vector<int> process_affinity();
// The machine's physical memory in bytes (0 when the system does not say).
uint64_t physical_memory_bytes();
// Binds every thread of the process (and so the threads they start later) to `cpus`; returns
// an error message, or empty on success.
std::string pin_process_to(const std::vector<int>& cpus);

// A GPU's local CPUs and NUMA node from sysfs (/sys/bus/pci/devices/<bus id>/).
struct GpuLocality {
  std::optional<std::vector<int>> local_cpus;
  std::optional<int> numa_node;  // absent when the kernel says -1 (one node, or unknown)
};
GpuLocality read_gpu_locality(const std::string& sysfs_device_dir);

// The 1, 5 and 15 minute load averages, from /proc/loadavg; absent when unreadable.
std::optional<std::vector<double>> read_load_average(const std::string& path = "/proc/loadavg");

// The machine's CPU time so far, in clock ticks, from the first line of /proc/stat: all of it,
// the idle part, and the part stolen by the hypervisor to run other guests (on a virtual machine
// shared with others, the noisy neighbours' share). Absent when unreadable.
struct CpuTicks {
  int64_t total = 0;
  int64_t idle = 0;
  int64_t steal = 0;
};
std::optional<CpuTicks> read_cpu_ticks(const std::string& path = "/proc/stat");

// The host's state now: {"load_average": [..], "cpu_ticks": {"total", "idle", "steal"} or null,
// "gpus": [GpuMonitor snapshots with "index"]}.
nlohmann::json host_snapshot(const GpuMonitor& monitor, const nlohmann::json& gpus);

// The parts that do not change during a run: affinity, governor, each GPU's locality.
nlohmann::json host_layout(const nlohmann::json& gpus);

// Why figures from this host may be disturbed, one line each: the load above half of the
// CPUs, another process on a GPU in `used_gpus`, or a GPU's clocks throttled, at the start or
// the end, or over 2 % of the CPU time in between stolen by the hypervisor. `start` and `end`
// are host_snapshot()s.
std::vector<std::string> busy_host_warnings(const nlohmann::json& start, const nlohmann::json& end,
                                            int logical_cpus, const std::vector<int>& used_gpus);

}  // namespace mtc::bench
