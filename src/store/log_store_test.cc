// The transition log (store/transition_log.h), its record form (store/batch_codec.h) and the
// store that writes through it (StoreOptions::transition_log), killed at random points too.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "base/codes.h"
#include "base/file.h"
#include "base/sqlite.h"
#include "base/test_util.h"
#include "store/batch_codec.h"
#include "store/failing_store.h"
#include "store/log_store.h"
#include "store/sqlite_schema.h"
#include "store/store.h"
#include "store/store_test_util.h"
#include "store/transition_log.h"

namespace rsl::store {
namespace {

StoreOptions LogOptions() {
  StoreOptions o;
  o.transition_log = true;
  return o;
}

// A submission's batch (store_test_util.h) without its step: the run's steps are the turns'.
Batch Submission(const std::string& id) {
  Batch b = testing::NewRunBatch(id, "fraud");
  b.steps.clear();
  b.events[0].reason = "Submitted";
  return b;
}

// One turn of a run: step `n` in `phase`, its attempt, an event.
Batch Turn(const std::string& run_id, int n, spec::StepPhase phase, std::string launch = "") {
  Batch b;
  Step s;
  s.run_id = run_id;
  s.name = "s" + std::to_string(n);
  s.index = n;
  s.phase = phase;
  s.attempts = 1;
  s.attempt_id = run_id + "/" + s.name + "/1";
  s.message = "turn of " + s.name + " \xe4\xb8\xad";  // any bytes
  s.wall_ms = -7;
  b.steps.push_back(s);
  Attempt a;
  a.id = s.attempt_id;
  a.run_id = run_id;
  a.step = s.name;
  a.launch_json = std::move(launch);
  a.state = phase == spec::StepPhase::kRunning ? spec::AttemptPhase::kLaunching
                                               : spec::AttemptPhase::kExited;
  b.attempts.push_back(a);
  Event e;
  e.run_id = run_id;
  e.step = s.name;
  e.reason = spec::Name(phase);
  e.time = 1234567890123;
  b.events.push_back(e);
  return b;
}

TEST(BatchCodecTest, RoundTripsEveryField) {
  Batch b = Turn("run-1", 3, spec::StepPhase::kSucceeded, "{\"argv\":[\"true\"]}");
  rsl::store::Run r;
  r.id = "run-1", r.workload_id = "wl-1", r.name = "n", r.namespace_ = "ns";
  r.phase = spec::RunPhase::kTimedOut, r.failure_code = "X", r.failure_message = "m";
  r.created_at = 1, r.started_at = 2, r.finished_at = 3, r.run_dir = "/d";
  r.admission_report_json = "{}", r.commit_state = kCommitCommitted, r.committed_uri = "s3://b";
  b.runs.push_back(r);
  b.events[0].seq = 99;
  b.artifacts.push_back(Artifact{"run-1", "s3", "file:///o", 42, "model", "sha256:ab"});
  b.lineage.push_back(LineageEdge{"run-1", "a", "b", "input", "{\"x\":1}"});
  std::string enc;
  EncodeBatchRows(b, &enc);
  Batch out;
  ASSERT_TRUE(DecodeBatchRows(enc, &out).ok());
  ASSERT_EQ(out.runs.size(), 1u);
  EXPECT_EQ(out.runs[0].phase, spec::RunPhase::kTimedOut);
  EXPECT_EQ(out.runs[0].committed_uri, "s3://b");
  EXPECT_EQ(out.runs[0].finished_at, 3);
  ASSERT_EQ(out.steps.size(), 1u);
  EXPECT_EQ(out.steps[0].message, b.steps[0].message);
  EXPECT_EQ(out.steps[0].wall_ms, -7);
  EXPECT_EQ(out.steps[0].index, 3);
  EXPECT_EQ(out.steps[0].phase, spec::StepPhase::kSucceeded);
  EXPECT_EQ(out.attempts[0].launch_json, "{\"argv\":[\"true\"]}");
  EXPECT_EQ(out.attempts[0].state, spec::AttemptPhase::kExited);
  EXPECT_EQ(out.events[0].seq, 99);
  EXPECT_EQ(out.events[0].time, 1234567890123);
  EXPECT_EQ(out.artifacts[0].bytes, 42);
  EXPECT_EQ(out.lineage[0].from_json, "{\"x\":1}");
}

// The fuzzer's seed (fuzz/corpus/store_batch_fuzzer/turn.bin, written by hand from the form's
// description) is a record this code reads: the form is what the header says.
TEST(BatchCodecTest, TheFuzzersSeedIsARecord) {
  auto seed = ReadFile(std::string(RSL_SOURCE_DIR) + "/fuzz/corpus/store_batch_fuzzer/turn.bin");
  ASSERT_TRUE(seed.ok());
  Batch b;
  Status s = DecodeBatchRows(*seed, &b);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(b.steps.size(), 1u);
  EXPECT_EQ(b.steps[0].metrics_json, "{\"auc\":0.9}");
  EXPECT_EQ(b.attempts[0].state, spec::AttemptPhase::kExited);
  EXPECT_EQ(b.events[0].seq, 7);
  EXPECT_EQ(b.lineage[0].from, "s3://in");
}

TEST(BatchCodecTest, EveryTruncationAndFlipIsAnErrorOrARecordNeverACrash) {
  Batch b = Turn("run-1", 1, spec::StepPhase::kRunning, "{}");
  std::string enc;
  EncodeBatchRows(b, &enc);
  for (size_t n = 0; n < enc.size(); ++n) {
    Batch out;
    Status s = DecodeBatchRows(std::string_view(enc).substr(0, n), &out);
    EXPECT_FALSE(s.ok()) << n;
    EXPECT_EQ(s.error().code, codes::kIoError);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string bad = enc;
    bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
    Batch out;
    (void)DecodeBatchRows(bad, &out);  // either; the sanitizers check the rest
  }
}

TEST(TransitionLogTest, ReplaysWhatWasAppendedAndCutsATornTail) {
  rsl::testing::TempDir tmp("tlog_replay");
  std::string dir = tmp.Sub("log");
  TransitionLog::Options o;
  o.segment_bytes = 64;  // a segment every couple of records
  {
    auto log =
        TransitionLog::Open(dir, o, 0, [](uint64_t, std::string_view) { return Status::Ok(); });
    ASSERT_TRUE(log.ok()) << log.error().ToString();
    ASSERT_TRUE((*log)->Reset(0).ok());
    for (int i = 1; i <= 10; ++i) {
      auto lsn = (*log)->Append("record " + std::to_string(i) + std::string(30, 'x'));
      ASSERT_TRUE(lsn.ok());
      EXPECT_EQ(*lsn, uint64_t(i));
    }
  }
  // The last segment gets half a record more: a writer killed mid-append.
  std::vector<std::string> segments;
  for (const auto& e : std::filesystem::directory_iterator(dir)) segments.push_back(e.path());
  std::sort(segments.begin(), segments.end());
  ASSERT_GT(segments.size(), 3u);
  {
    int fd = ::open(segments.back().c_str(), O_WRONLY | O_APPEND);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "\x20\0\0\0garbage", 11), 11);
    ::close(fd);
  }
  std::vector<std::string> seen;
  auto log = TransitionLog::Open(dir, o, 4, [&](uint64_t lsn, std::string_view p) {
    seen.push_back(std::to_string(lsn) + ":" + std::string(p.substr(0, p.find('x'))));
    return Status::Ok();
  });
  ASSERT_TRUE(log.ok()) << log.error().ToString();
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen.front(), "5:record 5");
  EXPECT_EQ(seen.back(), "10:record 10");
  EXPECT_EQ((*log)->last_lsn(), 10u);
}

