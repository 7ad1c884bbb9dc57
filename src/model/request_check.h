// Requests to a serving replica checked against model.signature.inputs (SPEC.md "model"), the
// input-side twin of signature.h's output checks. A serving replica gets the signature as
// JSON in RSL_MODEL_SIGNATURE (SignatureJson); python/rsl_signature.py is the same check for
// users' Python servers, and tests/model/request_cases.json is the table both must agree on.
//
// A request carries its tensors as JSON nested lists, either under "inputs"
// ({"inputs": {"user_features": [[...]]}}) or as the body's own members
// ({"user_features": [[...]]}). What is checked, in the signature's order, then the request's:
//   user_features missing from the request (expected float32 [1, 128])
//   user_features.shape expected [1, 128], got [1, 127]
//   user_features.shape expected [1, 128], got ragged nested lists at index [0, 5]
//   user_features.dtype expected float32, got string at index [0, 3]
//   user_feature is not an input of the signature
// Shapes: same rank, equal dims, -1 matches any size; an empty signature shape is not
// checked. Dtypes by family: float* takes JSON numbers, the int/uint types JSON integers,
// bool true/false, string strings. Values (ranges, NaN) are not checked.
// Every mismatch's code is INPUT_SCHEMA_MISMATCH.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "spec/workload.h"

namespace rsl::model {

//! The code of every mismatch. Kept here rather than in base/codes.h, which every file
//! includes: only serving replicas answer with it (docs/errors.md lists it).
inline constexpr char kInputSchemaMismatch[] = "INPUT_SCHEMA_MISMATCH";

//! The environment variable a serving replica finds its model's signature in.
inline constexpr char kSignatureEnv[] = "RSL_MODEL_SIGNATURE";

//! {"inputs": [{"name", "dtype", "shape"}], "outputs": [{"name", "dtype", "shape"[, "range"]}]}
//! as compact JSON: what RSL_MODEL_SIGNATURE holds.
std::string SignatureJson(const spec::ModelSpec& model);

//! The inputs of SignatureJson's form (its "inputs" list). Errors: INVALID_ARGUMENT naming the
//! entry that is not {"name": string, "dtype": string, "shape": [integers]}.
Result<std::vector<spec::TensorSpec>> SignatureInputsFromJson(const nlohmann::json& signature);

//! One way a request disagrees with the signature.
struct InputMismatch {
  std::string tensor;    //!< the input's name; "" for the body as a whole
  std::string field;     //!< "name" (missing or unknown), "shape", "dtype" or "body"
  std::string expected;  //!< "float32 [1, 128]", "[1, 128]", "float32", "a signature input"
  std::string actual;    //!< "missing", "[1, 127]", "string at index [0, 3]", "unknown"
  std::string message;   //!< the sentence of the header's examples
  std::string hint;
  std::string path;  //!< spec.model.signature.inputs[i] ("" for unknown names and the body)

  //! INPUT_SCHEMA_MISMATCH with the path, message and hint.
  Error ToError() const;
};

//! Every mismatch of `body` (a parsed request) against `inputs`, in the signature's order, then
//! unknown names sorted bytewise. A body that is not a JSON object is one mismatch (field
//! "body"). An empty result: the request fits.
std::vector<InputMismatch> CheckRequest(const std::vector<spec::TensorSpec>& inputs,
                                        const nlohmann::json& body);

//! The JSON a replica answers 400 with: {"error": <first>, "errors": [<all>]}, each
//! {"code": "INPUT_SCHEMA_MISMATCH", "tensor", "field", "expected", "actual", "message",
//! "hint", "path"}. REQUIRES: !mismatches.empty().
nlohmann::json RequestErrorJson(const std::vector<InputMismatch>& mismatches);

}  // namespace rsl::model
