#include "runner/env/host_state.h"

#include <gtest/gtest.h>

#include <fstream>

#include "temp_dir.h"

namespace mtc::bench {
namespace {

using json = nlohmann::json;
using testing_support::TempDir;

TEST(HostState, CpuListsBothWays) {
  EXPECT_EQ(cpu_list_from_text("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(cpu_list_to_text({11, 0, 1, 2, 3, 8, 10}), "0-3,8,10-11");
  EXPECT_EQ(cpu_list_to_text({5}), "5");
  for (const char* bad : {"", "x", "3-1", "1,", "-"}) EXPECT_FALSE(cpu_list_from_text(bad)) << bad;
}

TEST(HostState, TheProcessMayRunSomewhere) {
  const std::vector<int> cpus = process_affinity();
  ASSERT_FALSE(cpus.empty());
  // Pinning to what it already has changes nothing and succeeds.
  EXPECT_EQ(pin_process_to(cpus), "");
  EXPECT_EQ(process_affinity(), cpus);
  EXPECT_NE(pin_process_to({-1}), "");
}

TEST(HostState, GpuLocalityFromSysfs) {
  TempDir dir;
  std::ofstream(dir / "local_cpulist") << "0-15,32-47\n";
  std::ofstream(dir / "numa_node") << "1\n";
  const GpuLocality l = read_gpu_locality(dir.path());
  ASSERT_TRUE(l.local_cpus);
  EXPECT_EQ(l.local_cpus->size(), 32u);
  EXPECT_EQ(l.numa_node, 1);
  std::ofstream(dir / "numa_node") << "-1\n";  // one node, or unknown
  EXPECT_FALSE(read_gpu_locality(dir.path()).numa_node);
  EXPECT_FALSE(read_gpu_locality(dir / "missing").local_cpus);
}

TEST(HostState, LoadAverage) {
  TempDir dir;
  std::ofstream(dir / "loadavg") << "3.50 2.00 1.25 2/345 6789\n";
  EXPECT_EQ(read_load_average(dir / "loadavg"), (std::vector<double>{3.5, 2.0, 1.25}));
  EXPECT_FALSE(read_load_average(dir / "none"));
  EXPECT_TRUE(read_load_average());  // this machine's
}

TEST(HostState, CpuTicksFromProcStat) {
  TempDir dir;
  std::ofstream(dir / "stat")
      << "cpu  100 5 50 800 20 1 4 30 7 0\ncpu0 50 2 25 400 10 0 2 15 3 0\n";
  const auto ticks = read_cpu_ticks(dir / "stat");
  ASSERT_TRUE(ticks);
  EXPECT_EQ(ticks->total, 100 + 5 + 50 + 800 + 20 + 1 + 4 + 30);  // guest time is in user already
  EXPECT_EQ(ticks->idle, 820);
  EXPECT_EQ(ticks->steal, 30);
  std::ofstream(dir / "short") << "cpu 1 2 3\n";  // a kernel too old to count steal time
  EXPECT_FALSE(read_cpu_ticks(dir / "short"));
  std::ofstream(dir / "other") << "intr 1 2 3 4 5 6 7 8\n";
  EXPECT_FALSE(read_cpu_ticks(dir / "other"));
  EXPECT_FALSE(read_cpu_ticks(dir / "none"));
  EXPECT_TRUE(read_cpu_ticks());  // this machine's
}

TEST(HostState, ThrottleReasons) {
  EXPECT_EQ(throttle_reason_names(0x1 | 0x40),
            (std::vector<std::string>{"gpu_idle", "hw_thermal_slowdown"}));
  EXPECT_FALSE(is_throttled(0x1));  // idle is not throttling
  EXPECT_FALSE(is_throttled(0x2));  // nor are application clocks
  EXPECT_TRUE(is_throttled(0x4));   // a power cap is
  EXPECT_TRUE(is_throttled(0x1 | 0x20));
}

json quiet_snapshot() {
  return {
      {"load_average", {0.5, 0.5, 0.5}},
      {"gpus",
       json::array({{{"index", 0}, {"throttled", false}, {"other_processes", json::array()}}})}};
}

TEST(HostState, AQuietHostHasNoWarnings) {
  EXPECT_TRUE(busy_host_warnings(quiet_snapshot(), quiet_snapshot(), 16, {0}).empty());
}

TEST(HostState, EachSignOfABusyHostIsWarnedAbout) {
  json loaded = quiet_snapshot();
  loaded["load_average"][0] = 9.0;
  auto w = busy_host_warnings(quiet_snapshot(), loaded, 16, {0});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("load average 9.0 at the end"), std::string::npos) << w[0];

  json throttled = quiet_snapshot();
  throttled["gpus"][0]["throttled"] = true;
  throttled["gpus"][0]["throttle_reasons"] = {"sw_power_cap"};
  w = busy_host_warnings(throttled, quiet_snapshot(), 16, {0});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("GPU 0 clocks throttled at the start"), std::string::npos) << w[0];
  EXPECT_TRUE(
      busy_host_warnings(throttled, quiet_snapshot(), 16, {1}).empty());  // not a GPU in use

  json shared = quiet_snapshot();
  shared["gpus"][0]["other_processes"] =
      json::array({{{"pid", 42}, {"name", "python3"}, {"used_bytes", 1}}});
  w = busy_host_warnings(shared, quiet_snapshot(), 16, {0});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("1 other process (python3)"), std::string::npos) << w[0];
  // At the end NVML may list this very process under another PID namespace: not conclusive.
  EXPECT_TRUE(busy_host_warnings(quiet_snapshot(), shared, 16, {0}).empty());
}

TEST(HostState, StolenCpuTimeAboveTwoPercentIsWarnedAbout) {
  json start = quiet_snapshot();
  start["cpu_ticks"] = {{"total", 10000}, {"idle", 5000}, {"steal", 100}};
  json end = quiet_snapshot();
  end["cpu_ticks"] = {{"total", 20000}, {"idle", 9000}, {"steal", 300}};  // 200 of 10,000: 2 %
  EXPECT_TRUE(busy_host_warnings(start, end, 16, {0}).empty());
  end["cpu_ticks"]["steal"] = 600;  // 500 of 10,000
  const auto w = busy_host_warnings(start, end, 16, {0});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("5.0 % of the CPU time during the run was stolen"), std::string::npos)
      << w[0];
  end["cpu_ticks"] = nullptr;  // unreadable at the end: nothing to say
  EXPECT_TRUE(busy_host_warnings(start, end, 16, {0}).empty());
}

TEST(GpuMonitor, WithoutNvmlEverythingIsUnknown) {
  const GpuMonitor monitor;
  if (monitor.available()) GTEST_SKIP() << "NVML is present on this machine";
  EXPECT_FALSE(monitor.why_unavailable().empty());
  const json s = monitor.snapshot("0000:00:00.0");
  EXPECT_TRUE(s["sm_clock_mhz"].is_null());
  EXPECT_TRUE(s["other_processes"].is_null());
}

}  // namespace
}  // namespace mtc::bench
