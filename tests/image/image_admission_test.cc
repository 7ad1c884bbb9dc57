// Admission against a real registry, as a user meets it: the real rsl-controller and seedctl
// (tests/api/harness.h), Debian's docker-registry on a free loopback port, and images that the
// test writes as OCI layouts with real tar layers (src/image/testdata/make_oci_layout.py:
// dist-info directories, a dpkg status file, whiteouts) and pushes with skopeo.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "harness.h"
#include "image/testing.h"

namespace rsl::image {
namespace {

using apitest::CmdResult;
using apitest::Controller;
using apitest::IdFromSubmit;
using apitest::WriteText;
using nlohmann::json;
using testing::LocalRegistry;

constexpr char kSitePackages[] = "usr/lib/python3/dist-packages/";

// A dist-info directory's METADATA as pip writes it.
std::string DistInfo(const std::string& name, const std::string& version) {
  return std::string(kSitePackages) + name + "-" + version +
         ".dist-info/METADATA=Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version +
         "\nSummary: test\n";
}

std::string DpkgStatus() {
  return "var/lib/dpkg/status=Package: libc6\nStatus: install ok installed\nVersion: 2.36-9\n\n"
         "Package: python3-minimal\nStatus: install ok installed\nVersion: 3.11.2-1\n\n"
         "Package: gone\nStatus: deinstall ok config-files\nVersion: 1.0\n";
}

class ImageAdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(registry_.host().empty()) << registry_.Log();
    // Admission is what these tests check: their steps run on the host (the images hold no
    // shell); image_run_test runs steps in their images.
    setenv("RSL_CONTAINER_RUNTIME", "none", 1);
    ASSERT_TRUE(c_.Start()) << c_.Log();
    token_ = c_.CreateToken("risk", "editor", "eddie");
  }

  // Pushes host/volc/train:TAG; returns the manifest digest.
  std::string Push(const std::string& tag, const std::vector<std::string>& files) {
    std::string why;
    std::string digest = registry_.Push("volc/train", tag, "linux/amd64", files, &why);
    EXPECT_FALSE(digest.empty()) << why;
    return digest;
  }

  std::string Image(const std::string& tag) { return registry_.host() + "/volc/train:" + tag; }

