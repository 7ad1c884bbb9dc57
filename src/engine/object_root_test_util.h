// What the object-store output root's tests share: an object store in memory with S3's
// conditional writes, a workload on it, and an engine over it (object_root_test.cc,
// object_claim_test.cc).
#pragma once

#include "engine/object_root.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "base/codes.h"
#include "base/commit_manifest.h"
#include "base/fake_env.h"
#include "base/file.h"
#include "base/strings.h"
#include "engine/engine.h"
#include "engine/testing.h"
#include "spec/parse.h"

namespace rsl::engine::testing {

// An object store in memory with S3's semantics for what the commit uses: ETags that change
// with every write, create-only and If-Match writes, prefix removal. `fail_writes_to` makes
// every conditional write of that URI fail (an unreachable store). Thread-safe.
class FakeObjectStore : public OutputPublisher {
 public:
  bool Handles(const std::string& uri) override { return uri.rfind("s3://", 0) == 0; }
  bool ConditionalWrites(const std::string& uri) override { return Handles(uri); }

  Status Publish(const std::string& local_dir, const std::string& dest_uri) override {
    if (on_publish) on_publish(dest_uri);
    for (const auto& entry : std::filesystem::recursive_directory_iterator(local_dir)) {
      if (!entry.is_regular_file()) continue;
      std::string rel = entry.path().string().substr(local_dir.size() + 1);
      auto bytes = ReadFile(entry.path().string());
      if (!bytes.ok()) return bytes.status();
      Put(dest_uri + "/" + rel, *bytes);
    }
    Put(dest_uri + "/" + kCommitManifestName, "{}");
    return Status::Ok();
  }

  Result<StoredObject> ReadObject(const std::string& uri) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(uri);
    if (it == objects_.end()) return Error(codes::kNotFound, "no such object").Value(uri);
    return it->second;
  }

  Result<std::string> WriteObjectIf(const std::string& uri, const std::string& bytes,
                                    const std::string& if_match) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (uri == fail_writes_to) {
      return Error(codes::kDataSourceUnreachable, "HTTP 503 for " + uri).Value(uri);
    }
    auto it = objects_.find(uri);
    bool holds = if_match.empty() ? it == objects_.end()
                                  : it != objects_.end() && it->second.etag == if_match;
    if (!holds) return Error(codes::kConflict, "HTTP 412 for " + uri).Value(uri);
    return PutLocked(uri, bytes);
  }

  Result<std::vector<std::string>> ListObjects(const std::string& uri) override {
    if (on_list) {
      auto hook = std::move(on_list);  // once: it may call back into the store
      on_list = nullptr;
      hook();
    }
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [name, o] : objects_) {
      if (name.rfind(uri + "/", 0) == 0) out.push_back(name);
    }
    return out;
  }

  Status Remove(const std::string& uri) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = objects_.begin(); it != objects_.end();) {
      bool below = it->first == uri || it->first.rfind(uri + "/", 0) == 0;
      it = below ? objects_.erase(it) : std::next(it);
    }
    return Status::Ok();
  }

  std::string Put(const std::string& uri, const std::string& bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    return PutLocked(uri, bytes);
  }
  std::map<std::string, std::string> Below(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, std::string> out;
    for (const auto& [uri, o] : objects_) {
      if (uri.rfind(prefix + "/", 0) == 0) out[uri.substr(prefix.size() + 1)] = o.bytes;
    }
    return out;
  }

  std::string fail_writes_to;
  std::function<void(const std::string&)> on_publish;  //!< called before each Publish
  std::function<void()> on_list;  //!< called (once) at the next ListObjects, before it lists

 private:
  std::string PutLocked(const std::string& uri, const std::string& bytes) {
    std::string etag = "\"" + std::to_string(++version_) + "\"";
    objects_[uri] = {bytes, etag};
    return etag;
  }
  std::mutex mu_;
  std::map<std::string, StoredObject> objects_;
  int version_ = 0;
};

