// rsl-controller end to end (label `api`): live resource use in `status`, relative data URIs
// at submission, and what configmaps and secrets accept.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

#include "harness.h"

namespace rsl::apitest {
namespace {

using Json = nlohmann::json;

class LiveStatusInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(c_.Start()) << c_.Log();
    editor_ = c_.CreateToken("risk", "editor", "eddie");
  }
  // POST with curl: what an API client without seedctl sends. Returns the HTTP status
  // line's code and the body.
  std::pair<std::string, Json> Post(const std::string& path, const std::string& body,
                                    const std::string& content_type) {
    CmdResult r = RunCmd(
        {"/usr/bin/curl", "-s", "-w", "\n%{http_code}", "-H", "Authorization: Bearer " + editor_,
         "-H", "Content-Type: " + content_type, "--data-binary", body, c_.server() + path},
        {});
    size_t nl = r.out.rfind('\n');
    std::string code = nl == std::string::npos ? "" : r.out.substr(nl + 1);
    return {code, Json::parse(r.out.substr(0, nl == std::string::npos ? 0 : nl), nullptr, false)};
  }

  Controller c_;
  std::string editor_;
};

// `status` while a step holds 80 MiB and burns CPU: its memory and CPU use so far, before
// it ends (they used to appear only at the end).
TEST_F(LiveStatusInputsTest, StatusShowsTheUseOfARunningStep) {
  WriteText(
      c_.work_dir() + "/hog.yaml",
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
      "metadata: {name: hog, namespace: risk}\nspec:\n  pipeline:\n"
      "    - name: hog\n      resources: {memory: 256Mi}\n"
      "      command: [/usr/bin/python3, -c, \"x = b'a' * (80 << 20)\\nwhile True: pass\\n\"]\n");
  CmdResult submitted = c_.Seedctl(editor_, {"workload", "submit", "-f", "hog.yaml"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  std::string id = IdFromSubmit(submitted.out);
  Json cur;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    CmdResult st = c_.Seedctl(editor_, {"workload", "status", "--id", id, "-o", "json"});
    Json w = Json::parse(st.out, nullptr, false);
    if (w.is_object() && w["status"].contains("currentStep")) cur = w["status"]["currentStep"];
    if (cur.is_object() && cur.value("cpuMs", 0) >= 300 &&
        cur.value("peakMemoryBytes", int64_t(0)) >= (60LL << 20)) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(cur.is_object());
  EXPECT_EQ(cur.value("phase", ""), "RUNNING");
  EXPECT_GE(cur.value("cpuMs", 0), 300) << cur.dump();
  EXPECT_GE(cur.value("peakMemoryBytes", int64_t(0)), 60LL << 20) << cur.dump();
  EXPECT_GE(cur.value("wallMs", 0), 1000) << cur.dump();
  CmdResult text = c_.Seedctl(editor_, {"workload", "status", "--id", id});
  EXPECT_NE(text.out.find("\nCPU: "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("MEMORY_USED: 0/"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("/256Mi\n"), std::string::npos) << text.out;
  CmdResult cancel = c_.Seedctl(editor_, {"workload", "cancel", "--id", id});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
}

// A relative data URI means the directory of the file seedctl submits, resolved once and
// stored absolute; an API client that sends no directory is refused, input and output alike.
TEST_F(LiveStatusInputsTest, RelativeDataUrisAreResolvedAgainstTheFileOrRefused) {
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
      "metadata: {name: rel, namespace: risk}\nspec:\n"
      "  data:\n    output: {uri: out}\n"
      "  pipeline:\n    - name: s\n      command: [sh, -c, 'echo x > $RSL_OUTPUT/part']\n";
  std::filesystem::create_directories(c_.work_dir() + "/specs");
  WriteText(c_.work_dir() + "/specs/rel.yaml", yaml);
  CmdResult submitted = c_.Seedctl(editor_, {"workload", "submit", "-f", "specs/rel.yaml"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  std::string id = IdFromSubmit(submitted.out);
  ASSERT_EQ(c_.WaitPhase(editor_, id), "SUCCEEDED") << c_.Log();
  std::string out_dir = c_.work_dir() + "/specs/out";
  EXPECT_EQ(ReadText(out_dir + "/s/part"), "x\n");
  CmdResult described = c_.Seedctl(editor_, {"workload", "describe", "--id", id, "-o", "json"});
  Json d = Json::parse(described.out, nullptr, false);
  ASSERT_TRUE(d.is_object()) << described.out;
  EXPECT_EQ(d["spec"]["data"]["output"].value("uri", ""), out_dir) << d["spec"].dump();

  auto [code, err] = Post("/api/v1/workloads", yaml, "application/yaml");
  EXPECT_EQ(code, "400") << err.dump();
  EXPECT_EQ(err.value("code", ""), "SPEC_INVALID") << err.dump();
  EXPECT_EQ(err["details"].value("path", ""), "spec.data.output.uri") << err.dump();
  EXPECT_EQ(err["details"].value("value", ""), "out") << err.dump();
  EXPECT_EQ(err.value("message", ""),
            "relative uri \"out\" has no base directory to resolve it against");
  EXPECT_NE(err["details"].value("hint", "").find("absolute path"), std::string::npos);

  std::string input = yaml;
  input.replace(input.find("output: {uri: out}"), 18, "input: {uri: 'file://in/x'}");
  auto [in_code, in_err] = Post("/api/v1/workloads", input, "application/yaml");
  EXPECT_EQ(in_code, "400") << in_err.dump();
  EXPECT_EQ(in_err["details"].value("path", ""), "spec.data.input.uri") << in_err.dump();
  EXPECT_EQ(in_err["details"].value("value", ""), "file://in/x") << in_err.dump();
}

// Keys become environment variables: names only, never RSL_* or CUDA_VISIBLE_DEVICES, and for
// secrets none of the engine's basic variables. A secret value too short to be masked is
// accepted with a warning.
TEST_F(LiveStatusInputsTest, SecretAndConfigMapKeysAreCheckedAndShortValuesWarned) {
  CmdResult reserved =
      c_.Seedctl(editor_, {"secret", "create", "s", "--from-literal", "RSL_OUTPUT=/x"});
  EXPECT_EQ(reserved.exit_code, 1);
  EXPECT_EQ(reserved.LastErrLine(), "INVALID_ARGUMENT");
  EXPECT_NE(reserved.err.find("INVALID_ARGUMENT data.RSL_OUTPUT: key \"RSL_OUTPUT\" is reserved: "
                              "RSL sets RSL_* itself (choose a name without the RSL_ prefix)"),
            std::string::npos)
      << reserved.err;
  CmdResult path = c_.Seedctl(editor_, {"secret", "create", "s", "--from-literal", "PATH=/bin"});
  EXPECT_EQ(path.LastErrLine(), "INVALID_ARGUMENT") << path.err;
  CmdResult path_cm =
      c_.Seedctl(editor_, {"configmap", "create", "c", "--from-literal", "PATH=/bin"});
  EXPECT_EQ(path_cm.exit_code, 0) << path_cm.err;
  CmdResult cuda =
      c_.Seedctl(editor_, {"configmap", "create", "c", "--from-literal", "CUDA_VISIBLE_DEVICES=0"});
  EXPECT_EQ(cuda.LastErrLine(), "INVALID_ARGUMENT") << cuda.err;

  auto [code, err] = Post("/api/v1/namespaces/risk/secrets", R"({"name": "e", "data": {"": "x"}})",
                          "application/json");
  EXPECT_EQ(code, "400");
  EXPECT_EQ(err.value("code", ""), "INVALID_ARGUMENT") << err.dump();
  EXPECT_EQ(err.value("message", ""),
            "key \"\" is not an environment variable name: it must not be empty");
  auto [bad_code, bad] = Post("/api/v1/namespaces/risk/configmaps",
                              R"({"name": "e", "data": {"1X": "x"}})", "application/json");
  EXPECT_EQ(bad_code, "400");
  EXPECT_EQ(bad["details"].value("value", ""), "1X") << bad.dump();
  EXPECT_NE(bad["details"].value("hint", "").find("[A-Za-z_][A-Za-z0-9_]*"), std::string::npos);

  CmdResult pin = c_.Seedctl(editor_, {"secret", "create", "pin", "--from-literal", "PIN=ab",
                                       "--from-literal", "TOKEN=long-enough"});
  EXPECT_EQ(pin.exit_code, 0) << pin.err;
  EXPECT_EQ(pin.out, "secret/pin created in namespace risk\n");
  EXPECT_EQ(pin.err,
            "warning: the value of PIN is shorter than 4 bytes: it will not be masked in logs\n");
  auto [ok_code, created] = Post("/api/v1/namespaces/risk/secrets",
                                 R"({"name": "pin2", "data": {"PIN": "abc"}})", "application/json");
  EXPECT_EQ(ok_code, "201");
  EXPECT_EQ(
      created["warnings"],
      Json::array({"the value of PIN is shorter than 4 bytes: it will not be masked in logs"}));

  // The step's log keeps its words; the long value is masked.
  WriteText(c_.work_dir() + "/talk.yaml",
            "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
            "metadata: {name: talk, namespace: risk}\nspec:\n  pipeline:\n"
            "    - name: talk\n      envFrom: [{secretRef: pin}]\n"
            "      command: [sh, -c, 'echo about a cab $TOKEN']\n");
  CmdResult submitted = c_.Seedctl(editor_, {"workload", "submit", "-f", "talk.yaml"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  std::string id = IdFromSubmit(submitted.out);
  ASSERT_EQ(c_.WaitPhase(editor_, id), "SUCCEEDED") << c_.Log();
  CmdResult logs = c_.Seedctl(editor_, {"workload", "logs", "--id", id, "--step", "talk"});
  EXPECT_EQ(logs.out, "about a cab ***\n");
}

}  // namespace
}  // namespace rsl::apitest
