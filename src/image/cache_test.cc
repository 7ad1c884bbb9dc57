// The image cache against a real registry (docker-registry on loopback, images pushed by
// skopeo) with the real skopeo and umoci: one unpack per digest, the size bound, LRU eviction
// that never takes a bundle in use, prune.
#include "image/cache.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "base/file.h"
#include "image/testing.h"

namespace rsl::image {
namespace {

using testing::LocalRegistry;

class BundleCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(registry_.host().empty()) << registry_.Log(); }

  // An image of about 2 MB (busybox) with `marker`; returns its pinned reference.
  std::string Push(const std::string& tag, const std::string& marker, std::string* digest) {
    std::string why;
    *digest = registry_.Push("volc/cache", tag, "linux/amd64",
                             {"bin/busybox=@/bin/busybox", "etc/rsl-image-marker=" + marker}, &why);
    EXPECT_FALSE(digest->empty()) << why;
    return registry_.host() + "/volc/cache@" + *digest;
  }

  LocalRegistry registry_;
  rsl::testing::TempDir state_{"rsl-cache"};
};

TEST_F(BundleCacheTest, PullsOnceUnpacksWholeAndKeepsTheImagesFiles) {
  std::string digest;
  std::string pinned = Push("a", "image-a", &digest);
  BundleCache cache(state_.path());
  std::vector<Result<CachedImage>> got;
  std::vector<std::thread> threads;
  std::mutex mu;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      auto r = cache.Ensure(pinned, digest, true);
      std::lock_guard<std::mutex> lock(mu);
      got.push_back(std::move(r));
    });
  }
  for (auto& t : threads) t.join();
  for (auto& r : got) {
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    EXPECT_EQ(r->digest, digest);
    EXPECT_EQ(r->dir, cache.dir() + "/" + digest.substr(7));
    close(r->in_use_fd);
  }
  auto marker = ReadFile(got[0]->rootfs + "/etc/rsl-image-marker");
  ASSERT_TRUE(marker.ok());
  EXPECT_EQ(*marker, "image-a");
  EXPECT_EQ(access((got[0]->rootfs + "/bin/busybox").c_str(), X_OK), 0);
  EXPECT_GT(got[0]->bytes, 1000000);
  auto list = cache.List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);  // one bundle; no temporary directory left beside it
  EXPECT_FALSE((*list)[0].in_use);
  EXPECT_FALSE(PathExists(cache.dir() + "/.tmp-" + digest.substr(7)));
}

TEST_F(BundleCacheTest, EvictionKeepsTheBoundAndNeverTakesABundleInUse) {
  std::string da, db, dc;
  std::string a = Push("a", "image-a", &da);
  std::string b = Push("b", "image-b", &db);
  std::string c = Push("c", "image-c", &dc);
  // Room for one image and a half.
  BundleCache probe(state_.path());
  auto first = probe.Ensure(a, da, true);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  int64_t one = first->bytes;
  BundleCache cache(state_.path(), one + one / 2);

  // a is in use (its lock held): pulling b goes over the bound rather than evict a.
  auto second = cache.Ensure(b, db, true);
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  close(second->in_use_fd);
  auto list = cache.List();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 2u);

  // a released: pulling c evicts least recently used bundles not in use (a, then b) until
  // the bound holds, with c alone.
  close(first->in_use_fd);
  auto third = cache.Ensure(c, dc, true);
  ASSERT_TRUE(third.ok()) << third.error().ToString();
  list = cache.List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].digest, dc);
  EXPECT_TRUE((*list)[0].in_use);

  // prune --all never takes c while it is in use; then it does.
  auto pruned = cache.Prune(0);
  ASSERT_TRUE(pruned.ok());
  EXPECT_TRUE(pruned->removed.empty());
  EXPECT_EQ(pruned->kept_bytes, (*list)[0].bytes);
  close(third->in_use_fd);
  pruned = cache.Prune(0);
  ASSERT_TRUE(pruned.ok());
  ASSERT_EQ(pruned->removed.size(), 1u);
  EXPECT_EQ(pruned->removed[0].digest, dc);
  EXPECT_EQ(pruned->kept_bytes, 0);
  list = cache.List();
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty());
}