TEST(TransitionLogTest, DamageBeforeTheLastSegmentIsAnError) {
  rsl::testing::TempDir tmp("tlog_damage");
  std::string dir = tmp.Sub("log");
  TransitionLog::Options o;
  o.segment_bytes = 64;
  auto none = [](uint64_t, std::string_view) { return Status::Ok(); };
  {
    auto log = TransitionLog::Open(dir, o, 0, none);
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE((*log)->Reset(0).ok());
    for (int i = 1; i <= 6; ++i) ASSERT_TRUE((*log)->Append(std::string(40, 'a' + i)).ok());
  }
  std::vector<std::string> segments;
  for (const auto& e : std::filesystem::directory_iterator(dir)) segments.push_back(e.path());
  std::sort(segments.begin(), segments.end());
  ASSERT_GE(segments.size(), 3u);
  auto data = ReadFile(segments[1]);
  ASSERT_TRUE(data.ok());
  std::string bad = *data;
  bad[bad.size() - 3] ^= 1;  // a payload byte: the CRC no longer matches
  ASSERT_TRUE(WriteFileAtomic(segments[1], bad).ok());
  auto log = TransitionLog::Open(dir, o, 0, none);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.error().code, codes::kIoError);
  EXPECT_NE(log.error().message.find("damaged"), std::string::npos);
  // A missing segment is a gap: an error too, never a silent skip.
  ASSERT_TRUE(WriteFileAtomic(segments[1], *data).ok());
  ASSERT_EQ(::unlink(segments[1].c_str()), 0);
  auto gap = TransitionLog::Open(dir, o, 0, none);
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.error().message.find("missing"), std::string::npos);
}

