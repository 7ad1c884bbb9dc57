// Two runs, one hdfs:// output root: the conditional writes of data/webhdfs.cc (exclusive
// CREATE, atomic RENAME) and the commit protocol of engine/object_root.h on them, against an
// in-memory HDFS behind the WebHDFS REST API (fake_webhdfs.h: no Hadoop can be installed
// here; the same cases run against a real S3 server in s3_commit_test.cc).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
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
      if (f.find(".rsl-next-") != std::string::npos || f.find(".rsl-prev-") != std::string::npos ||
          f.find(".rsl-claim") != std::string::npos)
        out.push_back(f);
    }
    return out;
  }

  // Whether the request PauseAt chose was reached before the client doing it was done.
  bool PausedBeforeDone(const std::atomic<bool>& done) {
    while (!done) {
      if (hdfs_.WaitPaused(10)) return true;
    }
    return hdfs_.WaitPaused(0);
  }

  // Runs `call(k)` on a thread for k = 1, 2, ..., holding its k-th request while
  // `while_held(k)` runs, until a call makes fewer than k requests. Returns how many calls
  // were held (a request is always let go and the thread joined, whatever failed).
  int HoldEachRequest(const std::function<void(int)>& call,
                      const std::function<void(int)>& while_held) {
    for (int k = 1; k < 50; ++k) {
      hdfs_.PauseAt(k);
      std::atomic<bool> done{false};
      std::thread client([&] {
        call(k);
        done = true;
      });
      const bool paused = PausedBeforeDone(done);
      if (paused) while_held(k);
      hdfs_.Resume();
      client.join();
      if (!paused) return k - 1;
    }
    ADD_FAILURE() << "the call never ended";
    return -1;
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
        ASSERT_TRUE(cur.ok()) << cur.error().ToString();  // never missing, even mid-write
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

// A conditional replace held before each of its requests in turn: meanwhile another client
// reads the object (old or new bytes, never missing) and cannot create it exclusively.
TEST_F(HdfsCommit, AConditionalReplaceNeverLeavesTheObjectMissingBetweenItsRequests) {
  const std::string uri = "hdfs://ns1/root/.rsl-output/lock";
  auto v = Raw()->WriteIf(uri, "v0", "");
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  std::string old_bytes = "v0", new_bytes, etag = *v;
  const int windows = HoldEachRequest(
      [&](int k) {
        new_bytes = "v" + std::to_string(k);
        auto wrote = Raw()->WriteIf(uri, new_bytes, etag);
        ASSERT_TRUE(wrote.ok()) << "paused before request " << k << ": "
                                << wrote.error().ToString();
        EXPECT_EQ(Raw()->ReadTagged(uri)->bytes, new_bytes);
        old_bytes = new_bytes;
        etag = *wrote;
      },
      [&](int k) {
        auto observer = Raw();
        auto read = observer->ReadTagged(uri);
        ASSERT_TRUE(read.ok()) << "before request " << k << ": " << read.error().ToString();
        EXPECT_TRUE(read->bytes == old_bytes || read->bytes == new_bytes) << read->bytes;
        auto intruder = observer->WriteIf(uri, "intruder", "");
        ASSERT_FALSE(intruder.ok()) << "an exclusive create took the object before request " << k;
        EXPECT_EQ(intruder.error().code, codes::kConflict) << intruder.error().ToString();
      });
  EXPECT_GE(windows, 4);  // read, create (namenode, datanode), claim, check, place
  EXPECT_TRUE(Leftovers().empty());
}

// The original symptom: a lease renewal held mid-write, and another controller trying to
// take the lease meanwhile. The lease is live, so the other must find it held, and the
// renewal must succeed, whichever of its requests was held.
TEST_F(HdfsCommit, ALeaseRenewedWhileAnotherControllerTriesToTakeItStaysWithItsHolder) {
  const std::string base = "hdfs://ns1/shared";
  auto publisher = Publisher();
  auto a_store = publisher(FreshDir("renew_a"));
  auto b_store = publisher(FreshDir("renew_b"));
  Env* env = Env::Default();
  auto held = engine::ObjectLease::Acquire(a_store.get(), env, base, "run-a");
  ASSERT_TRUE(held.ok()) << held.error().ToString();
  HoldEachRequest(
      [&](int k) {
        Status renewed = (*held)->Renew(/*force=*/true);
        ASSERT_TRUE(renewed.ok()) << "held before request " << k << ": " << renewed.ToString();
      },
      [&](int k) {
        engine::LeaseRecord holder;
        auto other =
            engine::ObjectLease::TryAcquire(b_store.get(), env, base, "run-b", {}, "", &holder);
        ASSERT_TRUE(other.ok()) << other.error().ToString();
        EXPECT_EQ(*other, nullptr) << "run-b took a live lease before request " << k;
        EXPECT_EQ(holder.run_id, "run-a");
      });
  (*held)->Release();
  EXPECT_TRUE(Leftovers().empty());
}

// A claim left by a writer that died between claiming and placing: others wait while it is
// young (its holder renames it in milliseconds) and break it once the namenode dates it
// older than kClaimAbandonedMs.
TEST_F(HdfsCommit, AClaimIsWaitedForWhileLiveAndBrokenOnceAbandoned) {
  const std::string uri = "hdfs://ns1/root/obj";
  const std::string claim = "hdfs://ns1/root/.obj.rsl-claim";
  auto hdfs = Raw();
  auto v1 = hdfs->WriteIf(uri, "one", "");
  ASSERT_TRUE(v1.ok());
  // A live claim, released by its holder 300 ms later: the write waits for it, then goes on.
  ASSERT_TRUE(hdfs->Write(claim, "theirs").ok());
  std::thread holder([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_TRUE(Raw()->Delete(claim).ok());
  });
  const auto start = std::chrono::steady_clock::now();
  auto v2 = hdfs->WriteIf(uri, "two", *v1);
  const auto waited = std::chrono::steady_clock::now() - start;
  holder.join();
  ASSERT_TRUE(v2.ok()) << v2.error().ToString();
  EXPECT_GE(waited, std::chrono::milliseconds(300));
  EXPECT_EQ(hdfs->ReadTagged(uri)->bytes, "two");
  // An abandoned claim: dated a minute before the next write's own file.
  ASSERT_TRUE(hdfs->Write(claim, "dead").ok());
  hdfs_.AdvanceClockMs(60'000);
  auto v3 = hdfs->WriteIf(uri, "three", *v2);
  ASSERT_TRUE(v3.ok()) << v3.error().ToString();
  EXPECT_EQ(hdfs->ReadTagged(uri)->bytes, "three");
  // A stale tag still loses to the version there, claim or not.
  auto stale = hdfs->WriteIf(uri, "four", *v2);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, codes::kConflict);
  EXPECT_TRUE(Leftovers().empty());
  for (const auto& f : hdfs_.Files()) EXPECT_EQ(f.find("abandoned"), std::string::npos) << f;
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
