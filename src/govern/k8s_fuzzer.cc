// libFuzzer target: manifests/dumps of any shape through the loader and every audit that
// reads them. Must never crash, hang or trip a sanitizer; bad input is a finding or an Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "govern/crd_audit.h"
#include "govern/crd_diff.h"
#include "govern/k8s_objects.h"
#include "govern/lint.h"
#include "govern/qos.h"
#include "govern/shadow_pods.h"
#include "govern/tenancy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rsl::govern;  // NOLINT
  std::string text(reinterpret_cast<const char*>(data), size);
  auto objs = ParseObjects(text, "fuzz.yaml");
  (void)ParseQuantity(text);
  auto accesses = ExtractUnregisteredAccesses(text);
  if (!objs.ok()) return 0;
  Report r("fuzz", {});
  // A field of the wrong JSON type surfaces as nlohmann::json::exception, which seedctl turns
  // into an INVALID_ARGUMENT error (govern_cmd.cc Safely); anything else is a bug.
  try {
    AnalyzeQos(*objs, QosOptions{}, &r);
    Lint(*objs, &r);
    DiffCrds(*objs, *objs, &r);
    FindShadowPods(*objs, ShadowOptions{}, &r);
    AuditCrdAccesses(&accesses, *objs, "fuzz.log", &r);
    AuditTenancy(*objs, &r);
    (void)r.RenderSarif();
  } catch (const nlohmann::json::exception&) {
  }
  return 0;
}
