#include "runner/cli/config_paths.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "temp_dir.h"

namespace mtc::bench {
namespace {

using testing_support::TempDir;

class ConfigPaths : public testing::Test {
 protected:
  void SetUp() override {
    a_ = dir_.make_dir("a");
    b_ = dir_.make_dir("b");
    std::ofstream(a_ + "/one.json") << "{}";
    std::ofstream(b_ + "/one.json") << "{}";
    std::ofstream(b_ + "/two.json") << "{}";
    std::ofstream(b_ + "/spec.schema.json") << "{}";
    std::ofstream(b_ + "/notes.txt") << "";
  }
  std::vector<std::string> dirs() const { return {a_, b_}; }
  TempDir dir_;
  std::string a_;
  std::string b_;
};

TEST_F(ConfigPaths, AFileIsTakenAsItIs) {
  const std::string file = b_ + "/two.json";
  EXPECT_EQ(resolve_config_path(file, dirs()), file);
}

TEST_F(ConfigPaths, ABareNameIsLookedUpFirstFolderFirst) {
  EXPECT_EQ(resolve_config_path("one", dirs()), a_ + "/one.json");
  EXPECT_EQ(resolve_config_path("two.json", dirs()), b_ + "/two.json");
}

TEST_F(ConfigPaths, UnknownNamesAndPathsComeBackUnchanged) {
  EXPECT_EQ(resolve_config_path("three", dirs()), "three");
  EXPECT_EQ(resolve_config_path("missing/one.json", dirs()), "missing/one.json");
}

TEST_F(ConfigPaths, ListsEachFileNameOnceAndNoSchemas) {
  const auto configs = list_configs(dirs());
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_EQ(configs[0], a_ + "/one.json");
  EXPECT_EQ(configs[1], b_ + "/two.json");
}

TEST(ConfigSearchDirs, FindsTheSourceTreeConfigs) {
  const auto dirs = config_search_dirs();
  EXPECT_FALSE(dirs.empty());
  for (const std::string& dir : dirs) {
    struct stat st {};
    EXPECT_TRUE(stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) << dir;
  }
}

}  // namespace
}  // namespace mtc::bench
