// Table-driven tests of image references, with the examples of Docker's own tests
// (distribution/reference normalize_test.go and reference_test.go).
#include "image/reference.h"

#include <gtest/gtest.h>

#include "base/codes.h"

namespace rsl::image {
namespace {

const std::string kHex(64, 'f');
const std::string kDigest = "sha256:" + kHex;

struct Good {
  std::string in;
  std::string registry;
  std::string repository;
  std::string tag;
  std::string digest;
  bool plain_http;
};

TEST(ReferenceTest, NormalisesAsDocker) {
  const std::vector<Good> cases = {
      {"ubuntu", "docker.io", "library/ubuntu", "latest", "", false},
      {"debian", "docker.io", "library/debian", "latest", "", false},
      {"library/debian", "docker.io", "library/debian", "latest", "", false},
      {"docker/docker", "docker.io", "docker/docker", "latest", "", false},
      {"docker.io/docker/docker", "docker.io", "docker/docker", "latest", "", false},
      {"docker.io/library/debian:latest", "docker.io", "library/debian", "latest", "", false},
      {"docker.io/debian", "docker.io", "library/debian", "latest", "", false},
      {"index.docker.io/docker/docker", "docker.io", "docker/docker", "latest", "", false},
      {"index.docker.io/debian", "docker.io", "library/debian", "latest", "", false},
      {"ubuntu:22.04", "docker.io", "library/ubuntu", "22.04", "", false},
      {"ubuntu-12.04-base", "docker.io", "library/ubuntu-12.04-base", "latest", "", false},
      {"docker-rules/docker", "docker.io", "docker-rules/docker", "latest", "", false},
      {"volc/train-fraud-pytorch:v2.1", "docker.io", "volc/train-fraud-pytorch", "v2.1", "", false},
      {"127.0.0.1:5000/docker/docker", "127.0.0.1:5000", "docker/docker", "latest", "", true},
      {"127.0.0.1:5000/library/debian", "127.0.0.1:5000", "library/debian", "latest", "", true},
      {"127.0.0.1:5000/debian", "127.0.0.1:5000", "debian", "latest", "", true},
      {"192.168.0.1:8/debian", "192.168.0.1:8", "debian", "latest", "", false},
      {"192.168.0.2:25000/debian", "192.168.0.2:25000", "debian", "latest", "", false},
      {"localhost/foo", "localhost", "foo", "latest", "", true},
      {"localhost:5000/foo", "localhost:5000", "foo", "latest", "", true},
      {"localhost:8000/private/moonbase", "localhost:8000", "private/moonbase", "latest", "", true},
      {"example.com:8000/private/moonbase", "example.com:8000", "private/moonbase", "latest", "",
       false},
      {"[::1]:5000/repo", "[::1]:5000", "repo", "latest", "", true},
      {"[2001:db8::1]:5000/repo", "[2001:db8::1]:5000", "repo", "latest", "", false},
      {"test.com:tag", "docker.io", "library/test.com", "tag", "", false},
      {"test.com:5000", "docker.io", "library/test.com", "5000", "", false},
      {"test.com/repo:tag", "test.com", "repo", "tag", "", false},
      {"test:5000/repo", "test:5000", "repo", "latest", "", false},
      {"test:5000/repo:tag", "test:5000", "repo", "tag", "", false},
      {"test:5000/repo@" + kDigest, "test:5000", "repo", "", kDigest, false},
      {"test:5000/repo:tag@" + kDigest, "test:5000", "repo", "tag", kDigest, false},
      {"repo@" + kDigest, "docker.io", "library/repo", "", kDigest, false},
      {"foo_bar.com:8080", "docker.io", "library/foo_bar.com", "8080", "", false},
      {"foo/foo_bar.com:8080", "docker.io", "foo/foo_bar.com", "8080", "", false},
      {"a__b/c--d/e.f_g", "docker.io", "a__b/c--d/e.f_g", "latest", "", false},
      // An upper-case first part is a registry host (Docker's rule), not a Hub user.
      {"Docker/docker", "Docker", "docker", "latest", "", false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.in);
    auto r = ParseReference(c.in);
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    EXPECT_EQ(r->registry, c.registry);
    EXPECT_EQ(r->repository, c.repository);
    EXPECT_EQ(r->tag, c.tag);
    EXPECT_EQ(r->digest, c.digest);
    EXPECT_EQ(r->plain_http, c.plain_http);
  }
}

TEST(ReferenceTest, RefusesWhatDockerRefuses) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "is empty"},
      {"https://github.com/docker/docker", "invalid registry host \"https:\""},
      {"docker/Docker", "not lower case"},
      {"Uppercase:tag", "not lower case"},
      {"-docker", "invalid name component \"-docker\""},
      {"-docker/docker", "invalid name component \"-docker\""},
      {"-docker.io/docker/docker", "invalid registry host"},
      {"docker///docker", "invalid name component \"\""},
      {"docker.io/docker/Docker", "not lower case"},
      {"docker.io/docker///docker", "invalid name component \"\""},
      {kHex, "64-digit hex"},
      {":justtag", "no repository name"},
      {"@" + kDigest, "no repository name"},
      {"validname@invaliddigest:" + kHex, "unsupported digest algorithm \"invaliddigest\""},
      {"repo@sha256:abc", "3 hex digits, not 64"},
      {"repo@sha256:" + std::string(64, 'F'), "not lower-case hex"},
      {"repo@" + kHex, "digest without an algorithm"},
      {"aa/asdf$$^/aa", "invalid name component \"asdf$$^\""},
      {"repo:", "empty tag"},
      {"repo:-x", "tag that starts"},
      {"repo:" + std::string(129, 'a'), "longer than 128"},
      {"repo:a+b", "tag \"a+b\""},
      {"a/" + std::string(254, 'a'), "longer than 255"},
      {"host:port/repo", "invalid registry host \"host:port\""},
      {"a..b.com/repo", "invalid registry host"},
      {"repo__/x", "invalid name component \"repo__\""},
  };
  for (const auto& [in, why] : cases) {
    SCOPED_TRACE(in);
    auto r = ParseReference(in);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, codes::kImageReferenceInvalid);
    EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().value, in);
    EXPECT_FALSE(r.error().hint.empty());
  }
}

