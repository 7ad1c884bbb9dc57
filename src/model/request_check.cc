#include "model/request_check.h"

#include <algorithm>

#include "base/codes.h"
#include "base/strings.h"
#include "model/dtype.h"
#include "model/tensor.h"

namespace rsl::model {
namespace {

using json = nlohmann::json;

std::string InputPath(size_t i) { return "spec.model.signature.inputs[" + std::to_string(i) + "]"; }

// "float32 [1, 128]", or "float32" when the signature leaves the shape open.
std::string Describe(const spec::TensorSpec& t) {
  return t.shape.empty() ? t.dtype : t.dtype + " " + ShapeToString(t.shape);
}

// How a JSON value that is not a list reads in messages: its dtype family.
const char* Family(const json& v) {
  if (v.is_boolean()) return "bool";
  if (v.is_number_integer()) return "int";
  if (v.is_number()) return "float";
  if (v.is_string()) return "string";
  if (v.is_null()) return "null";
  if (v.is_object()) return "object";
  return "list";
}

// Whether a leaf of family `family` is an element of `dtype`. Unknown dtypes take anything
// (validation refuses them before a run).
bool FamilyFits(const std::string& dtype, const std::string& family) {
  auto d = DTypeFromName(dtype);
  if (!d) return true;
  if (IsFloat(*d)) return family == "float" || family == "int";
  if (IsInteger(*d)) return family == "int";
  if (*d == DType::kBool) return family == "bool";
  return family == "string";
}

// The shape read along first elements: [[1, 2], [3, 4]] -> [2, 2]; a scalar -> [].
std::vector<int64_t> FirstShape(const json& v) {
  std::vector<int64_t> shape;
  for (const json* p = &v; p->is_array(); p = &(*p)[0]) {
    shape.push_back(static_cast<int64_t>(p->size()));
    if (p->empty()) break;
  }
  return shape;
}

// The first place (depth first, C order) where `v` is not a tensor of `shape`: a list of another
// length, a list where a number belongs or a number where a list belongs. REQUIRES: the
// recursion is bounded by shape.size(), which the caller keeps to the signature's rank.
bool FindRagged(const json& v, const std::vector<int64_t>& shape, size_t depth,
                std::vector<int64_t>* index) {
  bool list_here = depth < shape.size();
  if (v.is_array() != list_here) return true;
  if (!list_here) return false;
  if (static_cast<int64_t>(v.size()) != shape[depth]) return true;
  for (size_t i = 0; i < v.size(); ++i) {
    index->push_back(static_cast<int64_t>(i));
    if (FindRagged(v[i], shape, depth + 1, index)) return true;
    index->pop_back();
  }
  return false;
}

// The first leaf (depth first, C order) whose family `dtype` does not take, with its index.
// Iterative: a request may nest lists as deep as it likes.
const json* FindBadLeaf(const json& v, const std::string& dtype, std::vector<int64_t>* index) {
  struct Frame {
    const json* list;
    size_t next;
  };
  if (!v.is_array()) return FamilyFits(dtype, Family(v)) ? nullptr : &v;
  std::vector<Frame> stack{{&v, 0}};
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next == top.list->size()) {
      stack.pop_back();
      if (!index->empty()) index->pop_back();
      continue;
    }
    const json& child = (*top.list)[top.next];
    index->push_back(static_cast<int64_t>(top.next++));
    if (child.is_array()) {
      stack.push_back({&child, 0});
      continue;
    }
    if (!FamilyFits(dtype, Family(child))) return &child;
    index->pop_back();
  }
  return nullptr;
}

InputMismatch InputMismatchOf(const spec::TensorSpec& t, size_t i, std::string field,
                              std::string expected, std::string actual, std::string message) {
  InputMismatch m;
  m.tensor = t.name;
  m.field = std::move(field);
  m.expected = std::move(expected);
  m.actual = std::move(actual);
  m.message = std::move(message);
  m.hint = "send " + t.name + " as " + Describe(t);
  m.path = InputPath(i);
  return m;
}

void CheckRequestTensor(const spec::TensorSpec& t, size_t i, const json& value,
                        std::vector<InputMismatch>* out) {
  if (!t.shape.empty()) {
    std::vector<int64_t> shape = FirstShape(value);
    std::string want = ShapeToString(t.shape);
    bool ok = shape.size() == t.shape.size();
    for (size_t k = 0; ok && k < shape.size(); ++k) {
      ok = t.shape[k] == -1 || t.shape[k] == shape[k];
    }
    std::vector<int64_t> at;
    if (!ok) {
      std::string got = ShapeToString(shape);
      out->push_back(InputMismatchOf(t, i, "shape", want, got,
                                     t.name + ".shape expected " + want + ", got " + got));
    } else if (FindRagged(value, shape, 0, &at)) {
      std::string got = "ragged nested lists at index " + ShapeToString(at);
      out->push_back(InputMismatchOf(t, i, "shape", want, got,
                                     t.name + ".shape expected " + want + ", got " + got));
    }
  }
  std::vector<int64_t> at;
  if (const json* bad = FindBadLeaf(value, t.dtype, &at)) {
    std::string got = Family(*bad);
    if (value.is_array()) got += " at index " + ShapeToString(at);
    out->push_back(InputMismatchOf(t, i, "dtype", t.dtype, got,
                                   t.name + ".dtype expected " + t.dtype + ", got " + got));
  }
}

}  // namespace