TEST(LogStoreTest, ReadsSeeWhatWasAcknowledgedAndRowsAreWrittenOnce) {
  rsl::testing::TempDir tmp("logstore_reads");
  std::string dir = tmp.Sub("state");
  auto store = OpenSqliteStore(dir, LogOptions());
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  Batch sub = Submission("wl-20240615-00000001");
  ASSERT_TRUE((*store)->Apply(&sub).ok());
  EXPECT_EQ(sub.versions[0].version, 1);
  int64_t first = sub.events[0].seq;
  EXPECT_GT(first, 0);
  std::string run = RunIdFor("wl-20240615-00000001");
  for (int n = 0; n < 50; ++n) {
    Batch t1 = Turn(run, n, spec::StepPhase::kRunning, "{\"n\":" + std::to_string(n) + "}");
    ASSERT_TRUE((*store)->Apply(&t1).ok());
    EXPECT_EQ(t1.events[0].seq, first + 1 + 2 * n);  // numbered at once, in order
    EXPECT_EQ(t1.events[0].reason, "RUNNING");       // the caller keeps its events
    Batch t2 = Turn(run, n, spec::StepPhase::kSucceeded);
    ASSERT_TRUE((*store)->Apply(&t2).ok());
  }
  EXPECT_EQ((*store)->LastEventSeq(), first + 100);
  auto steps = (*store)->ListSteps(run);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 50u);
  for (const Step& s : *steps) EXPECT_EQ(s.phase, spec::StepPhase::kSucceeded) << s.name;
  auto attempts = (*store)->ListAttempts(run);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 50u);
  // The exit's row had no launch record: the launch's is kept, unless the indexer wrote
  // both in one transaction (then none, AnAttemptEndedBesideItsLaunchGetsNoLaunchRecord).
  for (const Attempt& a : *attempts) {
    if (!a.launch_json.empty()) {
      EXPECT_EQ(a.launch_json, "{\"n\":" + a.step.substr(1) + "}") << a.id;
    }
    EXPECT_EQ(a.state, spec::AttemptPhase::kExited) << a.id;
  }
  auto events = (*store)->ListEvents(run, 0);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 101u);
  for (size_t i = 0; i < events->size(); ++i) EXPECT_EQ((*events)[i].seq, first + int64_t(i));
  // A second submission is numbered after the records, and so on after a reopen.
  Batch sub2 = Submission("wl-20240615-00000002");
  ASSERT_TRUE((*store)->Apply(&sub2).ok());
  EXPECT_EQ(sub2.versions[0].version, 2);
  EXPECT_EQ(sub2.events[0].seq, first + 101);
  store->reset();
  auto again = OpenSqliteStore(dir, LogOptions());
  ASSERT_TRUE(again.ok());
  Batch t = Turn(run, 60, spec::StepPhase::kRunning);
  ASSERT_TRUE((*again)->Apply(&t).ok());
  EXPECT_EQ(t.events[0].seq, first + 102);
  // A clean close leaves an empty log.
  auto log_files = std::distance(std::filesystem::directory_iterator(dir + "/translog"), {});
  EXPECT_EQ(log_files, 1);
}

