#include "runner/env/environment.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "temp_dir.h"

namespace mtc::bench {
namespace {

using testing_support::TempDir;

TEST(Environment, CpuModelFromCpuinfo) {
  std::istringstream x86(
      "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n");
  EXPECT_EQ(cpu_model_from_cpuinfo(x86), "Intel(R) Xeon(R) Platinum 8480+");
  std::istringstream none("processor : 0\n");
  EXPECT_EQ(cpu_model_from_cpuinfo(none), "unknown");
}

TEST(Environment, PcieGenerations) {
  EXPECT_EQ(pcie_generation(2.5), 1);
  EXPECT_EQ(pcie_generation(16.0), 4);
  EXPECT_EQ(pcie_generation(32.0), 5);
  EXPECT_EQ(pcie_generation(64.0), 6);
  EXPECT_EQ(pcie_generation(7.0), 0);
}

TEST(Environment, PcieLinkFromSysfs) {
  const TempDir dir;
  std::ofstream(dir / "current_link_speed") << "32.0 GT/s PCIe\n";
  std::ofstream(dir / "current_link_width") << "16\n";
  const auto link = read_pcie_link(dir.path());
  ASSERT_TRUE(link);
  EXPECT_EQ(link->speed, "32.0 GT/s PCIe");
  EXPECT_EQ(link->generation, 5);
  EXPECT_EQ(link->width, 16);
  std::ofstream(dir / "current_link_speed") << "Unknown\n";
  EXPECT_FALSE(read_pcie_link(dir.path()));
  EXPECT_FALSE(read_pcie_link(dir / "absent"));
}

TEST(Environment, Versions) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12080), "12.8");
}

// Matched by hand, not with <regex>: GCC 12 with AddressSanitizer reports a false
// -Wmaybe-uninitialized inside libstdc++'s regex automaton, which -Werror turns into an error.
TEST(Environment, DateIsIsoUtc) {
  const std::string date = utc_now_iso8601();
  const std::string pattern = "dddd-dd-ddTdd:dd:ddZ";  // d: a digit
  ASSERT_EQ(date.size(), pattern.size()) << date;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == 'd') {
      EXPECT_TRUE(date[i] >= '0' && date[i] <= '9') << date;
    } else {
      EXPECT_EQ(date[i], pattern[i]) << date;
    }
  }
}

TEST(Environment, ContextBlock) {
  const nlohmann::json c = collect_environment();
  EXPECT_EQ(c["tool"]["name"], "mtc-bench");
  EXPECT_TRUE(c["tool"]["version"].is_string());
  EXPECT_TRUE(c["tool"]["git_revision"].is_string());
  EXPECT_TRUE(c["torch_version"].is_string());
  EXPECT_EQ(c["malloc"], malloc_library());
  EXPECT_TRUE(c["cpu"]["logical_cores"].is_number_integer());
  EXPECT_TRUE(c["gpus"].is_array());
  EXPECT_EQ(c["gpus"].size(), static_cast<size_t>(cuda_device_count()));
  if (cuda_device_count() == 0) {
    EXPECT_TRUE(c["cuda"].is_null());
  }
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MTC_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MTC_TEST_SANITIZED 1
#endif

// With nothing preloaded, malloc is the C library's: the library is named, with glibc's version.
// (Under LD_PRELOAD=libjemalloc.so.2 this test failed, naming it.)
TEST(Environment, MallocLibraryIsTheCLibrarysWithItsVersion) {
#ifdef MTC_TEST_SANITIZED
  GTEST_SKIP() << "a sanitizer's runtime is this build's malloc";
#endif
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload != nullptr && *preload != '\0') GTEST_SKIP() << "LD_PRELOAD is set: " << preload;
  const std::string name = malloc_library();
  EXPECT_EQ(name.rfind("libc.so", 0), 0u) << name;
  EXPECT_NE(name.find("(glibc 2."), std::string::npos) << name;
}

}  // namespace
}  // namespace mtc::bench
