// Model signatures (SPEC.md "model"): checking tensors against model.signature.outputs,
// before a step starts (what it declares it will write) and after it ends (what it wrote).
//
// Messages name the tensor, the expectation, what was found and, for values, the first
// offending index (in C order), e.g.
//   fraud_prob.dtype expected float32, got int32
//   fraud_prob.shape expected [-1, 1], got [4, 2]
//   fraud_prob.range expected values in [0, 1], got 1.5 at index [3, 0]
//   fraud_prob.values expected finite numbers, got nan at index [2, 0]
// Every error's code is OUTPUT_SCHEMA_MISMATCH.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "model/tensor.h"
#include "spec/workload.h"

namespace rsl::model {

//! Checks one tensor against one signature entry: dtype; shape (same rank, equal dims, -1
//! matches any size; an empty expected shape is not checked); values: NaN and +-Inf are
//! always violations for float tensors, and with constraints.range every value must lie in
//! [lo, hi]. Values are checked only when dtype and shape match. `file` becomes the error's
//! position, `sig_path` its field path (spec.model.signature.outputs[i]).
Errors CheckTensor(const spec::TensorSpec& expected, const Tensor& actual, const std::string& file,
                   const std::string& sig_path);

//! Before a run: every step's declared `outputs` whose name is a signature output must not
//! contradict it (dtype, shape where both are fixed, range within the signature's range).
//! Errors point at spec.pipeline.steps[i].outputs[j].<field> and its source position.
Errors CheckDeclaredOutputs(const spec::Workload& workload);

//! The result of checking a directory of outputs.
struct OutputCheck {
  Errors errors;
  std::vector<std::string> checked;  //!< "fraud_prob.npy", "preds.safetensors:fraud_prob", ...
};

//! After a step: every `<output name>.npy` and every tensor named after a signature output
//! inside a `.safetensors` file, anywhere under `dir` (relative names in messages). Other
//! tensors are not checked, whatever their dtype; a signature tensor of a dtype RSL does not
//! read (safetensors.h `unread`) is a dtype mismatch. A file
//! that cannot be read as its format is an error too (OUTPUT_SCHEMA_MISMATCH carrying the
//! reader's message). Files are visited in sorted order.
OutputCheck CheckOutputDir(const spec::ModelSpec& model, const std::string& dir);

//! Every regular file under `dir`, as paths relative to it, sorted bytewise; symlinks are
//! not followed. Shared with the fingerprint (fingerprint.h).
Result<std::vector<std::string>> ListFilesRecursive(const std::string& dir);

//! The shortest decimal spelling that reads back as the same value of `dtype` ("1.9" for a
//! float32 1.9, not 1.899999976158142), or "nan", "inf", "-inf".
std::string FormatNumber(double v, DType dtype = DType::kFloat64);

}  // namespace rsl::model
