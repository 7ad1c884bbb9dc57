// The image cache against a real registry (docker-registry on loopback, images pushed by
// skopeo) with the real skopeo and umoci: one unpack per digest, the size bound, LRU eviction
// that never takes a bundle in use, prune.
#include "image/cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

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

TEST_F(BundleCacheTest, AMissingDigestIsImagePullFailed) {
  BundleCache cache(state_.path());
  std::string digest = "sha256:" + std::string(64, 'a');
  auto r = cache.Ensure(registry_.host() + "/volc/none@" + digest, digest, true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "IMAGE_PULL_FAILED");
  EXPECT_NE(r.error().message.find("skopeo copy failed"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace rsl::image
