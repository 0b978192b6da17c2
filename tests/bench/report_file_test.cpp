// ReportFile: a report is either complete at its path or absent; bad paths fail up front.
#include "report/report_file.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "errors.h"
#include "temp_dir.h"

namespace mtc::bench {
namespace {

using testing_support::TempDir;

std::string read_text(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

// Every entry of the folder, hidden ones included (that is where a temporary file would be).
int entries_in(const std::string& folder) {
  int count = 0;
  DIR* dir = opendir(folder.c_str());
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") ++count;
  }
  closedir(dir);
  return count;
}

TEST(ReportFile, CommitPutsTheWholeTextInPlaceAndLeavesNothingElse) {
  const TempDir dir;
  std::ofstream(dir / "r.json") << "old";
  {
    ReportFile file(dir / "r.json");
    EXPECT_EQ(read_text(dir / "r.json"), "old") << "the destination changes only on commit";
    file.commit("{\"new\": true}\n");
  }
  EXPECT_EQ(read_text(dir / "r.json"), "{\"new\": true}\n");
  EXPECT_EQ(entries_in(dir.path()), 1);
}

TEST(ReportFile, WithoutCommitTheDestinationStaysAsItWasAndTheTemporaryGoes) {
  const TempDir dir;
  std::ofstream(dir / "kept.md") << "previous report";
  { const ReportFile abandoned(dir / "kept.md"); }
  { const ReportFile never(dir / "new.md"); }
  EXPECT_EQ(read_text(dir / "kept.md"), "previous report");
  EXPECT_EQ(entries_in(dir.path()), 1);
}

TEST(ReportFile, ModeFollowsTheUmaskAsAPlainFileWould) {
  const TempDir dir;
  const mode_t mask = umask(022);
  ReportFile(dir / "r.json").commit("x");
  umask(mask);
  struct stat info {};
  ASSERT_EQ(stat((dir / "r.json").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);
}

TEST(ReportFile, BadPathsFailBeforeAnythingIsWritten) {
  const TempDir dir;
  EXPECT_THROW(ReportFile(dir / "no/such/folder/r.json"), UsageError);
  dir.make_dir("folder");
  try {
    const ReportFile file(dir / "folder");
    FAIL() << "a folder was accepted as a report path";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("it is a folder"), std::string::npos) << e.what();
  }
  if (geteuid() != 0) {  // root may write anything: the permission cases only hold for others
    std::ofstream(dir / "read-only.json") << "keep";
    chmod((dir / "read-only.json").c_str(), 0444);
    EXPECT_THROW(ReportFile(dir / "read-only.json"), UsageError);
    const std::string locked = dir.make_dir("locked");
    chmod(locked.c_str(), 0555);
    EXPECT_THROW(ReportFile(locked + "/r.json"), UsageError);
  }
}

TEST(ReportFile, EmptyPathMeansNoFile) {
  ReportFile none("");
  EXPECT_NO_THROW(none.commit("ignored"));
}

}  // namespace
}  // namespace mtc::bench
