#include "runner/env/host_state.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "runner/env/environment.h"

namespace mtc::bench {
namespace {

using json = nlohmann::json;

std::optional<int> parse_int(std::string_view text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

bool gpu_used(const json& gpu, const std::vector<int>& used_gpus) {
  return std::find(used_gpus.begin(), used_gpus.end(), gpu.value("index", -1)) != used_gpus.end();
}

}  // namespace

std::optional<std::vector<int>> cpu_list_from_text(std::string_view text) {
  std::vector<int> cpus;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    const size_t dash = item.find('-');
    const auto first = parse_int(item.substr(0, dash));
    const auto last = dash == std::string_view::npos ? first : parse_int(item.substr(dash + 1));
    if (!first || !last || *last < *first) return std::nullopt;
    for (int c = *first; c <= *last; ++c) {
      if (std::find(cpus.begin(), cpus.end(), c) == cpus.end()) cpus.push_back(c);
    }
    start = comma + 1;
  }
  if (cpus.empty()) return std::nullopt;
  return cpus;
}

std::string cpu_list_to_text(const std::vector<int>& cpus) {
  std::vector<int> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  std::string text;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += j == i ? std::to_string(sorted[i]) : fmt::format("{}-{}", sorted[i], sorted[j]);
    i = j + 1;
  }
  return text;
}

std::vector<int> process_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

std::string pin_process_to(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE) return fmt::format("CPU {} is out of range", c);
    CPU_SET(c, &set);
  }
  // Threads started before this call (CUDA's, torch's) keep their own mask: set each one.
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return "cannot list /proc/self/task";
  std::string error;
  while (const dirent* entry = readdir(tasks)) {
    const auto tid = parse_int(entry->d_name);
    if (!tid) continue;
    if (sched_setaffinity(*tid, sizeof(set), &set) != 0 && error.empty()) {
      error = fmt::format("sched_setaffinity({}) failed: {}", cpu_list_to_text(cpus),
                          std::strerror(errno));
    }
  }
  closedir(tasks);
  return error;
}

GpuLocality read_gpu_locality(const std::string& sysfs_device_dir) {
  GpuLocality locality;
  if (const auto list = read_first_line(sysfs_device_dir + "/local_cpulist"))
    locality.local_cpus = cpu_list_from_text(*list);
  if (const auto node = read_first_line(sysfs_device_dir + "/numa_node"))
    locality.numa_node = parse_int(*node);
  return locality;
}

std::optional<std::vector<double>> read_load_average(const std::string& path) {
  std::ifstream in(path);
  std::vector<double> load(3);
  if (!(in >> load[0] >> load[1] >> load[2])) return std::nullopt;
  return load;
}

std::optional<CpuTicks> read_cpu_ticks(const std::string& path) {
  std::ifstream in(path);
  std::string label;
  // user nice system idle iowait irq softirq steal (guest time is inside user already)
  int64_t field[8] = {};
  if (!(in >> label) || label != "cpu") return std::nullopt;
  for (int64_t& f : field) {
    if (!(in >> f)) return std::nullopt;
  }
  CpuTicks ticks;
  for (const int64_t f : field) ticks.total += f;
  ticks.idle = field[3] + field[4];
  ticks.steal = field[7];
  return ticks;
}

json host_snapshot(const GpuMonitor& monitor, const json& gpus) {
  const auto load = read_load_average();
  const auto ticks = read_cpu_ticks();
  json snapshot{
      {"load_average", load ? json(*load) : json(nullptr)},
      {"cpu_ticks",
       ticks ? json{{"total", ticks->total}, {"idle", ticks->idle}, {"steal", ticks->steal}}
             : json(nullptr)},
      {"gpus", json::array()}};
  for (const json& gpu : gpus) {
    json s = monitor.snapshot(gpu.value("pci_bus_id", std::string()));
    s["index"] = gpu.value("index", -1);
    snapshot["gpus"].push_back(std::move(s));
  }
  return snapshot;
}

json host_layout(const json& gpus) {
  const auto governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  json layout{{"affinity", cpu_list_to_text(process_affinity())},
              {"cpu_governor", governor ? json(*governor) : json(nullptr)},
              {"gpus", json::array()}};
  for (const json& gpu : gpus) {
    const GpuLocality l =
        read_gpu_locality("/sys/bus/pci/devices/" + gpu.value("pci_bus_id", std::string()));
    layout["gpus"].push_back(
        {{"index", gpu.value("index", -1)},
         {"local_cpus", l.local_cpus ? json(cpu_list_to_text(*l.local_cpus)) : json(nullptr)},
         {"numa_node", l.numa_node ? json(*l.numa_node) : json(nullptr)}});
  }
  return layout;
}

std::vector<std::string> busy_host_warnings(const json& start, const json& end, int logical_cpus,
                                            const std::vector<int>& used_gpus) {
  std::vector<std::string> warnings;
  for (const auto& [when, snapshot] : {std::pair{"start", &start}, std::pair{"end", &end}}) {
    const json& load = snapshot->value("load_average", json());
    if (load.is_array() && !load.empty() && load[0].get<double>() > 0.5 * logical_cpus) {
      warnings.push_back(fmt::format("load average {:.1f} at the {} is above half of the {} CPUs",
                                     load[0].get<double>(), when, logical_cpus));
    }
    for (const json& gpu : snapshot->value("gpus", json::array())) {
      if (!gpu_used(gpu, used_gpus)) continue;
      if (gpu.value("throttled", json()) == true) {
        warnings.push_back(fmt::format("GPU {} clocks throttled at the {} ({})",
                                       gpu.value("index", -1), when,
                                       gpu["throttle_reasons"].dump()));
      }
    }
  }
  // Stolen time is the one sign of other guests a virtual machine can see from inside; it moves
  // every measured time together, the minute-scale drift that no interval of one run covers.
  const json& ticks_start = start.value("cpu_ticks", json());
  const json& ticks_end = end.value("cpu_ticks", json());
  if (ticks_start.is_object() && ticks_end.is_object()) {
    const auto total = ticks_end["total"].get<int64_t>() - ticks_start["total"].get<int64_t>();
    const auto steal = ticks_end["steal"].get<int64_t>() - ticks_start["steal"].get<int64_t>();
    if (total > 0 && steal > 0.02 * static_cast<double>(total)) {
      warnings.push_back(
          fmt::format("{:.1f} % of the CPU time during the run was stolen by the hypervisor "
                      "(other guests on the host)",
                      100.0 * static_cast<double>(steal) / static_cast<double>(total)));
    }
  }
  // At the end this process has a context of its own, which NVML may list under a PID of
  // another namespace; only the start (before this process touched the GPU) is conclusive.
  for (const json& gpu : start.value("gpus", json::array())) {
    const json& others = gpu.value("other_processes", json());
    if (gpu_used(gpu, used_gpus) && others.is_array() && !others.empty()) {
      warnings.push_back(fmt::format("GPU {} is in use by {} other process{} ({})",
                                     gpu.value("index", -1), others.size(),
                                     others.size() == 1 ? "" : "es", others[0].value("name", "?")));
    }
  }
  return warnings;
}

}  // namespace mtc::bench