inline constexpr char kBase[] = "s3://bucket/models/fraud";

inline spec::Workload Steps(const std::string& uri, const std::string& policy,
                            const std::vector<std::string>& steps) {
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: shared\n"
      "  namespace: risk\nspec:\n  data:\n    output:\n      uri: " +
      uri + "\n      policy: " + policy + "\n  pipeline:\n";
  for (const auto& s : steps) yaml += "    - {name: " + s + ", command: [" + s + "]}\n";
  auto r = spec::ParseWorkload(yaml, "test.yaml");
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].ToString());
  return r.workload;
}

struct Fixture {
  //! `shared`: the object store of another fixture (two controllers, one store).
  explicit Fixture(const std::string& name, std::shared_ptr<FakeObjectStore> shared = nullptr)
      : dir(::testing::TempDir() + "object_root_test_" + name + "_" + std::to_string(getpid())),
        objects(shared ? shared : std::make_shared<FakeObjectStore>()) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    auto s = store::OpenSqliteStore(dir + "/state");
    EXPECT_TRUE(s.ok());
    store = std::move(*s);
    StartEngine();
  }
  void StartEngine() {
    EngineOptions opts;
    opts.state_dir = dir + "/state";
    opts.env = &env;
    Hooks hooks;
    hooks.publisher = objects;
    engine = std::make_unique<Engine>(store.get(), &backend, hooks, opts);
    EXPECT_TRUE(engine->Start().ok());
  }
  //! The engine stops (its runs stay in flight, as when its process is killed) and a new
  //! one recovers them.
  void Restart() {
    engine->Stop(false);
    engine.reset();
    StartEngine();
    EXPECT_TRUE(engine->Recover().ok());
  }
  // Submits `w` and ends its steps successfully, each writing its run id; returns the run.
  store::Run RunToEnd(const spec::Workload& w) {
    auto id = engine->Submit(w, "alice");
    EXPECT_TRUE(id.ok());
    for (size_t i = 0; i < w.pipeline.steps.size(); ++i) {
      auto l = backend.WaitLaunch(++launched);
      EXPECT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/who", l.env.at("RSL_RUN_ID")).ok());
      backend.Succeed(l.attempt_id);
    }
    auto run = engine->Wait(*id, 60'000);
    EXPECT_TRUE(run.ok());
    WaitClaimGone(run->id);
    return *run;
  }
  // Wait may return once the run's end is durable, a moment before its loop turn removes
  // its claim, then its marker: wait for both (one that stays fails the test after a minute).
  void WaitClaimGone(const std::string& run_id) {
    for (int i = 0; i < 60'000; ++i) {
      if (objects->ReadObject(ObjectClaimUri(kBase, run_id)).status().code() == codes::kNotFound &&
          !std::filesystem::exists(dir + "/state/object-claims/" + run_id))
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ADD_FAILURE() << "the claim of " << run_id << " stayed";
  }
  std::vector<store::Event> Events(const std::string& run_id, const std::string& reason) {
    std::vector<store::Event> out;
    auto events = store->ListEvents(run_id, 0);
    for (const auto& e : *events) {
      if (e.reason == reason) out.push_back(e);
    }
    return out;
  }
  // Whether run `run_id` records a `reason` event within 10 s of real time.
  bool WaitForEvent(const std::string& run_id, const std::string& reason) {
    for (int i = 0; i < 10'000; ++i) {
      if (!Events(run_id, reason).empty()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }
  std::string ManifestRun(const std::string& root) {
    auto m = objects->ReadObject(root + "/" + kCommitManifestName);
    if (!m.ok()) return "";
    auto parsed = ParseCommitManifest(m->bytes);
    return parsed.ok() ? parsed->run_id : "";
  }
  std::string dir;
  FakeClockEnv env;
  FakeBackend backend;
  std::shared_ptr<FakeObjectStore> objects;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<Engine> engine;
  size_t launched = 0;
};

}  // namespace rsl::engine::testing
