// The registry client against a real registry (Debian's docker-registry on a free loopback
// port, src/image/testing.h), with images pushed by skopeo from OCI layouts that
// testdata/make_oci_layout.py writes: no auth, Basic auth (htpasswd) and token auth.
#include "image/registry.h"

#include <gtest/gtest.h>

#include "base/codes.h"
#include "image/testing.h"

namespace rsl::image {
namespace {

using testing::LocalRegistry;

Reference Ref(const std::string& s) {
  auto r = ParseReference(s);
  EXPECT_TRUE(r.ok()) << r.error().ToString();
  return r.ok() ? *r : Reference{};
}

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(reg_.host().empty()) << reg_.Log(); }
  std::string Push(const std::string& repo, const std::string& tag, const std::string& platforms) {
    std::string why;
    std::string digest = reg_.Push(repo, tag, platforms, {}, &why);
    EXPECT_FALSE(digest.empty()) << why;
    return digest;
  }
  LocalRegistry reg_;
};

TEST_F(RegistryTest, ResolvesATagToItsManifest) {
  std::string pushed = Push("volc/train", "v1", "linux/amd64");
  RegistryClient client;
  auto img = client.Resolve(Ref(reg_.host() + "/volc/train:v1"));
  ASSERT_TRUE(img.ok()) << img.error().ToString();
  EXPECT_EQ(img->digest, pushed);
  EXPECT_EQ(img->media_type, kOciManifest);
  EXPECT_EQ(img->platform, "linux/amd64");
  EXPECT_TRUE(img->index_digest.empty());
  ASSERT_EQ(img->layers.size(), 1u);
  EXPECT_EQ(img->layers[0].media_type, "application/vnd.oci.image.layer.v1.tar+gzip");
  EXPECT_GT(img->layers[0].size, 0);
  EXPECT_EQ(img->Size(), img->config.size + img->layers[0].size);
  // The layer is what was pushed: its bytes hash to its digest (FetchBlob checks it).
  auto layer = client.FetchBlob(img->reference, img->layers[0].digest);
  ASSERT_TRUE(layer.ok()) << layer.error().ToString();
  EXPECT_EQ(static_cast<int64_t>(layer->size()), img->layers[0].size);

  // The same image by digest, with or without the tag beside it.
  for (const std::string& ref :
       {reg_.host() + "/volc/train@" + pushed, reg_.host() + "/volc/train:v1@" + pushed}) {
    auto by_digest = client.Resolve(Ref(ref));
    ASSERT_TRUE(by_digest.ok()) << by_digest.error().ToString();
    EXPECT_EQ(by_digest->digest, pushed);
  }
}

TEST_F(RegistryTest, FollowsAnIndexToLinuxAmd64) {
  std::string index = Push("volc/multi", "v2", "linux/arm64,linux/amd64");
  // The same amd64 image alone (the writer is deterministic): the digest to expect.
  std::string amd64 = Push("volc/single", "v2", "linux/amd64");
  RegistryClient client;
  auto img = client.Resolve(Ref(reg_.host() + "/volc/multi:v2"));
  ASSERT_TRUE(img.ok()) << img.error().ToString();
  EXPECT_EQ(img->index_digest, index);
  EXPECT_EQ(img->index_media_type, kOciIndex);
  EXPECT_EQ(img->digest, amd64);
  EXPECT_EQ(img->platform, "linux/amd64");

  RegistryOptions arm;
  arm.architecture = "arm64";
  auto arm_img = RegistryClient(arm).Resolve(Ref(reg_.host() + "/volc/multi:v2"));
  ASSERT_TRUE(arm_img.ok()) << arm_img.error().ToString();
  EXPECT_NE(arm_img->digest, amd64);
  EXPECT_EQ(arm_img->platform, "linux/arm64");
}

TEST_F(RegistryTest, NoImageForThePlatformIsNotFound) {
  Push("volc/arm", "v1", "linux/arm64,linux/s390x");
  Push("volc/armonly", "v1", "linux/arm64");
  RegistryClient client;
  auto img = client.Resolve(Ref(reg_.host() + "/volc/arm:v1"));
  ASSERT_FALSE(img.ok());
  EXPECT_EQ(img.error().code, codes::kImageNotFound);
  EXPECT_NE(img.error().message.find("no linux/amd64 image in its index (it has linux/arm64, "
                                     "linux/s390x)"),
            std::string::npos)
      << img.error().message;
  img = client.Resolve(Ref(reg_.host() + "/volc/armonly:v1"));
  ASSERT_FALSE(img.ok());
  EXPECT_NE(img.error().message.find("the image is for linux/arm64, not linux/amd64"),
            std::string::npos)
      << img.error().message;
}