TEST(LogStoreTest, AnotherProcessCannotWriteWhileTheLogOwnsTheStore) {
  rsl::testing::TempDir tmp("logstore_owner");
  std::string dir = tmp.Sub("state");
  auto owner = OpenSqliteStore(dir, LogOptions());
  ASSERT_TRUE(owner.ok());
  auto direct = OpenSqliteStore(dir);  // opening and reading are allowed
  ASSERT_TRUE(direct.ok());
  Batch sub = Submission("wl-20240615-00000003");
  Status s = (*direct)->Apply(&sub);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, codes::kConflict);
  auto second = OpenSqliteStore(dir, LogOptions());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, codes::kConflict);
  owner->reset();
  Batch again = Submission("wl-20240615-00000003");
  EXPECT_TRUE((*direct)->Apply(&again).ok());
}

// A log store whose indexer writes through a FailingStore (`*failing`) over SQLite.
Result<std::unique_ptr<Store>> OpenOverFailingSqlite(const std::string& dir,
                                                     FailingStore** failing) {
  return OpenLogStoreWrapped(dir, LogOptions(), [failing](Store* sqlite) {
    auto f = std::make_unique<FailingStore>(sqlite);
    *failing = f.get();
    return std::unique_ptr<Store>(std::move(f));
  });
}

