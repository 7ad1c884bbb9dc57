// The shim's exit records and exit journals (ReadExitFile in local.cc reads them).
#include "backend/shim_record.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "base/file.h"

namespace rsl::shim {
namespace {

TEST(ShimRecordTest, RecordIsKeyValueLinesEndingInEnd) {
  EXPECT_EQ(Record(3, 0, true, "timeout", 1500, 20, 4096, 750, "cgroup v2", 10, 20, "two\nlines"),
            "exit_code=3\nsignal=0\noom=1\nstop=timeout\nwall_ms=1500\ncpu_ms=20\n"
            "peak_memory_bytes=4096\npeak_cpu_millicores=750\nlimits=cgroup v2\nstarted_us=10\n"
            "ended_us=20\nmessage=two lines\nend=1\n");
}

TEST(ShimRecordTest, PeakCpuIsTheHighestSampledRateOrTheAverageWhenThatIsHigher) {
  EXPECT_EQ(PeakCpuMillicores(1800, 3000, 3000), 1800);  // busy in one interval: its rate
  EXPECT_EQ(PeakCpuMillicores(0, 450, 500), 900);        // shorter than a sample interval
  EXPECT_EQ(PeakCpuMillicores(400, 1500, 1000), 1500);   // busiest after the last sample
  EXPECT_EQ(PeakCpuMillicores(0, 10, 0), 0);
}

TEST(ShimRecordTest, LimitsTextNamesTheLimitsAskedFor) {
  Attempt a;
  EXPECT_EQ(LimitsText(a), "none");
  a.mechanism = "cgroup v2";
  a.memory = 1048576;  // in the units a spec writes: 1Mi, not raw bytes
  EXPECT_EQ(LimitsText(a), "cgroup v2 (memory 1Mi, cpu -)");
  a.memory = 100663296;
  a.cpu_millis = 2000;
  EXPECT_EQ(LimitsText(a), "cgroup v2 (memory 96Mi, cpu 2)");
  a.memory = 1000;
  EXPECT_EQ(LimitsText(a), "cgroup v2 (memory 1000, cpu 2)");
  a.memory = 0;
  a.cpu_millis = 500;
  EXPECT_EQ(LimitsText(a), "cgroup v2 (memory -, cpu 500m)");
}

TEST(ShimRecordTest, JournalDirKeepsTheSlash) {
  EXPECT_EQ(JournalDir("/runs/r1/attempts/1.exit"), "/runs/r1/attempts/");
  EXPECT_EQ(JournalDir("1.exit"), "");
}

TEST(ShimRecordTest, JournalFramesEachRecordInOneAppend) {
  std::string dir = ::testing::TempDir() + "shim_record_test_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ExitJournals journals;
  journals.Hold(dir + "/");
  EXPECT_TRUE(journals.Held(dir + "/"));
  journals.Write(dir + "/a.exit", "x=1\nend=1\n");
  journals.Write(dir + "/b.exit", "x=2\nend=1\n");
  journals.Release(dir + "/");
  EXPECT_FALSE(journals.Held(dir + "/"));
  // Not held: opened and closed for this one record.
  journals.Write(dir + "/c.exit", "x=3\nend=1\n");
  auto text = ReadFile(dir + "/exits");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "\nattempt=a.exit\nx=1\nend=1\n\nattempt=b.exit\nx=2\nend=1\n"
            "\nattempt=c.exit\nx=3\nend=1\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "/a.exit"));  // no file of its own
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rsl::shim
