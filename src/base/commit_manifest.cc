#include "base/commit_manifest.h"

#include <nlohmann/json.hpp>

#include "base/codes.h"

namespace rsl {
namespace {

using Json = nlohmann::json;

Error Bad(const std::string& path, const std::string& message) {
  return Error(codes::kDataFormatError, kCommitManifestName + std::string(": ") + message)
      .Path(path);
}

std::string FieldPath(const std::string& path, const char* key) {
  return path.empty() ? key : path + "." + key;
}

// The field `key` of `obj` into *out when present; an error when it has another type.
Status Field(const Json& obj, const char* key, const std::string& path, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::Ok();
  if (!it->is_string()) return Bad(FieldPath(path, key), "expected a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

Status Field(const Json& obj, const char* key, const std::string& path, int64_t* out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::Ok();
  if (!it->is_number_integer()) return Bad(FieldPath(path, key), "expected an integer");
  *out = it->get<int64_t>();
  return Status::Ok();
}

// The array `key` of `obj` (absent: empty), each element an object handed to `each`.
template <typename T, typename Fn>
Status Array(const Json& obj, const char* key, std::vector<T>* out, Fn each) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::Ok();
  if (!it->is_array()) return Bad(key, "expected an array");
  for (size_t i = 0; i < it->size(); ++i) {
    std::string path = std::string(key) + "[" + std::to_string(i) + "]";
    const Json& e = (*it)[i];
    if (!e.is_object()) return Bad(path, "expected an object");
    T item;
    RSL_RETURN_IF_ERROR(each(e, path, &item));
    out->push_back(std::move(item));
  }
  return Status::Ok();
}

}  // namespace

std::string CommitManifestJson(const CommitManifest& m) {
  Json j = Json::object();
  if (!m.run_id.empty()) j["run_id"] = m.run_id;
  if (!m.workload_id.empty()) j["workload_id"] = m.workload_id;
  if (m.committed_at != 0) j["committed_at"] = m.committed_at;
  j["outputs"] = Json::array();
  for (const auto& o : m.outputs) {
    j["outputs"].push_back({{"step", o.step}, {"uri", o.uri}, {"bytes", o.bytes}});
  }
  j["files"] = Json::array();
  for (const auto& f : m.files) {
    j["files"].push_back({{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}});
  }
  return j.dump(2) + "\n";
}

Result<CommitManifest> ParseCommitManifest(std::string_view text) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad("", "not valid JSON");
  if (!j.is_object()) return Bad("", "expected a JSON object");
  CommitManifest m;
  RSL_RETURN_IF_ERROR(Field(j, "run_id", "", &m.run_id));
  RSL_RETURN_IF_ERROR(Field(j, "workload_id", "", &m.workload_id));
  RSL_RETURN_IF_ERROR(Field(j, "committed_at", "", &m.committed_at));
  RSL_RETURN_IF_ERROR(Array(j, "outputs", &m.outputs,
                            [](const Json& e, const std::string& path, CommitManifest::Output* o) {
                              RSL_RETURN_IF_ERROR(Field(e, "step", path, &o->step));
                              RSL_RETURN_IF_ERROR(Field(e, "uri", path, &o->uri));
                              return Field(e, "bytes", path, &o->bytes);
                            }));
  RSL_RETURN_IF_ERROR(Array(j, "files", &m.files,
                            [](const Json& e, const std::string& path, CommitManifest::File* f) {
                              RSL_RETURN_IF_ERROR(Field(e, "path", path, &f->path));
                              RSL_RETURN_IF_ERROR(Field(e, "size", path, &f->size));
                              RSL_RETURN_IF_ERROR(Field(e, "sha256", path, &f->sha256));
                              if (f->path.empty()) return Status(Bad(path + ".path", "missing"));
                              return Status::Ok();
                            }));
  return m;
}

}  // namespace rsl