// Waits (5 s at most) until `failing` has failed `n` Applies.
void WaitForFailures(FailingStore* failing, int n) {
  for (int i = 0; i < 500 && failing->failures() < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// SQLite refuses the log's rows (a full disk): the engine's turns are still acknowledged
// (they are in the log), a submission fails at once instead of waiting behind them, and once
// SQLite takes writes again the indexer catches up and every read sees every turn. Closed
// while SQLite still refuses, the records wait in the log for the next open.
TEST(LogStoreTest, RowsSQLiteRefusesWaitInTheLogUntilItTakesThemAgain) {
  rsl::testing::TempDir tmp("logstore_refused");
  std::string dir = tmp.Sub("state");
  std::string run = RunIdFor("wl-20240615-000000b1");
  {
    FailingStore* failing = nullptr;
    auto store = OpenOverFailingSqlite(dir, &failing);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    Batch sub = Submission("wl-20240615-000000b1");
    ASSERT_TRUE((*store)->Apply(&sub).ok());
    failing->FailNthApply(1, /*sticky=*/true);
    for (int n = 0; n < 5; ++n) {
      Batch t = Turn(run, n, spec::StepPhase::kRunning);
      ASSERT_TRUE((*store)->Apply(&t).ok()) << n;
    }
    WaitForFailures(failing, 2);
    ASSERT_GE(failing->failures(), 2);  // retried
    Batch refused = Submission("wl-20240615-000000b2");
    Status s = (*store)->Apply(&refused);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, codes::kIoError);
    EXPECT_EQ(refused.events[0].seq, 0);
    failing->Heal();
    auto steps = (*store)->ListSteps(run);
    ASSERT_TRUE(steps.ok()) << steps.error().ToString();
    EXPECT_EQ(steps->size(), 5u);
    Batch sub3 = Submission("wl-20240615-000000b3");
    EXPECT_TRUE((*store)->Apply(&sub3).ok());
    // Refused again, and closed so.
    failing->FailNthApply(1, /*sticky=*/true);
    for (int n = 5; n < 8; ++n) {
      Batch t = Turn(run, n, spec::StepPhase::kRunning);
      ASSERT_TRUE((*store)->Apply(&t).ok()) << n;
    }
  }
  auto store = OpenSqliteStore(dir, LogOptions());
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  auto steps = (*store)->ListSteps(run);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(steps->size(), 8u);
}

// Only recovery reads a launch record, for an attempt still running: the indexer writes none
// for an attempt whose exit it writes in the same transaction. SQLite refuses the first
// record's write until the next three are queued, so that they go in together.
TEST(LogStoreTest, AnAttemptEndedBesideItsLaunchGetsNoLaunchRecord) {
  rsl::testing::TempDir tmp("logstore_launches");
  std::string dir = tmp.Sub("state");
  std::string run = RunIdFor("wl-20240615-000000c1");
  FailingStore* failing = nullptr;
  auto store = OpenOverFailingSqlite(dir, &failing);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  Batch sub = Submission("wl-20240615-000000c1");
  ASSERT_TRUE((*store)->Apply(&sub).ok());
  failing->FailNthApply(1, /*sticky=*/true);
  Batch held = Turn(run, 0, spec::StepPhase::kRunning, "{\"n\":0}");
  ASSERT_TRUE((*store)->Apply(&held).ok());
  WaitForFailures(failing, 1);
  ASSERT_GE(failing->failures(), 1);  // the indexer holds s0's record alone, retrying it
  Batch l1 = Turn(run, 1, spec::StepPhase::kRunning, "{\"n\":1}");
  Batch l2 = Turn(run, 2, spec::StepPhase::kRunning, "{\"n\":2}");
  Batch e1 = Turn(run, 1, spec::StepPhase::kSucceeded);
  for (Batch* b : {&l1, &l2, &e1}) ASSERT_TRUE((*store)->Apply(b).ok());
  failing->Heal();
  auto attempts = (*store)->ListAttempts(run);
  ASSERT_TRUE(attempts.ok()) << attempts.error().ToString();
  std::map<std::string, Attempt> by_step;
  for (const Attempt& a : *attempts) by_step[a.step] = a;
  ASSERT_EQ(by_step.size(), 3u);
  EXPECT_EQ(by_step["s0"].launch_json, "{\"n\":0}");  // written alone, still running
  EXPECT_EQ(by_step["s1"].state, spec::AttemptPhase::kExited);
  EXPECT_EQ(by_step["s1"].launch_json, "");           // launched and ended in one transaction
  EXPECT_EQ(by_step["s2"].launch_json, "{\"n\":2}");  // beside it, still running
  EXPECT_EQ(by_step["s2"].state, spec::AttemptPhase::kLaunching);
  auto steps = (*store)->ListSteps(run);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(steps->size(), 3u);
}

// SQLite's default VFS, wrapped to count the fsyncs of the writer's connection: an xSync of a
// WAL file through a handle that wrote frames to it (a checkpoint on another connection only
// reads the WAL before it syncs it, and a reader never syncs), except the one after a new
// WAL header (SQLite syncs a restarted WAL's header even with synchronous=NORMAL).
class CountingVfs {
 public:
  static void Install() {
    if (!real_) {
      real_ = sqlite3_vfs_find(nullptr);
      vfs_ = *real_;
      vfs_.zName = "rsl-counting";
      vfs_.szOsFile = static_cast<int>(sizeof(File)) + real_->szOsFile;
      vfs_.xOpen = Open;
    }
    sqlite3_vfs_register(&vfs_, /*makeDflt=*/1);
  }
  static void Uninstall() { sqlite3_vfs_register(real_, /*makeDflt=*/1); }
  static int commit_syncs() { return syncs_.load(); }

 private:
  struct File {
    sqlite3_file base;
    bool wal = false;
    bool wrote = false;
    bool header = false;  // the last write was a WAL header
    sqlite3_file* real() { return reinterpret_cast<sqlite3_file*>(this + 1); }
  };
  static File* F(sqlite3_file* f) { return reinterpret_cast<File*>(f); }
  static sqlite3_file* R(sqlite3_file* f) { return F(f)->real(); }
  static int Open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out) {
    File* file = F(f);
    file->wal = (flags & SQLITE_OPEN_WAL) != 0;
    file->wrote = file->header = false;
    int rc = real_->xOpen(real_, name, file->real(), flags, out);
    f->pMethods = file->real()->pMethods ? &kMethods : nullptr;
    return rc;
  }
  static int Close(sqlite3_file* f) { return R(f)->pMethods->xClose(R(f)); }
  static int Read(sqlite3_file* f, void* b, int n, sqlite3_int64 o) {
    return R(f)->pMethods->xRead(R(f), b, n, o);
  }
  static int Write(sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
    F(f)->wrote = true;
    F(f)->header = F(f)->wal && o == 0;
    return R(f)->pMethods->xWrite(R(f), b, n, o);
  }
  static int Truncate(sqlite3_file* f, sqlite3_int64 n) {
    return R(f)->pMethods->xTruncate(R(f), n);
  }
  static int Sync(sqlite3_file* f, int flags) {
    // The sync after a restarted WAL's new header is SQLite's in any mode, not a commit's.
    if (F(f)->wal && F(f)->wrote && !F(f)->header) ++syncs_;
    F(f)->header = false;
    return R(f)->pMethods->xSync(R(f), flags);
  }
  static int FileSize(sqlite3_file* f, sqlite3_int64* n) {
    return R(f)->pMethods->xFileSize(R(f), n);
  }
  static int Lock(sqlite3_file* f, int l) { return R(f)->pMethods->xLock(R(f), l); }
  static int Unlock(sqlite3_file* f, int l) { return R(f)->pMethods->xUnlock(R(f), l); }
  static int Reserved(sqlite3_file* f, int* r) {
    return R(f)->pMethods->xCheckReservedLock(R(f), r);
  }
  static int Control(sqlite3_file* f, int op, void* a) {
    return R(f)->pMethods->xFileControl(R(f), op, a);
  }
  static int Sector(sqlite3_file* f) { return R(f)->pMethods->xSectorSize(R(f)); }
  static int Device(sqlite3_file* f) { return R(f)->pMethods->xDeviceCharacteristics(R(f)); }
  static int ShmMap(sqlite3_file* f, int i, int sz, int extend, void volatile** p) {
    return R(f)->pMethods->xShmMap(R(f), i, sz, extend, p);
  }
  static int ShmLock(sqlite3_file* f, int off, int n, int flags) {
    return R(f)->pMethods->xShmLock(R(f), off, n, flags);
  }
  static void ShmBarrier(sqlite3_file* f) { R(f)->pMethods->xShmBarrier(R(f)); }
  static int ShmUnmap(sqlite3_file* f, int del) { return R(f)->pMethods->xShmUnmap(R(f), del); }
  static int Fetch(sqlite3_file* f, sqlite3_int64 o, int n, void** p) {
    return R(f)->pMethods->xFetch(R(f), o, n, p);
  }
  static int Unfetch(sqlite3_file* f, sqlite3_int64 o, void* p) {
    return R(f)->pMethods->xUnfetch(R(f), o, p);
  }
  static constexpr sqlite3_io_methods kMethods = {
      3,       Close,  Read,   Write,  Truncate, Sync,       FileSize, Lock,  Unlock, Reserved,
      Control, Sector, Device, ShmMap, ShmLock,  ShmBarrier, ShmUnmap, Fetch, Unfetch};
  static inline sqlite3_vfs* real_ = nullptr;
  static inline sqlite3_vfs vfs_{};
  static inline std::atomic<int> syncs_{0};
};

