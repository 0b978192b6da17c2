#include "runner/env/environment.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <gnu/libc-version.h>
#include <torch/version.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "mtc_git_revision.h"  // generated at build time: MTC_GIT_REVISION

#ifndef MTC_VERSION
#define MTC_VERSION "unknown"
#endif
#ifndef MTC_BUILD_TYPE
#define MTC_BUILD_TYPE "unknown"
#endif

namespace mtc::bench {
namespace {

using json = nlohmann::json;

std::string trim(std::string text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::string host_name() {
  std::array<char, 256> buffer{};
  if (gethostname(buffer.data(), buffer.size() - 1) != 0) return "unknown";
  return buffer.data();
}

// The NVIDIA kernel module's release ("580.159.03"); the CUDA API only reports the CUDA
// version the driver supports.
json driver_release() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!in || !std::getline(in, line)) return nullptr;
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])) &&
        word.find('.') != std::string::npos) {
      return word;
    }
  }
  return nullptr;
}

json gpu_json(int index) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
    cudaGetLastError();  // not sticky, but keep later checks clean
    return json{{"index", index}, {"error", "cudaGetDeviceProperties failed"}};
  }
  const std::string bus_id =
      fmt::format("{:04x}:{:02x}:{:02x}.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
  json link = nullptr;
  if (auto l = read_pcie_link("/sys/bus/pci/devices/" + bus_id)) {
    link = json{{"speed", l->speed},
                {"generation", l->generation > 0 ? json(l->generation) : json(nullptr)},
                {"width", l->width}};
  }
  return json{{"index", index},
              {"name", std::string(prop.name)},
              {"sm_count", prop.multiProcessorCount},
              {"compute_capability", fmt::format("{}.{}", prop.major, prop.minor)},
              {"memory_bytes", static_cast<int64_t>(prop.totalGlobalMem)},
              {"pci_bus_id", bus_id},
              {"pcie_link", link}};
}

}  // namespace

std::optional<std::string> read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return trim(line);
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::string cpu_model_from_cpuinfo(std::istream& cpuinfo) {
  std::string line;
  while (std::getline(cpuinfo, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    // x86 says "model name"; some Arm kernels only give "Hardware" or "CPU part".
    if (key == "model name" || key == "Hardware") return trim(line.substr(colon + 1));
  }
  return "unknown";
}

int pcie_generation(double gigatransfers_per_s) {
  constexpr std::array<double, 6> rates{2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  for (size_t i = 0; i < rates.size(); ++i) {
    if (std::abs(gigatransfers_per_s - rates[i]) < 0.01) return static_cast<int>(i) + 1;
  }
  return 0;
}

std::optional<PcieLink> read_pcie_link(const std::string& device_dir) {
  const auto speed = read_first_line(device_dir + "/current_link_speed");
  const auto width = read_first_line(device_dir + "/current_link_width");
  if (!speed || !width) return std::nullopt;
  PcieLink link;
  link.speed = *speed;
  try {
    link.generation = pcie_generation(std::stod(*speed));
    link.width = std::stoi(*width);
  } catch (const std::exception&) {
    return std::nullopt;  // "Unknown" on links that are down
  }
  return link;
}

std::string cuda_version_string(int version) {
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::array<char, 32> buffer{};
  std::strftime(buffer.data(), buffer.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer.data();
}

std::string malloc_library() {
  // malloc resolves to the first library that defines it: a preloaded allocator, else libc.
  Dl_info info{};
  void* const entry = dlsym(RTLD_DEFAULT, "malloc");
  if (entry == nullptr || dladdr(entry, &info) == 0 || info.dli_fname == nullptr) return "unknown";
  std::string name = info.dli_fname;
  // A malloc linked into the program itself (a sanitizer's runtime) is in the same file as this
  // function.
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&malloc_library), &self) != 0 && self.dli_fname != nullptr &&
      name == self.dli_fname)
    return "the program's own";
  if (const size_t slash = name.rfind('/'); slash != std::string::npos) name.erase(0, slash + 1);
  if (name.rfind("libc.so", 0) == 0) name += std::string(" (glibc ") + gnu_get_libc_version() + ")";
  return name;
}

std::string build_revision() { return MTC_GIT_REVISION; }

json collect_environment() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  json context{
      {"tool",
       {{"name", "mtc-bench"}, {"version", MTC_VERSION}, {"git_revision", MTC_GIT_REVISION}}},
      {"build",
       {{"type", MTC_BUILD_TYPE},
#ifdef MTC_NVTX_DISABLE
        {"nvtx", false}
#else
        {"nvtx", true}
#endif
       }},
      {"date", utc_now_iso8601()},
      {"host", host_name()},
      {"cpu",
       {{"model", cpuinfo ? cpu_model_from_cpuinfo(cpuinfo) : std::string("unknown")},
        {"logical_cores", std::thread::hardware_concurrency()}}},
      {"torch_version", TORCH_VERSION},
      {"malloc", malloc_library()},
      {"cuda", nullptr},
      {"gpus", json::array()}};

  const int count = cuda_device_count();
  if (count > 0) {
    int driver = 0;
    int runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    context["cuda"] = {{"driver_version", cuda_version_string(driver)},
                       {"runtime_version", cuda_version_string(runtime)},
                       {"driver_release", driver_release()},
                       {"device_count", count}};
    for (int i = 0; i < count; ++i) context["gpus"].push_back(gpu_json(i));
  }
  return context;
}

}  // namespace mtc::bench
