#include "k8s/capability_labels.h"

#include <gtest/gtest.h>

#include "spec/capabilities.h"

namespace rsl::k8s {
namespace {

TEST(K8sCapabilityLabels, DefaultsMapEveryBuiltInCapability) {
  CapabilityLabels t = CapabilityLabels::Defaults();
  for (const auto& name : spec::CapabilityCatalog::BuiltIn().Names()) {
    const NodeRequirement* r = t.Find(name);
    ASSERT_NE(r, nullptr) << name << " has no node label";
    EXPECT_FALSE(r->key.empty()) << name;
  }
  EXPECT_EQ(t.Find("tensor_core")->key, "nvidia.com/gpu.compute.major");
  EXPECT_EQ(t.Find("tensor_core")->op, "Gt");
  EXPECT_EQ(t.Find("tensor_core")->values, std::vector<std::string>{"6"});
  EXPECT_EQ(t.Find("fp8_support")->key, "nvidia.com/gpu.family");
  EXPECT_EQ(t.Find("video_codec")->key, "nvidia.com/gpu.product");
  EXPECT_EQ(t.Find("no_such_capability"), nullptr);
  EXPECT_EQ(t.gpu_memory_label(), "nvidia.com/gpu.memory");
}

TEST(K8sCapabilityLabels, AFileOverridesAndAdds) {
  auto t = CapabilityLabels::Parse(R"(
capabilityLabels:
  fp8_support: {key: nvidia.com/gpu.family, operator: In, values: [hopper]}
  fast_fabric: {key: example.com/fabric, operator: Exists}
gpuMemoryLabel: example.com/gpu-mem-mib
)",
                                   "labels.yaml");
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  EXPECT_EQ(t->Find("fp8_support")->values, std::vector<std::string>{"hopper"});
  EXPECT_EQ(t->Find("fast_fabric")->op, "Exists");
  EXPECT_TRUE(t->Find("fast_fabric")->values.empty());
  EXPECT_NE(t->Find("tensor_core"), nullptr);  // defaults kept
  EXPECT_EQ(t->gpu_memory_label(), "example.com/gpu-mem-mib");
}

struct BadTable {
  const char* text;
  int line;
  const char* value;
  const char* message_part;
};

TEST(K8sCapabilityLabels, BadTablesAreRefusedWithPlaceAndValue) {
  const BadTable cases[] = {
      {"capabilityLabels:\n  x: {key: a/b, operator: Near, values: [1]}\n", 2, "Near",
       "unknown operator"},
      {"capabilityLabels:\n  x: {key: a/b, operator: Gt, values: [big]}\n", 2, "big",
       "needs one integer"},
      {"capabilityLabels:\n  x: {key: a/b, operator: Exists, values: [v]}\n", 2, "v",
       "takes no values"},
      {"capabilityLabels:\n  x: {key: a/b, operator: In}\n", 2, "In", "needs values"},
      {"capabilityLabels:\n  x: {key: 'bad key!', operator: Exists}\n", 2, "bad key!",
       "not a valid label key"},
      {"capabilityLabels:\n  x: {key: a/b, operator: In, values: ['not valid!']}\n", 2,
       "not valid!", "not a valid label value"},
      {"capabilityLabels:\n  x: {key: a/b, operator: Exists, colour: red}\n", 2, "colour",
       "unknown or malformed field"},
      {"labels: {}\n", 1, "labels", "unknown or malformed field"},
      {"gpuMemoryLabel: 'no good'\n", 1, "no good", "gpuMemoryLabel is not a valid label key"},
  };
  for (const auto& c : cases) {
    auto t = CapabilityLabels::Parse(c.text, "labels.yaml");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.error().code, "K8S_LABEL_TABLE_INVALID") << c.text;
    EXPECT_EQ(t.error().pos.file, "labels.yaml");
    EXPECT_EQ(t.error().pos.line, c.line) << c.text;
    EXPECT_EQ(t.error().value, c.value) << c.text;
    EXPECT_NE(t.error().message.find(c.message_part), std::string::npos) << t.error().message;
    EXPECT_FALSE(t.error().hint.empty());
  }
  auto broken = CapabilityLabels::Parse("capabilityLabels: {x: [", "labels.yaml");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().code, "K8S_LABEL_TABLE_INVALID");
  auto missing = CapabilityLabels::Load("/nonexistent/labels.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, "IO_ERROR");
}

}  // namespace
}  // namespace rsl::k8s