std::string SignatureJson(const spec::ModelSpec& model) {
  auto list = [](const std::vector<spec::TensorSpec>& tensors) {
    json out = json::array();
    for (const auto& t : tensors) {
      json j = {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}};
      if (t.int_range) {
        j["range"] = {t.int_range->first, t.int_range->second};
      } else if (t.range) {
        j["range"] = {t.range->first, t.range->second};
      }
      out.push_back(std::move(j));
    }
    return out;
  };
  json sig = {{"inputs", list(model.inputs)}, {"outputs", list(model.outputs)}};
  return sig.dump();
}

Result<std::vector<spec::TensorSpec>> SignatureInputsFromJson(const json& signature) {
  if (!signature.is_object() || !signature.contains("inputs") || !signature["inputs"].is_array()) {
    return Error(codes::kInvalidArgument, "a signature is {\"inputs\": [...], \"outputs\": [...]}");
  }
  std::vector<spec::TensorSpec> inputs;
  const json& list = signature["inputs"];
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    bool ok = e.is_object() && e.contains("name") && e["name"].is_string() && e.contains("dtype") &&
              e["dtype"].is_string() && (!e.contains("shape") || e["shape"].is_array());
    if (ok && e.contains("shape")) {
      for (const auto& d : e["shape"]) ok = ok && d.is_number_integer();
    }
    if (!ok) {
      return Error(codes::kInvalidArgument,
                   "inputs[" + std::to_string(i) +
                       "] is not {\"name\": string, \"dtype\": string, \"shape\": [integers]}");
    }
    spec::TensorSpec t;
    t.name = e["name"].get<std::string>();
    t.dtype = e["dtype"].get<std::string>();
    if (e.contains("shape")) t.shape = e["shape"].get<std::vector<int64_t>>();
    inputs.push_back(std::move(t));
  }
  return inputs;
}

Error InputMismatch::ToError() const {
  Error e(kInputSchemaMismatch, message);
  if (!path.empty()) e.Path(path);
  if (!hint.empty()) e.Hint(hint);
  return e;
}

std::vector<InputMismatch> CheckRequest(const std::vector<spec::TensorSpec>& inputs,
                                        const json& body) {
  std::vector<InputMismatch> out;
  std::vector<std::string> names;
  for (const auto& t : inputs) names.push_back(t.name);
  auto example = [&names] {
    std::string s = "send {\"inputs\": {";
    for (size_t k = 0; k < names.size(); ++k) s += (k ? ", \"" : "\"") + names[k] + "\": [...]";
    return s + "}}";
  };
  if (!body.is_object()) {
    InputMismatch m;
    m.field = "body";
    m.expected = "a JSON object of input tensors";
    m.actual = Family(body);
    m.message = "the request body expected a JSON object of input tensors, got " + m.actual;
    m.hint = example();
    out.push_back(std::move(m));
    return out;
  }
  // {"inputs": {...}} unless the signature itself has an input named "inputs".
  bool nested = body.contains("inputs") && body["inputs"].is_object() &&
                std::find(names.begin(), names.end(), "inputs") == names.end();
  const json& tensors = nested ? body["inputs"] : body;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const spec::TensorSpec& t = inputs[i];
    auto it = tensors.find(t.name);
    if (it == tensors.end()) {
      InputMismatch m =
          InputMismatchOf(t, i, "name", Describe(t), "missing",
                          t.name + " missing from the request (expected " + Describe(t) + ")");
      out.push_back(std::move(m));
      continue;
    }
    CheckRequestTensor(t, i, *it, &out);
  }
  std::vector<std::string> unknown;
  for (const auto& [key, value] : tensors.items()) {
    if (std::find(names.begin(), names.end(), key) == names.end()) unknown.push_back(key);
  }
  std::sort(unknown.begin(), unknown.end());
  for (const auto& name : unknown) {
    InputMismatch m;
    m.tensor = name;
    m.field = "name";
    m.expected = "a signature input";
    m.actual = "unknown";
    m.message = name + " is not an input of the signature";
    m.hint = ClosestHint(name, names, "the signature's inputs: " + Join(names, ", "));
    out.push_back(std::move(m));
  }
  return out;
}

json RequestErrorJson(const std::vector<InputMismatch>& mismatches) {
  json all = json::array();
  for (const auto& m : mismatches) {
    all.push_back({{"code", kInputSchemaMismatch},
                   {"tensor", m.tensor},
                   {"field", m.field},
                   {"expected", m.expected},
                   {"actual", m.actual},
                   {"message", m.message},
                   {"hint", m.hint},
                   {"path", m.path}});
  }
  return {{"error", all.at(0)}, {"errors", all}};
}

}  // namespace rsl::model