size_t LogFiles(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/translog")) {
    if (e.path().extension() == ".tlog") ++n;
  }
  return n;
}

// The indexer's commits write rows the log holds: SQLite does not fsync them. It does a
// submission's (not logged), a commit that writes of other components ride on, and one
// before a clean close or an open empties the log.
TEST(LogStoreTest, SQLiteSyncsOnlyWhatTheLogDoesNotHold) {
  CountingVfs::Install();
  rsl::testing::TempDir tmp("logstore_syncs");
  std::string dir = tmp.Sub("state");
  std::string run = RunIdFor("wl-20240615-000000d1");
  auto store = OpenSqliteStore(dir, LogOptions());
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  auto shared = SharedDb::ForStateDir(dir, "store", SqliteStoreMigrations());
  ASSERT_TRUE(shared.ok());  // held: the connection outlives the store, as in a controller
  int before = CountingVfs::commit_syncs();
  Batch sub = Submission("wl-20240615-000000d1");
  ASSERT_TRUE((*store)->Apply(&sub).ok());
  int submitted = CountingVfs::commit_syncs();
  EXPECT_GT(submitted, before);
  for (int n = 0; n < 20; ++n) {
    Batch t1 = Turn(run, n, spec::StepPhase::kRunning, "{}");
    ASSERT_TRUE((*store)->Apply(&t1).ok());
    Batch t2 = Turn(run, n, spec::StepPhase::kSucceeded);
    ASSERT_TRUE((*store)->Apply(&t2).ok());
  }
  auto steps = (*store)->ListSteps(run);  // waits for the indexer
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(steps->size(), 20u);
  EXPECT_EQ(CountingVfs::commit_syncs(), submitted);
  // A write riding on the next commit is durable with it alone: that one is synced.
  std::atomic<bool> wrote{false};
  {
    std::lock_guard<std::mutex> lock((*shared)->mu());
    (*shared)->WriteWithNextCommit(
        [&](Db* db) {
          wrote = true;
          return db->Exec("CREATE TABLE IF NOT EXISTS sync_probe (x)");
        },
        [](const Error&) {});
  }
  Batch t = Turn(run, 30, spec::StepPhase::kRunning, "{}");
  ASSERT_TRUE((*store)->Apply(&t).ok());
  ASSERT_TRUE((*store)->ListSteps(run).ok());
  EXPECT_TRUE(wrote);
  int rode = CountingVfs::commit_syncs();
  EXPECT_GT(rode, submitted);
  Batch t3 = Turn(run, 31, spec::StepPhase::kRunning, "{}");
  ASSERT_TRUE((*store)->Apply(&t3).ok());
  ASSERT_TRUE((*store)->ListSteps(run).ok());
  EXPECT_EQ(CountingVfs::commit_syncs(), rode);
  store->reset();  // the connection stays open (shared): only the store's own sync counts
  EXPECT_GT(CountingVfs::commit_syncs(), rode);
  EXPECT_EQ(LogFiles(dir), 1u);
  shared->reset();
  // An open, too, syncs before it empties the log (a dead owner's commits may be unsynced).
  int closed = CountingVfs::commit_syncs();
  auto again = OpenSqliteStore(dir, LogOptions());
  ASSERT_TRUE(again.ok());
  EXPECT_GT(CountingVfs::commit_syncs(), closed);
  auto all = (*again)->ListSteps(run);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 22u);
  CountingVfs::Uninstall();
}