  // One model step in `image`: it writes the digest it was given and a model file.
  std::string Submit(const std::string& name, const std::string& image, const std::string& pins) {
    std::string yaml =
        "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: " + name +
        "\n  namespace: risk\nspec:\n  resources: {cpu: \"1\", memory: 256Mi}\n"
        "  model:\n    framework: custom\n    version: \"1.0.0\"\n    dependencies: [" +
        pins + "]\n  pipeline:\n    - name: train\n      image: \"" + image +
        "\"\n      command: [\"sh\", \"-c\", \"echo ran $RSL_IMAGE_DIGEST; "
        "echo weights > $RSL_OUTPUT/model.pkl\"]\n";
    WriteText(c_.work_dir() + "/" + name + ".yaml", yaml);
    CmdResult r = c_.Seedctl(token_, {"workload", "submit", "-f", name + ".yaml"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return IdFromSubmit(r.out);
  }

  json Describe(const std::string& id) {
    CmdResult r = c_.Seedctl(token_, {"workload", "describe", "--id", id, "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  std::string Logs(const std::string& id) {
    return c_.Seedctl(token_, {"workload", "logs", "--id", id, "--step", "train"}).out;
  }

  static json ModelEnvironment(const json& described) {
    const json& admission = described["status"]["admission"];
    if (!admission.is_object() || !admission.contains("model")) return json();
    return admission["model"]["environments"][0];
  }

  LocalRegistry registry_;
  Controller c_;
  std::string token_;
};

TEST_F(ImageAdmissionTest, AMissingTagIsRefusedBeforeAnythingRunsWithImagePullBackOff) {
  Push("v1", {DistInfo("numpy", "1.24.2")});
  std::string id = Submit("missing-tag", Image("v9"), "");
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(c_.WaitPhase(token_, id), "REJECTED") << c_.Log();
  json d = Describe(id);
  EXPECT_EQ(d["status"]["failureCode"], "IMAGE_NOT_FOUND") << d.dump(2);
  std::string message = d["status"]["failureMessage"];
  EXPECT_NE(message.find("IMAGE_NOT_FOUND spec.pipeline.steps[0].image: step \"train\": image \"" +
                         Image("v9") + "\": registry answered 404: MANIFEST_UNKNOWN"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("(and it is not a registered host environment)"), std::string::npos)
      << message;
  bool backoff = false;
  for (const auto& e : d["events"]) {
    if (e["reason"] == "ImagePullBackOff") {
      backoff = true;
      EXPECT_EQ(e["type"], "Warning");
      EXPECT_NE(e["message"].get<std::string>().find("MANIFEST_UNKNOWN"), std::string::npos)
          << e.dump();
    }
    EXPECT_NE(e["reason"], "Started") << "a step started: " << d["events"].dump(2);
  }
  EXPECT_TRUE(backoff) << d["events"].dump(2);
  EXPECT_EQ(Logs(id).find("ran"), std::string::npos);
}

// The image's packages come from its layers: the upper layer whites torch out (a whiteout
// file) and replaces numpy's dist-info (an opaque directory), the dpkg status has libc6.
TEST_F(ImageAdmissionTest, DependencyMismatchIsReadFromTheImagesLayers) {
  std::string digest =
      Push("v1", {DistInfo("numpy", "1.24.2"), DistInfo("torch", "2.1.0"), DpkgStatus(), "--layer",
                  std::string(kSitePackages) + ".wh.torch-2.1.0.dist-info=",
                  std::string(kSitePackages) + "numpy-1.24.2.dist-info/.wh..wh..opq=",
                  std::string(kSitePackages) + "numpy-1.24.2.dist-info/METADATA=Name: numpy\n"
                                               "Version: 1.26.4\n"});
  std::string id =
      Submit("mismatch", Image("v1"), "\"numpy==1.24.2\", \"torch==2.1.0\", \"libc6==2.36-9\"");
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(c_.WaitPhase(token_, id), "REJECTED") << c_.Log();
  json d = Describe(id);
  EXPECT_EQ(d["status"]["failureCode"], "MODEL_DEPENDENCY_MISMATCH") << d.dump(2);
  std::string message = d["status"]["failureMessage"];
  EXPECT_NE(message.find("MODEL_DEPENDENCY_MISMATCH spec.model.dependencies: step \"train\" "
                         "(image \"" +
                         Image("v1") + "\" " + digest +
                         "): numpy: declared 1.24.2, environment has 1.26.4; torch: not "
                         "installed"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("libc6"), std::string::npos) << "dpkg's libc6 2.36-9 matches: " << message;
  json env = ModelEnvironment(d);
  EXPECT_EQ(env["kind"], "registry") << d["status"].dump(2);
  EXPECT_EQ(env["digest"], digest);

  // seedctl image inspect lists what admission read.
  CmdResult inspect = c_.Seedctl("", {"image", "inspect", Image("v1")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("Python packages: 1\n"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("numpy  1.26.4   /" + std::string(kSitePackages) +
                             "numpy-1.24.2.dist-info/METADATA"),
            std::string::npos)
      << inspect.out;
  EXPECT_NE(inspect.out.find("Debian packages: 2 (dpkg status)\n"), std::string::npos)
      << inspect.out;
}

// The run records the digest (describe, the step's RSL_IMAGE_DIGEST, the model's
// provenance); a rollback after the tag moved runs the recorded digest, a new submission the
// tag's new one.
TEST_F(ImageAdmissionTest, TheDigestIsRecordedAndARollbackRunsItAfterTheTagMoved) {
  std::string first = Push("v1", {DistInfo("numpy", "1.24.2")});
  std::string id = Submit("pinned", Image("v1"), "\"numpy==1.24.2\"");
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(c_.WaitPhase(token_, id), "SUCCEEDED") << c_.Log() << Describe(id).dump(2);
  json env = ModelEnvironment(Describe(id));
  EXPECT_EQ(env["digest"], first);
  EXPECT_EQ(env["pinned"], registry_.host() + "/volc/train@" + first);
  EXPECT_EQ(env["reference"], Image("v1"));
  EXPECT_NE(Logs(id).find("ran " + first), std::string::npos) << Logs(id);
  CmdResult describe = c_.Seedctl(token_, {"workload", "describe", "--id", id});
  size_t admission = describe.out.find("Admission:\n");
  ASSERT_NE(admission, std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find(first, admission), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("kind: registry", admission), std::string::npos) << describe.out;

  CmdResult provenance = apitest::RunCmd({apitest::SeedctlPath(), "model", "describe", "pinned",
                                          "--state-dir", c_.state_dir(), "-o", "provenance"},
                                         {});
  ASSERT_EQ(provenance.exit_code, 0) << provenance.err;
  json statement = json::parse(provenance.out, nullptr, false);
  EXPECT_EQ(statement["predicate"]["environment"]["digest"], first) << provenance.out;
  EXPECT_EQ(statement["predicate"]["environment"]["image"], Image("v1")) << provenance.out;

  // The tag moves to other content.
  std::string second = Push("v1", {DistInfo("numpy", "1.24.2"), "etc/moved=yes"});
  ASSERT_NE(second, first);

  CmdResult rollback = c_.Seedctl(token_, {"rollback", "--id", id});
  ASSERT_EQ(rollback.exit_code, 0) << rollback.err;
  std::string rid = IdFromSubmit(rollback.out);
  ASSERT_FALSE(rid.empty()) << rollback.out;
  ASSERT_EQ(c_.WaitPhase(token_, rid), "SUCCEEDED") << c_.Log();
  EXPECT_EQ(ModelEnvironment(Describe(rid))["digest"], first);
  EXPECT_NE(Logs(rid).find("ran " + first), std::string::npos) << Logs(rid);

  std::string fresh = Submit("pinned", Image("v1"), "\"numpy==1.24.2\"");
  ASSERT_EQ(c_.WaitPhase(token_, fresh), "SUCCEEDED") << c_.Log();
  EXPECT_EQ(ModelEnvironment(Describe(fresh))["digest"], second);
  EXPECT_NE(Logs(fresh).find("ran " + second), std::string::npos) << Logs(fresh);
}

// A registry that wants a password: admission uses the secret spec.imagePullSecrets names,
// and refuses without it; the password appears in no answer.
TEST_F(ImageAdmissionTest, CredentialsComeFromTheSecretTheSpecNames) {
  LocalRegistry locked(LocalRegistry::Auth::kBasic);
  ASSERT_FALSE(locked.host().empty()) << locked.Log();
  std::string why;
  std::string digest =
      locked.Push("volc/train", "v1", "linux/amd64", {DistInfo("numpy", "1.24.2")}, &why);
  ASSERT_FALSE(digest.empty()) << why;
  std::string image = locked.host() + "/volc/train:v1";

  std::string anonymous = Submit("anonymous", image, "");
  ASSERT_EQ(c_.WaitPhase(token_, anonymous), "REJECTED") << c_.Log();
  json refused = Describe(anonymous);
  EXPECT_EQ(refused["status"]["failureCode"], "IMAGE_NOT_FOUND");
  EXPECT_NE(refused["status"]["failureMessage"].get<std::string>().find("Basic auth"),
            std::string::npos)
      << refused["status"].dump(2);

  CmdResult secret = c_.Seedctl(
      token_, {"secret", "create", "regcred", "--from-literal", "REGISTRY=" + locked.host(),
               "--from-literal", std::string("USERNAME=") + LocalRegistry::kUser, "--from-literal",
               std::string("PASSWORD=") + LocalRegistry::kPassword, "-n", "risk"});
  ASSERT_EQ(secret.exit_code, 0) << secret.err;
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: with-creds\n"
      "  namespace: risk\nspec:\n  imagePullSecrets: [regcred]\n  resources: {cpu: \"1\", "
      "memory: 256Mi}\n  pipeline:\n    - name: train\n      image: \"" +
      image + "\"\n      command: [\"sh\", \"-c\", \"echo ran $RSL_IMAGE_DIGEST\"]\n";
  WriteText(c_.work_dir() + "/with-creds.yaml", yaml);
  CmdResult submitted = c_.Seedctl(token_, {"workload", "submit", "-f", "with-creds.yaml"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  std::string id = IdFromSubmit(submitted.out);
  ASSERT_EQ(c_.WaitPhase(token_, id), "SUCCEEDED") << c_.Log() << Describe(id).dump(2);
  json d = Describe(id);
  EXPECT_EQ(ModelEnvironment(d)["digest"], digest) << d.dump(2);
  EXPECT_EQ(d.dump().find(LocalRegistry::kPassword), std::string::npos);
  EXPECT_EQ(c_.Log().find(LocalRegistry::kPassword), std::string::npos);
}

}  // namespace
}  // namespace rsl::image
