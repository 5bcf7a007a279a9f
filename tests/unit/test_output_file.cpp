// core/output_file: -o checked without touching the file, documents replaced
// whole, and the memory check's wording (core/sysinfo).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/output_file.hpp"
#include "core/sysinfo.hpp"

namespace xb {
namespace {

namespace fs = std::filesystem;

struct Folder {
  fs::path dir;
  Folder() {
    std::string t = (fs::temp_directory_path() / "xb-output-XXXXXX").string();
    dir = mkdtemp(t.data());
  }
  ~Folder() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string at(const char* name) const { return (dir / name).string(); }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), {}));
  }
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(OutputFile, CheckedWithoutCreatingOrEmptying) {
  Folder f;
  const std::string old = f.at("old.json");
  std::ofstream(old) << "{\"old\": true}";
  EXPECT_EQ(output_problem(old), "");
  EXPECT_EQ(read(old), "{\"old\": true}");  // not emptied
  EXPECT_EQ(output_problem(f.at("new.json")), "");
  EXPECT_FALSE(fs::exists(f.at("new.json")));  // not created
  EXPECT_EQ(f.entries(), 1u);                  // no probe left
  EXPECT_EQ(output_problem(f.at("missing/x.json")), "No such file or directory");
  EXPECT_EQ(output_problem(f.dir.string()), "Is a directory");
  EXPECT_EQ(output_problem(old + "/x.json"), "Not a directory");
  EXPECT_THROW(check_output(f.at("missing/x.json")), UsageError);
}

TEST(OutputFile, ReplacedWholeKeepingItsMode) {
  Folder f;
  const std::string p = f.at("doc.prom");
  std::ofstream(p) << "old document\n";
  ASSERT_EQ(::chmod(p.c_str(), 0640), 0);
  EXPECT_TRUE(replaced_whole(p));
  EXPECT_EQ(replace_file(p, "new document\n"), "");
  EXPECT_EQ(read(p), "new document\n");
  struct stat sb {};
  ASSERT_EQ(::stat(p.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0640u);
  EXPECT_EQ(f.entries(), 1u);  // no temporary file left
  EXPECT_EQ(replace_file(f.at("fresh.json"), "{}"), "");
  EXPECT_EQ(read(f.at("fresh.json")), "{}");
  EXPECT_NE(replace_file(f.at("missing/x.json"), "{}"), "");
  EXPECT_FALSE(replaced_whole("/dev/null"));  // a device is written in place
}

// A run killed while it wrote leaves its hidden temporary file; a later
// process may get the same id, and then meets those names: it passes over
// them (before, "File exists" and the document unwritten).
TEST(OutputFile, ATemporaryFileLeftByAnEarlierProcessIsPassedOver) {
  Folder f;
  const std::string p = f.at("doc.json");
  for (int serial = 0; serial < 200; ++serial)
    for (const char* what : {"tmp", "probe"})
      std::ofstream(f.dir / (".doc.json." + std::string(what) + "." + std::to_string(getpid()) +
                             "." + std::to_string(serial)))
          << "left";
  const std::size_t left = f.entries();
  EXPECT_EQ(output_problem(p), "");
  EXPECT_EQ(replace_file(p, "new"), "");
  EXPECT_EQ(read(p), "new");
  EXPECT_EQ(f.entries(), left + 1);  // the document, nothing of its own left
}

TEST(OutputFile, ThroughALinkTheTargetIsReplaced) {
  Folder f;
  const std::string target = f.at("target.json"), link = f.at("link.json");
  std::ofstream(target) << "old";
  fs::create_symlink(target, link);
  EXPECT_EQ(replace_file(link, "new"), "");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read(target), "new");
}

TEST(OutputFile, SameFileByDeviceAndInode) {
  Folder f;
  const std::string a = f.at("a.json"), b = f.at("b.json");
  std::ofstream(a) << "{}";
  std::ofstream(b) << "{}";
  EXPECT_TRUE(same_file(a, a));
  EXPECT_TRUE(same_file(a, (f.dir / "." / "a.json").string()));
  EXPECT_FALSE(same_file(a, b));
  EXPECT_FALSE(same_file(a, f.at("none.json")));
  fs::create_hard_link(a, f.at("hard.json"));
  EXPECT_TRUE(same_file(a, f.at("hard.json")));
}

TEST(MemoryShortfall, OneWordingAndUnknownFits) {
  const std::uint64_t gib = 1ULL << 30;
  EXPECT_EQ(memory_shortfall("-s 1 GiB", gib, " on rank 0", 2 * gib), "");
  EXPECT_EQ(memory_shortfall("-s 1 GiB", gib, " on rank 0", 0), "");  // unknown: fits
  EXPECT_EQ(memory_shortfall("-s 100 GiB", 200 * gib, " on rank 1", 20 * gib),
            "-s 100 GiB needs 200.00 GiB on rank 1, only 20.00 GiB is available");
}

}  // namespace
}  // namespace xb