TEST(ReferenceTest, ToStringIsFullyQualified) {
  EXPECT_EQ(ParseReference("ubuntu")->ToString(), "docker.io/library/ubuntu:latest");
  EXPECT_EQ(ParseReference("repo@" + kDigest)->ToString(), "docker.io/library/repo@" + kDigest);
  EXPECT_EQ(ParseReference("h.io/a/b:t@" + kDigest)->ToString(), "h.io/a/b:t@" + kDigest);
  EXPECT_EQ(ParseReference("h.io/a/b:t@" + kDigest)->ManifestRef(), kDigest);
  EXPECT_EQ(ParseReference("h.io/a/b:t")->ManifestRef(), "t");
}

TEST(ReferenceTest, TransportIsHttpsExceptLoopbackAndInsecure) {
  EXPECT_EQ(ParseReference("ubuntu")->BaseUrl(), "https://registry-1.docker.io");
  EXPECT_EQ(ParseReference("ghcr.io/o/r")->BaseUrl(), "https://ghcr.io");
  EXPECT_EQ(ParseReference("127.0.0.1:5000/r")->BaseUrl(), "http://127.0.0.1:5000");
  EXPECT_EQ(ParseReference("127.8.9.10/r")->BaseUrl(), "http://127.8.9.10");
  EXPECT_EQ(ParseReference("localhost:5000/r")->BaseUrl(), "http://localhost:5000");
  EXPECT_EQ(ParseReference("128.0.0.1:5000/r")->BaseUrl(), "https://128.0.0.1:5000");
  EXPECT_EQ(ParseReference("127.0.0.1.nip.io/r")->BaseUrl(), "https://127.0.0.1.nip.io");
  ParseOptions insecure{{"reg.lan:5000"}};
  EXPECT_EQ(ParseReference("reg.lan:5000/r", insecure)->BaseUrl(), "http://reg.lan:5000");
  EXPECT_EQ(ParseReference("reg.lan/r", insecure)->BaseUrl(), "https://reg.lan");
}

}  // namespace
}  // namespace rsl::image
