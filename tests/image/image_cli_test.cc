// `seedctl image inspect` end to end: the real seedctl binary against a real registry
// (Debian's docker-registry) holding images that skopeo pushed from OCI layouts written by
// src/image/testdata/make_oci_layout.py.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "image/testing.h"

namespace rsl::image {
namespace {

using testing::LocalRegistry;

// What seedctl printed (stdout and stderr) and its exit status.
struct CliResult {
  int exit_code = -1;
  std::string output;
  //! The error code seedctl prints alone on its last line when it fails.
  std::string LastLine() const {
    size_t end = output.find_last_not_of('\n');
    if (end == std::string::npos) return "";
    size_t start = output.rfind('\n', end);
    size_t from = start == std::string::npos ? 0 : start + 1;
    return output.substr(from, end + 1 - from);
  }
};

class ImageCliTest : public ::testing::Test {
 protected:
  CliResult Seed(const std::vector<std::string>& args, const std::string& stdin_text = "") {
    const char* bin = std::getenv("RSL_SEEDCTL");  // a build with seedctl elsewhere
    std::string cmd = "exec " + Shell(bin != nullptr ? bin : RSL_BINARY_DIR "/bin/seedctl");
    for (const auto& a : args) cmd += " " + Shell(a);
    if (!stdin_text.empty()) cmd = "printf '%s\\n' " + Shell(stdin_text) + " | " + cmd;
    CliResult r;
    r.exit_code = testing::RunCommand({"sh", "-c", cmd}, dir_ / "seedctl.out", &r.output);
    return r;
  }
  static std::string Shell(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  }
  rsl::testing::TempDir dir_{"rsl-image-cli"};
};

TEST_F(ImageCliTest, InspectShowsDigestPlatformSizeAndLayers) {
  LocalRegistry reg;
  ASSERT_FALSE(reg.host().empty()) << reg.Log();
  std::string why;
  std::string pushed = reg.Push("volc/train", "v1", "linux/amd64", {}, &why);
  ASSERT_FALSE(pushed.empty()) << why;
  auto r = Seed({"image", "inspect", reg.host() + "/volc/train:v1"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Name:        " + reg.host() + "/volc/train:v1\n"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("Digest:      " + pushed + "\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("MediaType:   application/vnd.oci.image.manifest.v1+json\n"),
            std::string::npos);
  EXPECT_NE(r.output.find("Platform:    linux/amd64\n"), std::string::npos);
  EXPECT_NE(r.output.find("config and 1 compressed layer)\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("DIGEST"), std::string::npos);
  EXPECT_NE(r.output.find("application/vnd.oci.image.layer.v1.tar+gzip"), std::string::npos);
}

TEST_F(ImageCliTest, InspectJsonFollowsTheIndex) {
  LocalRegistry reg;
  ASSERT_FALSE(reg.host().empty()) << reg.Log();
  std::string index = reg.Push("volc/multi", "v2", "linux/arm64,linux/amd64");
  std::string amd64 = reg.Push("volc/single", "v2", "linux/amd64");  // the same image alone
  ASSERT_FALSE(index.empty());
  auto r = Seed({"image", "inspect", reg.host() + "/volc/multi:v2", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["digest"], amd64);
  EXPECT_EQ(j["index"]["digest"], index);
  EXPECT_EQ(j["platform"], "linux/amd64");
  ASSERT_EQ(j["layers"].size(), 1u);
  EXPECT_EQ(j["size"].get<int64_t>(),
            j["config"]["size"].get<int64_t>() + j["layers"][0]["size"].get<int64_t>());

  auto arm = Seed({"image", "inspect", reg.host() + "/volc/multi:v2", "--platform", "linux/arm64",
                   "-o", "json"});
  ASSERT_EQ(arm.exit_code, 0) << arm.output;
  EXPECT_EQ(nlohmann::json::parse(arm.output)["platform"], "linux/arm64");
}

// A zstd-compressed layer (skopeo copy --dest-compress-format zstd) is read like a gzip'd one:
// the Python packages in it are listed.
TEST_F(ImageCliTest, InspectReadsZstdLayers) {
  LocalRegistry reg;
  ASSERT_FALSE(reg.host().empty()) << reg.Log();
  std::string why;
  std::string pushed = reg.Push(
      "volc/zstd", "v1", "linux/amd64",
      {"usr/lib/python3/dist-packages/six-1.16.0.dist-info/METADATA=Metadata-Version: 2.1\n"
       "Name: six\nVersion: 1.16.0\n"},
      &why, "zstd");
  ASSERT_FALSE(pushed.empty()) << why;
  auto r = Seed({"image", "inspect", reg.host() + "/volc/zstd:v1", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["layers"].size(), 1u);
  EXPECT_EQ(j["layers"][0]["mediaType"], "application/vnd.oci.image.layer.v1.tar+zstd");
  ASSERT_EQ(j["pythonPackages"].size(), 1u) << r.output;
  EXPECT_EQ(j["pythonPackages"][0]["name"], "six");
  EXPECT_EQ(j["pythonPackages"][0]["version"], "1.16.0");
}

TEST_F(ImageCliTest, MissingTagAndBadReferenceFail) {
  LocalRegistry reg;
  ASSERT_FALSE(reg.host().empty()) << reg.Log();
  ASSERT_FALSE(reg.Push("volc/train", "v1", "linux/amd64").empty());
  auto r = Seed({"image", "inspect", reg.host() + "/volc/train:v9"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.LastLine(), "IMAGE_NOT_FOUND");
  EXPECT_NE(r.output.find("registry answered 404: MANIFEST_UNKNOWN manifest unknown"),
            std::string::npos)
      << r.output;
  r = Seed({"image", "inspect", "docker/Docker"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.LastLine(), "IMAGE_REFERENCE_INVALID");
  EXPECT_NE(r.output.find("not lower case"), std::string::npos) << r.output;
}

TEST_F(ImageCliTest, InspectWithCredentialsFromStdin) {
  LocalRegistry reg(LocalRegistry::Auth::kToken);
  ASSERT_FALSE(reg.host().empty()) << reg.Log();
  std::string why;
  std::string pushed = reg.Push("volc/private", "v1", "linux/amd64", {}, &why);
  ASSERT_FALSE(pushed.empty()) << why;
  std::string ref = reg.host() + "/volc/private:v1";
  auto r = Seed({"image", "inspect", ref, "--username", LocalRegistry::kUser, "--password-stdin"},
                LocalRegistry::kPassword);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Digest:      " + pushed), std::string::npos) << r.output;
  auto anonymous = Seed({"image", "inspect", ref});
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_EQ(anonymous.LastLine(), "IMAGE_NOT_FOUND");
  auto wrong =
      Seed({"image", "inspect", ref, "--username", LocalRegistry::kUser, "--password-stdin"},
           "not-the-password");
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_EQ(wrong.output.find("not-the-password"), std::string::npos) << wrong.output;
}

}  // namespace
}  // namespace rsl::image
