#include "data/admission.h"

#include <cstdio>

#include "data/catalog.h"

namespace rsl::data {

Status AdmitInput(const spec::Workload& workload, const std::string& state_dir,
                  const ValidateOptions& options, InputAdmission* report) {
  if (!workload.data.input) return Status::Ok();
  const spec::DataInput& input = *workload.data.input;
  std::unique_ptr<Catalog> catalog;
  if (!state_dir.empty()) {
    auto opened = Catalog::Open(state_dir);
    if (opened.ok()) catalog = std::move(*opened);  // file:// inputs work without one
  }
  ValidationReport r = Validate(input, catalog.get(), options);
  report->report_json = r.ToJson().dump();
  if (!r.descriptor.uri.empty())
    report->input_descriptors_json.push_back(r.descriptor.ToJson().dump());
  if (!r.status.ok()) {
    Error e = r.status.error();
    report->event_reason = kDataValidationFailed;
    report->event_message = e.code + " " + (e.path.empty() ? "" : e.path + ": ") + e.message;
    if (e.pos.file.empty()) e.pos = workload.PosOf("spec.data.input");
    return e;
  }
  char msg[160];
  std::snprintf(
      msg, sizeof msg, "input: %lld rows in %lld file(s), %s, all checks passed in %.2f s",
      static_cast<long long>(r.rows), static_cast<long long>(r.files), r.format.c_str(), r.seconds);
  report->event_message = msg;
  return Status::Ok();
}

}  // namespace rsl::data