// An image whose layer is zstd-compressed (umoci 0.4.7 unpacks only tar and gzip: skopeo
// recompresses it to gzip in the local layout) unpacks with its files.
TEST_F(BundleCacheTest, AZstdLayerIsUnpacked) {
  std::string why;
  std::string digest = registry_.Push(
      "volc/zstd", "v1", "linux/amd64",
      {"bin/busybox=@/bin/busybox", "etc/rsl-image-marker=zstd-image"}, &why, "zstd");
  ASSERT_FALSE(digest.empty()) << why;
  std::string manifest;
  testing::RunCommand({"skopeo", "inspect", "--raw", "--tls-verify=false",
                       "docker://" + registry_.host() + "/volc/zstd@" + digest},
                      state_.Sub("inspect.out"), &manifest);
  ASSERT_NE(manifest.find("tar+zstd"), std::string::npos) << manifest;
  BundleCache cache(state_.path());
  auto got = cache.Ensure(registry_.host() + "/volc/zstd@" + digest, digest, true);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  close(got->in_use_fd);
  auto marker = ReadFile(got->rootfs + "/etc/rsl-image-marker");
  ASSERT_TRUE(marker.ok());
  EXPECT_EQ(*marker, "zstd-image");
  EXPECT_EQ(access((got->rootfs + "/bin/busybox").c_str(), X_OK), 0);
}

TEST_F(BundleCacheTest, AMissingDigestIsImagePullFailed) {
  BundleCache cache(state_.path());
  std::string digest = "sha256:" + std::string(64, 'a');
  auto r = cache.Ensure(registry_.host() + "/volc/none@" + digest, digest, true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "IMAGE_PULL_FAILED");
  EXPECT_NE(r.error().message.find("skopeo copy failed"), std::string::npos) << r.error().message;
}

// The command lines of live processes (NUL-separated argv) that contain `part`.
std::vector<std::string> CmdlinesWith(const std::string& part) {
  std::vector<std::string> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (atoi(e->d_name) <= 0) continue;
    std::string cmd = testing::ReadAll("/proc/" + std::string(e->d_name) + "/cmdline");
    if (cmd.find(part) != std::string::npos) out.push_back(cmd);
  }
  closedir(d);
  return out;
}

// A registry that wants a login (Basic, htpasswd): without credentials or with wrong ones the
// pull is IMAGE_PULL_FAILED without the password; with them skopeo gets an authfile, never a
// command line argument, and the authfile is gone afterwards.
TEST(BundleCacheAuthTest, CredentialsGoInAnAuthfileNeverOnACommandLine) {
  LocalRegistry locked(LocalRegistry::Auth::kBasic);
  ASSERT_FALSE(locked.host().empty()) << locked.Log();
  std::string why;
  std::string digest =
      locked.Push("volc/private", "v1", "linux/amd64",
                  {"bin/busybox=@/bin/busybox", "etc/rsl-image-marker=private"}, &why);
  ASSERT_FALSE(digest.empty()) << why;
  std::string pinned = locked.host() + "/volc/private@" + digest;
  rsl::testing::TempDir state("rsl-cache-auth");
  BundleCache cache(state.path());

  auto none = cache.Ensure(pinned, digest, true);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, "IMAGE_PULL_FAILED");
  EXPECT_NE(none.error().hint.find("imagePullSecrets"), std::string::npos) << none.error().hint;

  Credentials wrong{LocalRegistry::kUser, "wrong-pw-4711"};
  auto refused = cache.Ensure(pinned, digest, true, &wrong);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, "IMAGE_PULL_FAILED");
  EXPECT_EQ(refused.error().ToString().find("wrong-pw-4711"), std::string::npos)
      << refused.error().ToString();
  EXPECT_FALSE(cache.Has(digest));

  // While the pull runs, no process shows the password; skopeo is seen with the authfile.
  Credentials right{LocalRegistry::kUser, LocalRegistry::kPassword};
  std::atomic<bool> done{false};
  std::atomic<int> leaked{0}, seen{0};
  std::thread watch([&] {
    while (!done) {
      leaked += int(CmdlinesWith(LocalRegistry::kPassword).size());
      for (const auto& cmd : CmdlinesWith("--src-authfile")) {
        if (cmd.find("skopeo") != std::string::npos) ++seen;
      }
      usleep(2000);
    }
  });
  auto got = cache.Ensure(pinned, digest, true, &right);
  done = true;
  watch.join();
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  close(got->in_use_fd);
  EXPECT_TRUE(got->pulled);
  EXPECT_EQ(leaked.load(), 0);
  EXPECT_GT(seen.load(), 0) << "the watcher never saw skopeo run";
  auto marker = ReadFile(got->rootfs + "/etc/rsl-image-marker");
  ASSERT_TRUE(marker.ok());
  EXPECT_EQ(*marker, "private");
  std::string found;
  testing::RunCommand({"find", state.path(), "-name", "auth.json"}, state.Sub("find.out"), &found);
  EXPECT_EQ(found, "");
  testing::RunCommand({"grep", "-rl", LocalRegistry::kPassword, state.path() + "/images"},
                      state.Sub("grep.out"), &found);
  EXPECT_EQ(found, "");
}

}  // namespace
}  // namespace rsl::image