TEST_F(RegistryTest, MissingTagOrRepositoryQuotesTheRegistry) {
  Push("volc/train", "v1", "linux/amd64");
  RegistryClient client;
  for (const std::string& ref : {reg_.host() + "/volc/train:v9", reg_.host() + "/volc/nothere:v1",
                                 reg_.host() + "/volc/train@sha256:" + std::string(64, '0')}) {
    SCOPED_TRACE(ref);
    auto img = client.Resolve(Ref(ref));
    ASSERT_FALSE(img.ok());
    EXPECT_EQ(img.error().code, codes::kImageNotFound);
    EXPECT_EQ(img.error().value, ref);
    EXPECT_NE(img.error().message.find("registry answered 404: MANIFEST_UNKNOWN manifest unknown"),
              std::string::npos)
        << img.error().message;
    EXPECT_NE(img.error().hint.find("/v2/volc/"), std::string::npos) << img.error().hint;
  }
}

TEST(RegistryClientTest, UnreachableRegistryIsNotFound) {
  LocalRegistry reg;
  std::string host = reg.host();
  ASSERT_FALSE(host.empty()) << reg.Log();
  {
    LocalRegistry gone;  // a port that was free a moment ago: start and stop one
    host = gone.host();
  }
  auto img = RegistryClient().Resolve(Ref(host + "/volc/train:v1"));
  ASSERT_FALSE(img.ok());
  EXPECT_EQ(img.error().code, codes::kImageNotFound);
  EXPECT_NE(img.error().message.find("cannot reach registry http://" + host), std::string::npos)
      << img.error().message;
}

void ExpectAuth(LocalRegistry::Auth auth, const std::string& refused_without,
                const std::string& refused_wrong) {
  LocalRegistry reg(auth);
  ASSERT_FALSE(reg.host().empty()) << reg.Log();
  std::string why;
  std::string pushed = reg.Push("volc/private", "v1", "linux/amd64", {}, &why);
  ASSERT_FALSE(pushed.empty()) << why;
  Reference ref = Ref(reg.host() + "/volc/private:v1");

  RegistryOptions good;
  good.credentials[reg.host()] = {LocalRegistry::kUser, LocalRegistry::kPassword};
  RegistryClient client(good);
  auto img = client.Resolve(ref);
  ASSERT_TRUE(img.ok()) << img.error().ToString();
  EXPECT_EQ(img->digest, pushed);
  // The same client again (its cached authorization) and a missing tag behind auth.
  EXPECT_TRUE(client.Resolve(ref).ok());
  auto missing = client.Resolve(Ref(reg.host() + "/volc/private:v9"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("MANIFEST_UNKNOWN"), std::string::npos)
      << missing.error().message;

  auto anonymous = RegistryClient().Resolve(ref);
  ASSERT_FALSE(anonymous.ok());
  EXPECT_EQ(anonymous.error().code, codes::kImageNotFound);
  EXPECT_NE(anonymous.error().message.find(refused_without), std::string::npos)
      << anonymous.error().message;
  EXPECT_NE(anonymous.error().hint.find("--username"), std::string::npos);

  RegistryOptions bad;
  bad.credentials[reg.host()] = {LocalRegistry::kUser, "wrong-password-xyz"};
  auto wrong = RegistryClient(bad).Resolve(ref);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, codes::kImageNotFound);
  EXPECT_NE(wrong.error().message.find(refused_wrong), std::string::npos) << wrong.error().message;
  EXPECT_EQ(wrong.error().ToString().find("wrong-password-xyz"), std::string::npos);
}

TEST(RegistryAuthTest, BasicAuth) {
  ExpectAuth(LocalRegistry::Auth::kBasic, "asks for a user name and password (Basic auth)",
             "registry answered 401: UNAUTHORIZED authentication required");
}

TEST(RegistryAuthTest, BearerTokenAuth) {
  ExpectAuth(LocalRegistry::Auth::kToken,
             "refused: registry answered 401: UNAUTHORIZED bad credentials",
             "refused: registry answered 401: UNAUTHORIZED bad credentials");
}

TEST(RegistryClientTest, ParsesChallengesAndBase64) {
  Challenge c =
      ParseChallenge(R"(Bearer realm="https://auth.docker.io/token",service="registry.docker.io",)"
                     R"(scope="repository:library/ubuntu:pull")");
  EXPECT_EQ(c.scheme, "bearer");
  EXPECT_EQ(c.params["realm"], "https://auth.docker.io/token");
  EXPECT_EQ(c.params["service"], "registry.docker.io");
  EXPECT_EQ(c.params["scope"], "repository:library/ubuntu:pull");
  c = ParseChallenge(R"(Basic realm="a \"quoted\" realm", charset=UTF-8)");
  EXPECT_EQ(c.scheme, "basic");
  EXPECT_EQ(c.params["realm"], "a \"quoted\" realm");
  EXPECT_EQ(c.params["charset"], "UTF-8");
  EXPECT_EQ(Base64(""), "");
  EXPECT_EQ(Base64("f"), "Zg==");
  EXPECT_EQ(Base64("fo"), "Zm8=");
  EXPECT_EQ(Base64("foo"), "Zm9v");
  EXPECT_EQ(Base64("alice:s3cret"), "YWxpY2U6czNjcmV0");
}

}  // namespace
}  // namespace rsl::image