// A segment of the log goes only once a synced commit holds its records: every drop is
// such a commit, and the segments do go.
TEST(LogStoreTest, ASegmentGoesOnlyAfterASyncedCommitHoldsIt) {
  CountingVfs::Install();
  rsl::testing::TempDir tmp("logstore_segments");
  std::string dir = tmp.Sub("state");
  std::string run = RunIdFor("wl-20240615-000000d2");
  StoreOptions o = LogOptions();
  o.log_segment_bytes = 1024;
  auto store = OpenSqliteStore(dir, o);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  Batch sub = Submission("wl-20240615-000000d2");
  ASSERT_TRUE((*store)->Apply(&sub).ok());
  int submitted = CountingVfs::commit_syncs();
  for (int n = 0; n < 200; ++n) {
    Batch b = Turn(run, n, spec::StepPhase::kRunning, std::string(200, 'x'));
    ASSERT_TRUE((*store)->Apply(&b).ok());
  }
  ASSERT_TRUE((*store)->ListSteps(run).ok());
  EXPECT_GT(CountingVfs::commit_syncs(), submitted);  // the drops' commits
  // About 70 segments were written (1 KiB each): the one being written is left, and at
  // most one that no commit covered yet.
  EXPECT_LE(LogFiles(dir), 2u);
  store->reset();
  auto again = OpenSqliteStore(dir, o);
  ASSERT_TRUE(again.ok());
  auto steps = (*again)->ListSteps(run);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(steps->size(), 200u);
  CountingVfs::Uninstall();
}

