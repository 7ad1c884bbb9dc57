// Two `seedctl run` at once into one file:// output root, as a new user would try it: two
// terminals, one (the same) state directory, 40-step atomic workloads, ten times per policy.
// Every time the root holds exactly one run's complete set under its manifest, and the
// other run is recorded as superseded (replace), refused (refuse), or kept beside it
// (versioned).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

#include "base/codes.h"
#include "base/commit_manifest.h"
#include "base/file.h"
#include "base/strings.h"
#include "store/store.h"

namespace rsl {
namespace {

constexpr int kRepeats = 10;
constexpr int kSteps = 40;

struct Outcome {
  int exit_code = -1;
  std::string output;
};

Outcome Seedctl(const std::string& args) {
  std::string cmd = std::string(RSL_BINARY_DIR) + "/bin/seedctl " + args + " 2>&1";
  Outcome r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string LastLine(const std::string& s) {
  auto lines = Split(std::string(Trim(s)), '\n');
  return lines.empty() ? "" : lines.back();
}

class SharedOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = ::testing::TempDir() + "shared_output_" + name + "_" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }

  // A 40-step atomic workload named `name` into `root` with `policy`. Step s0 takes a
  // second, so the two runs are in flight together; every step writes its run's id.
  std::string Workload(const std::string& name, const std::string& root,
                       const std::string& policy) {
    std::string yaml =
        "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: " + name +
        "\nspec:\n  data:\n    output:\n      uri: file://" + root + "\n      policy: " + policy +
        "\n  pipeline:\n    atomic: true\n    steps:\n";
    for (int i = 0; i < kSteps; ++i) {
      yaml += "      - {name: s" + std::to_string(i) + ", command: [sh, -c, '" +
              (i == 0 ? "sleep 1; " : "") + "echo $RSL_RUN_ID > $RSL_OUTPUT/who']}\n";
    }
    std::string path = dir_ + "/" + name + ".yaml";
    EXPECT_TRUE(WriteFileAtomic(path, yaml).ok());
    return path;
  }

  // Both runs of one repetition, started together.
  std::pair<Outcome, Outcome> RunTwo(const std::string& file) {
    std::string flags = " --state-dir " + dir_ + "/state --no-hooks";
    Outcome first, second;
    std::thread other([&] { first = Seedctl("run -f " + file + flags); });
    second = Seedctl("run -f " + file + flags);
    other.join();
    return {first, second};
  }

  // The runs of workload `name`, from the state directory both shared.
  std::vector<store::Run> Runs(const std::string& name) {
    auto s = store::OpenSqliteStore(dir_ + "/state");
    EXPECT_TRUE(s.ok());
    store_ = std::move(*s);
    auto runs = store_->ListRuns(store::RunFilter{"", name, false, 0});
    EXPECT_TRUE(runs.ok());
    return *runs;
  }

  std::vector<std::string> Reasons(const std::string& run_id) {
    std::vector<std::string> out;
    auto events = store_->ListEvents(run_id, 0);
    for (const auto& e : *events) out.push_back(e.reason + ": " + e.message);
    return out;
  }

  // `dir` holds exactly run `run_id`'s complete set under its manifest.
  void ExpectCompleteSet(const std::string& dir, const std::string& run_id,
                         const std::string& what) {
    auto text = ReadFile(dir + "/_RSL_COMMIT");
    ASSERT_TRUE(text.ok()) << what;
    auto m = ParseCommitManifest(*text);
    ASSERT_TRUE(m.ok()) << what;
    EXPECT_EQ(m->run_id, run_id) << what;
    EXPECT_EQ(m->outputs.size(), size_t(kSteps)) << what;
    for (int i = 0; i < kSteps; ++i) {
      std::string step = "s" + std::to_string(i);
      auto who = ReadFile(dir + "/" + step + "/who");
      ASSERT_TRUE(who.ok()) << what << ": " << step;
      EXPECT_EQ(std::string(Trim(*who)), run_id) << what << ": " << step;
    }
    // Nothing else: no step of the other run, no leftover of a commit.
    size_t entries = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      std::string n = e.path().filename().string();
      ++entries;
      bool step = n.size() > 1 && n[0] == 's' && std::stoi(n.substr(1)) < kSteps;
      EXPECT_TRUE(n == "_RSL_COMMIT" || step) << what << ": " << dir << "/" << n;
    }
    EXPECT_EQ(entries, size_t(kSteps) + 1) << what;
  }

  std::string dir_;
  std::unique_ptr<store::Store> store_;
};

