// ReportFile: a report is either complete at its path or absent; bad paths fail up front.
#include "report/report_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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
    ReportFile file("--json", dir / "r.json");
    EXPECT_EQ(read_text(dir / "r.json"), "old") << "the destination changes only on commit";
    file.commit("{\"new\": true}\n");
  }
  EXPECT_EQ(read_text(dir / "r.json"), "{\"new\": true}\n");
  EXPECT_EQ(entries_in(dir.path()), 1);
}

TEST(ReportFile, WithoutCommitTheDestinationStaysAsItWasAndTheTemporaryGoes) {
  const TempDir dir;
  std::ofstream(dir / "kept.md") << "previous report";
  { const ReportFile abandoned("--json", dir / "kept.md"); }
  { const ReportFile never("--json", dir / "new.md"); }
  EXPECT_EQ(read_text(dir / "kept.md"), "previous report");
  EXPECT_EQ(entries_in(dir.path()), 1);
}

// A run killed outright (SIGKILL) ends while its report files wait for commit(): where the
// folder takes an unnamed file, nothing of theirs is in it until then.
TEST(ReportFile, NothingIsInTheFolderBeforeCommitWhereItTakesAnUnnamedFile) {
  const TempDir dir;
  const int probe = ::open(dir.path().c_str(), O_TMPFILE | O_WRONLY, 0600);
  if (probe < 0) GTEST_SKIP() << "this file system makes no unnamed files (O_TMPFILE)";
  ::close(probe);
  ReportFile file("--json", dir / "r.json");
  EXPECT_EQ(entries_in(dir.path()), 0);
  file.commit("{}\n");
  EXPECT_EQ(read_text(dir / "r.json"), "{}\n");
  EXPECT_EQ(entries_in(dir.path()), 1);
}

TEST(ReportFile, ModeFollowsTheUmaskAsAPlainFileWould) {
  const TempDir dir;
  const mode_t mask = umask(022);
  ReportFile("--json", dir / "r.json").commit("x");
  umask(mask);
  struct stat info {};
  ASSERT_EQ(stat((dir / "r.json").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);
}

TEST(ReportFile, BadPathsFailBeforeAnythingIsWritten) {
  const TempDir dir;
  EXPECT_THROW(ReportFile("--json", dir / "no/such/folder/r.json"), UsageError);
  dir.make_dir("folder");
  try {
    const ReportFile file("--json", dir / "folder");
    FAIL() << "a folder was accepted as a report path";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("it is a folder"), std::string::npos) << e.what();
  }
  // Refused for root too (CI containers run as root, whom access() lets write anything).
  std::ofstream(dir / "read-only.json") << "keep";
  chmod((dir / "read-only.json").c_str(), 0444);
  EXPECT_THROW(ReportFile("--json", dir / "read-only.json"), UsageError);
  if (geteuid() != 0) {  // root may write in any folder, and its own are often 0550
    const std::string locked = dir.make_dir("locked");
    chmod(locked.c_str(), 0555);
    EXPECT_THROW(ReportFile("--json", locked + "/r.json"), UsageError);
  }
}

// A destination whose name is near the file system's limit (255 bytes) is a valid path: its
// temporary file's name must fit as well, or the report would be lost at the end of the run.
TEST(ReportFile, ALongNameStillGetsItsTemporaryFile) {
  const TempDir dir;
  const std::string name = std::string(250, 'r') + ".json";
  ReportFile file("--json", dir / name);
  ASSERT_NO_THROW(file.commit("{}\n"));
  EXPECT_EQ(read_text(dir / name), "{}\n");
}

// Whatever is at the path and is not a regular file stays as it is: the rename would have put a
// plain file in place of a named pipe, a device or a symbolic link (not its target).
TEST(ReportFile, RefusesToReplaceWhatIsNotARegularFile) {
  const TempDir dir;
  std::ofstream(dir / "target.json") << "target";
  ASSERT_EQ(symlink((dir / "target.json").c_str(), (dir / "link.json").c_str()), 0);
  ASSERT_EQ(symlink((dir / "nowhere.json").c_str(), (dir / "dangling.json").c_str()), 0);
  ASSERT_EQ(mkfifo((dir / "pipe.md").c_str(), 0644), 0);
  const std::vector<std::pair<std::string, std::string>> cases{
      {dir / "link.json", "it is a symbolic link"},
      {dir / "dangling.json", "it is a symbolic link"},
      {dir / "pipe.md", "it is a named pipe"},
      {"/dev/null", "it is a device"}};
  for (const auto& [path, why] : cases) {
    try {
      const ReportFile file("--md", path);
      ADD_FAILURE() << path << " was accepted as a report path";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), "--md " + path + ": cannot write it: " + why +
                                           "; a report replaces a regular file only");
    }
  }
  struct stat info {};
  ASSERT_EQ(lstat((dir / "link.json").c_str(), &info), 0);
  EXPECT_TRUE(S_ISLNK(info.st_mode));
  EXPECT_EQ(read_text(dir / "target.json"), "target");
  ASSERT_EQ(lstat((dir / "pipe.md").c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  EXPECT_EQ(entries_in(dir.path()), 4) << "no temporary file is left";
}

TEST(ReportFile, CommitRefusesWhatTookThePathMeanwhile) {
  const TempDir dir;
  ReportFile file("--json", dir / "r.json");
  ASSERT_EQ(mkfifo((dir / "r.json").c_str(), 0644), 0);
  EXPECT_THROW(file.commit("report"), std::runtime_error);
  struct stat info {};
  ASSERT_EQ(lstat((dir / "r.json").c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  EXPECT_EQ(entries_in(dir.path()), 1);
}

TEST(ReportFile, EmptyPathMeansNoFile) {
  ReportFile none("--json", "");
  EXPECT_NO_THROW(none.commit("ignored"));
}

}  // namespace
}  // namespace mtc::bench