// A child writes turns through the log and reports each acknowledged one on a pipe; it is
// SIGKILLed at a random point. Every turn it reported is in the store once reopened.
TEST(LogStoreTest, NothingAcknowledgedIsLostWhenKilled) {
  std::mt19937 rng(20261207);
  for (int round = 0; round < 8; ++round) {
    rsl::testing::TempDir tmp("logstore_kill");
    std::string dir = tmp.Sub("state");
    std::string run = RunIdFor("wl-20240615-0000000a");
    {
      auto store = OpenSqliteStore(dir, LogOptions());
      ASSERT_TRUE(store.ok());
      Batch sub = Submission("wl-20240615-0000000a");
      ASSERT_TRUE((*store)->Apply(&sub).ok());
    }
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      auto store = OpenSqliteStore(dir, LogOptions());
      if (!store.ok()) ::_exit(3);
      for (int n = 0;; ++n) {
        Batch t = Turn(run, n, spec::StepPhase::kRunning);
        if (!(*store)->Apply(&t).ok()) ::_exit(4);
        if (::write(fds[1], &n, sizeof(n)) != sizeof(n)) ::_exit(5);
      }
    }
    ::close(fds[1]);
    int want = 20 + int(rng() % 400);
    int last = -1, n = 0;
    while (last < want && ::read(fds[0], &n, sizeof(n)) == sizeof(n)) last = n;
    ::kill(pid, SIGKILL);
    while (::read(fds[0], &n, sizeof(n)) == sizeof(n)) last = n;  // acknowledged before death
    ::close(fds[0]);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited " << WEXITSTATUS(status);
    // Reopened with the log, or without it (half the rounds): the records left are applied
    // either way.
    bool with_log = round % 2 == 0;
    auto store = OpenSqliteStore(dir, with_log ? LogOptions() : StoreOptions{});
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    auto steps = (*store)->ListSteps(run);
    ASSERT_TRUE(steps.ok());
    EXPECT_GE(int(steps->size()), last + 1) << "round " << round;
    auto events = (*store)->ListEvents(run, 0);
    ASSERT_TRUE(events.ok());
    EXPECT_GE(int(events->size()), last + 2);
    for (size_t i = 1; i < events->size(); ++i) {
      EXPECT_EQ((*events)[i].seq, (*events)[i - 1].seq + 1);
    }
    // And the store goes on numbering after what survived.
    Batch t = Turn(run, 100000, spec::StepPhase::kRunning);
    ASSERT_TRUE((*store)->Apply(&t).ok());
    EXPECT_EQ(t.events[0].seq, events->back().seq + 1);
  }
}

}  // namespace
}  // namespace rsl::store