bool Mentions(const std::vector<std::string>& events, const std::string& text) {
  for (const auto& e : events) {
    if (e.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST_F(SharedOutputTest, ReplaceKeepsOneRunsSetAndRecordsTheOtherAsSuperseded) {
  for (int rep = 0; rep < kRepeats; ++rep) {
    std::string what = "repetition " + std::to_string(rep);
    std::string name = "replace-" + std::to_string(rep);
    std::string root = dir_ + "/out-" + name;
    auto [a, b] = RunTwo(Workload(name, root, "replace"));
    for (const Outcome* o : {&a, &b}) {
      EXPECT_EQ(o->exit_code, 0) << what << "\n" << o->output;
      EXPECT_NE(LastLine(o->output).find("SUCCEEDED"), std::string::npos) << o->output;
    }
    auto runs = Runs(name);
    ASSERT_EQ(runs.size(), 2u) << what;
    auto m = ParseCommitManifest(*ReadFile(root + "/_RSL_COMMIT"));
    ASSERT_TRUE(m.ok()) << what;
    const std::string kept = m->run_id;
    const std::string other = runs[0].id == kept ? runs[1].id : runs[0].id;
    ASSERT_TRUE(runs[0].id == kept || runs[1].id == kept) << what;
    ExpectCompleteSet(root, kept, what);
    auto events = Reasons(other);
    EXPECT_TRUE(Mentions(
        events, "OutputSuperseded: the outputs under " + root + " were replaced by run " + kept))
        << what << ": " << Join(events, "\n");
    EXPECT_FALSE(Mentions(Reasons(kept), "OutputSuperseded")) << what;
    EXPECT_TRUE(Mentions(Reasons(kept), "replaced the outputs of run " + other)) << what;
  }
}

TEST_F(SharedOutputTest, RefuseAdmitsOneAndRefusesTheOtherWithOutputConflict) {
  for (int rep = 0; rep < kRepeats; ++rep) {
    std::string what = "repetition " + std::to_string(rep);
    std::string name = "refuse-" + std::to_string(rep);
    std::string root = dir_ + "/out-" + name;
    auto [a, b] = RunTwo(Workload(name, root, "refuse"));
    const Outcome& ok = a.exit_code == 0 ? a : b;
    const Outcome& refused = a.exit_code == 0 ? b : a;
    EXPECT_EQ(ok.exit_code, 0) << what << "\n" << ok.output;
    EXPECT_EQ(refused.exit_code, 1) << what << "\n" << refused.output;
    EXPECT_EQ(LastLine(refused.output), codes::kOutputConflict) << refused.output;
    EXPECT_NE(refused.output.find("is writing to the same output root " + root), std::string::npos)
        << refused.output;
    auto runs = Runs(name);
    ASSERT_EQ(runs.size(), 2u) << what;
    int succeeded = 0;
    std::string kept;
    for (const auto& r : runs) {
      if (r.phase == spec::RunPhase::kSucceeded) {
        ++succeeded;
        kept = r.id;
      } else {
        EXPECT_EQ(r.phase, spec::RunPhase::kRejected) << what;
        EXPECT_EQ(r.failure_code, codes::kOutputConflict) << what;
      }
    }
    EXPECT_EQ(succeeded, 1) << what;
    ExpectCompleteSet(root, kept, what);
  }
}

TEST_F(SharedOutputTest, VersionedKeepsBothRunsAndLatestNamesTheLastCommit) {
  for (int rep = 0; rep < kRepeats; ++rep) {
    std::string what = "repetition " + std::to_string(rep);
    std::string name = "versioned-" + std::to_string(rep);
    std::string root = dir_ + "/out-" + name;
    auto [a, b] = RunTwo(Workload(name, root, "versioned"));
    for (const Outcome* o : {&a, &b}) EXPECT_EQ(o->exit_code, 0) << what << "\n" << o->output;
    auto runs = Runs(name);
    ASSERT_EQ(runs.size(), 2u) << what;
    std::map<std::string, int64_t> committed_at;
    for (const auto& r : runs) {
      ExpectCompleteSet(root + "/" + r.id, r.id, what);
      auto m = ParseCommitManifest(*ReadFile(root + "/" + r.id + "/_RSL_COMMIT"));
      ASSERT_TRUE(m.ok()) << what;
      committed_at[r.id] = m->committed_at;
      EXPECT_FALSE(Mentions(Reasons(r.id), "OutputSuperseded")) << what;
    }
    // `latest` names the run that committed last (commits take turns under the lock).
    std::string latest = std::filesystem::read_symlink(root + "/latest").string();
    ASSERT_EQ(committed_at.count(latest), 1u) << what << ": latest -> " << latest;
    for (const auto& [id, at] : committed_at) EXPECT_LE(at, committed_at[latest]) << what;
  }
}

}  // namespace
}  // namespace rsl
