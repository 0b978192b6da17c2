// The report's context block: what ran, where, on what. No ATen: CUDA runtime and /proc only.
#pragma once

#include <istream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace mtc::bench {

// Number of CUDA devices; 0 without a driver or device. Never throws.
int cuda_device_count();

// The whole context block (tool, date, host, CPU, torch, CUDA, every GPU).
nlohmann::json collect_environment();

// The library whose malloc the process uses, by file name, with glibc's version where it is the C
// library's own: "libc.so.6 (glibc 2.39)", "libjemalloc.so.2" under LD_PRELOAD, or "the program's
// own" where the program links one in (a sanitizer's runtime). The engine
// makes and frees many small objects per copy (containers, tensor headers), so the allocator moves
// its times by a quarter or more (results/notes/2026-11-27-late-night.md).
std::string malloc_library();

// The git revision this program was built from ("-dirty" for uncommitted changes).
std::string build_revision();

// The first line of a small text file (sysfs, /proc), trimmed; empty when unreadable.
std::optional<std::string> read_first_line(const std::string& path);

// Pieces of it, exposed for tests.
struct PcieLink {
  std::string speed;   // as the kernel reports it: "32.0 GT/s PCIe"
  int generation = 0;  // 0 when the speed is not one of the known rates
  int width = 0;
};
std::string cpu_model_from_cpuinfo(std::istream& cpuinfo);
// Reads current_link_speed and current_link_width in a sysfs PCI device folder.
std::optional<PcieLink> read_pcie_link(const std::string& device_dir);
int pcie_generation(double gigatransfers_per_s);
// "13.0" for 13000.
std::string cuda_version_string(int version);
// "2025-11-22T00:18:00Z".
std::string utc_now_iso8601();

}  // namespace mtc::bench
