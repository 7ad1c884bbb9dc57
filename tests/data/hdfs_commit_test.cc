// Two runs, one hdfs:// output root: the conditional writes of data/webhdfs.cc (exclusive
// CREATE, atomic RENAME) and the commit protocol of engine/object_root.h on them, against an
// in-memory HDFS behind the WebHDFS REST API (fake_webhdfs.h: no Hadoop can be installed
// here; the same cases run against a real S3 server in s3_commit_test.cc).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>
#include <vector>

#include "base/codes.h"
#include "commit_root_cases.h"
#include "data/catalog.h"
#include "data/remote.h"
#include "data/storage.h"
#include "fake_webhdfs.h"
#include "runtime/data_hooks.h"

namespace rsl {
namespace {

class HdfsCommit : public ::testing::Test {
 protected:
  std::string FreshDir(const std::string& name) {
    std::string dir =
        ::testing::TempDir() + "hdfs_commit_test_" + name + "_" + std::to_string(getpid());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
  }

  // A state directory whose catalog serves hdfs://ns1 through the fake namenode.
  data::Datasource Hdfs() const {
    data::Datasource ds;
    ds.name = "hdfs-test";
    ds.kind = "hdfs";
    ds.namenodes = {"ns1:8020"};
    ds.webhdfs_url = hdfs_.url();
    return ds;
  }

  commit_cases::PublisherFor Publisher() {
    return [this](const std::string& state_dir) {
      auto catalog = data::Catalog::Open(state_dir);
      EXPECT_TRUE(catalog.ok());
      EXPECT_TRUE((*catalog)->Register(Hdfs(), /*replace=*/true).ok());
      return std::make_shared<runtime::DataPublisher>(state_dir);
    };
  }

  std::unique_ptr<data::Storage> Raw() { return data::NewWebHdfsStorage(Hdfs()); }

  // Files whose names say they are a conditional write's leftovers.
  std::vector<std::string> Leftovers() {
    std::vector<std::string> out;
    for (const auto& f : hdfs_.Files()) {
      if (f.find(".rsl-next-") != std::string::npos || f.find(".rsl-prev-") != std::string::npos)
        out.push_back(f);
    }
    return out;
  }

  data::testing::FakeWebHdfs hdfs_;
};

TEST_F(HdfsCommit, ConditionalWritesCreateOnlyAndReplaceOnlyTheVersionRead) {
  auto hdfs = Raw();
  const std::string uri = "hdfs://ns1/root/.rsl-output/lock";
  EXPECT_EQ(hdfs->ReadTagged(uri).status().code(), codes::kDataSourceNotFound);
  auto v1 = hdfs->WriteIf(uri, "one", "");
  ASSERT_TRUE(v1.ok()) << v1.error().ToString();
  auto again = hdfs->WriteIf(uri, "other", "");  // create-only: it exists
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, codes::kConflict);
  auto read = hdfs->ReadTagged(uri);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->bytes, "one");
  EXPECT_EQ(read->etag, *v1);
  auto v2 = hdfs->WriteIf(uri, "two", *v1);
  ASSERT_TRUE(v2.ok()) << v2.error().ToString();
  EXPECT_NE(*v2, *v1);
  auto stale = hdfs->WriteIf(uri, "three", *v1);  // replaces only the version read
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, codes::kConflict);
  EXPECT_EQ(hdfs->ReadTagged(uri)->bytes, "two");
  ASSERT_TRUE(hdfs->Delete(uri).ok());
  auto gone = hdfs->WriteIf(uri, "four", *v2);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, codes::kConflict);
  // A listing shows the object, never a write's hidden files.
  ASSERT_TRUE(hdfs->WriteIf(uri, "five", "").ok());
  auto listed = hdfs->List("hdfs://ns1/root/.rsl-output");
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].relative, "lock");
  EXPECT_TRUE(Leftovers().empty());
}

// Compare-and-swap: writers that read, add one and write conditionally (again on a
// CONFLICT) lose no increment, however their requests interleave.
TEST_F(HdfsCommit, RacingConditionalWritersLoseNoIncrement) {
  const std::string uri = "hdfs://ns1/counter";
  ASSERT_TRUE(Raw()->WriteIf(uri, "0", "").ok());
  constexpr int kWriters = 6, kEach = 15;
  std::atomic<int> conflicts{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&] {
      auto hdfs = Raw();
      for (int done = 0; done < kEach;) {
        auto cur = hdfs->ReadTagged(uri);
        if (!cur.ok()) continue;  // renamed aside for a moment by another writer
        auto wrote = hdfs->WriteIf(uri, std::to_string(std::stoi(cur->bytes) + 1), cur->etag);
        if (wrote.ok()) {
          ++done;
        } else {
          EXPECT_EQ(wrote.error().code, codes::kConflict) << wrote.error().ToString();
          ++conflicts;
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  auto final = Raw()->ReadTagged(uri);
  ASSERT_TRUE(final.ok()) << final.error().ToString();
  EXPECT_EQ(final->bytes, std::to_string(kWriters * kEach)) << conflicts << " conflicts";
  EXPECT_GT(conflicts.load(), 0);  // they did race
  EXPECT_TRUE(Leftovers().empty());
}

TEST_F(HdfsCommit, ALiveLeaseMakesTheNextWaitAndAnExpiredOneIsTakenOver) {
  commit_cases::ALiveLeaseMakesTheNextWaitAndAnExpiredOneIsTakenOver(Publisher(), FreshDir("lease"),
                                                                     "hdfs://ns1/lease");
}

TEST_F(HdfsCommit, TwoControllersCommittingToOneRootLeaveOneRunsSetAndRecordTheOthers) {
  commit_cases::TwoControllersCommittingToOneRootLeaveOneRunsSetAndRecordTheOthers(
      Publisher(), FreshDir("two"), "hdfs://ns1/shared");
  EXPECT_TRUE(Leftovers().empty());
}

TEST_F(HdfsCommit, ARefuseRunIsRejectedWhileAnotherControllersRunIsInFlightAndAdmittedAfter) {
  commit_cases::ARefuseRunIsRejectedWhileAnotherControllersRunIsInFlightAndAdmittedAfter(
      Publisher(), FreshDir("refuse"), "hdfs://ns1/refuse");
}

}  // namespace
}  // namespace rsl
