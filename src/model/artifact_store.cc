#include "model/artifact_store.h"

#include <map>
#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/env.h"
#include "base/file.h"
#include "base/strings.h"
#include "model/env_registry.h"

namespace rsl::model {
namespace {

using nlohmann::json;

constexpr char kStatementType[] = "https://in-toto.io/Statement/v1";
constexpr char kPredicateType[] = "https://rsl.dev/provenance/model/v1";

json ToJson(const ModelArtifact& a) {
  json files = json::array();
  for (const auto& f : a.files)
    files.push_back({{"path", f.path}, {"sha256", f.sha256}, {"size", f.size}});
  json inputs = json::array();
  for (const auto& d : a.input_descriptors_json) {
    auto parsed = json::parse(d, nullptr, false);
    inputs.push_back(parsed.is_discarded() ? json(d) : parsed);
  }
  auto signature = json::parse(a.signature_json, nullptr, false);
  return {{"id", a.id},
          {"name", a.name},
          {"namespace", a.namespace_},
          {"version", a.version},
          {"framework", a.framework},
          {"dependencies", a.dependencies},
          {"signature", signature.is_discarded() ? json::object() : signature},
          {"fingerprint", a.fingerprint},
          {"buildFingerprint", a.build_fingerprint},
          {"files", files},
          {"uri", a.uri},
          {"state", a.state},
          {"step", a.step},
          {"runId", a.run_id},
          {"workloadId", a.workload_id},
          {"specDigest", a.spec_digest},
          {"image", a.image},
          {"environmentDigest", a.environment_digest},
          {"inputs", inputs},
          {"createdAtMs", a.created_at_ms}};
}

ModelArtifact FromJson(const json& j) {
  ModelArtifact a;
  a.id = j.value("id", int64_t{0});
  a.name = j.value("name", "");
  a.namespace_ = j.value("namespace", "");
  a.version = j.value("version", "");
  a.framework = j.value("framework", "");
  a.dependencies = j.value("dependencies", std::vector<std::string>{});
  if (j.contains("signature")) a.signature_json = j["signature"].dump();
  a.fingerprint = j.value("fingerprint", "");
  a.build_fingerprint = j.value("buildFingerprint", "");
  if (j.contains("files") && j["files"].is_array()) {
    for (const auto& f : j["files"]) {
      a.files.push_back({f.value("path", ""), f.value("sha256", ""), f.value("size", int64_t{0})});
    }
  }
  a.uri = j.value("uri", "");
  a.state = j.value("state", "");
  a.step = j.value("step", "");
  a.run_id = j.value("runId", "");
  a.workload_id = j.value("workloadId", "");
  a.spec_digest = j.value("specDigest", "");
  a.image = j.value("image", "");
  a.environment_digest = j.value("environmentDigest", "");
  if (j.contains("inputs") && j["inputs"].is_array()) {
    for (const auto& d : j["inputs"]) a.input_descriptors_json.push_back(d.dump());
  }
  a.created_at_ms = j.value("createdAtMs", int64_t{0});
  return a;
}

std::string StripSlashes(std::string uri) {
  while (uri.size() > 1 && uri.back() == '/') uri.pop_back();
  return uri;
}

}  // namespace

std::string DirToUri(const std::string& dir) {
  if (dir.find("://") != std::string::npos) return dir;
  return "file://" + StripSlashes(dir);
}

std::optional<std::string> UriToLocalDir(const std::string& uri) {
  if (StartsWith(uri, "file://")) return StripSlashes(uri.substr(7));
  if (uri.find("://") != std::string::npos) return std::nullopt;
  return StripSlashes(uri);
}

Result<std::unique_ptr<ArtifactStore>> ArtifactStore::Open(const std::string& state_dir) {
  auto db = OpenStateDb(state_dir, "model", ModelMigrations());
  if (!db.ok()) return db.error();
  return std::make_unique<ArtifactStore>(std::move(db).value());
}

Result<int64_t> ArtifactStore::Record(const ModelArtifact& artifact) {
  std::lock_guard<std::mutex> lock(mu_);
  ModelArtifact a = artifact;
  a.created_at_ms = Env::Default()->NowMs();
  if (a.state.empty()) a.state = kArtifactStaged;
  int64_t id = 0;
  RSL_RETURN_IF_ERROR(db_->Transaction([&]() -> Status {
    RSL_RETURN_IF_ERROR(
        db_->Run("DELETE FROM model_artifacts WHERE run_id = ? AND step = ?", a.run_id, a.step));
    RSL_RETURN_IF_ERROR(db_->Run(
        "INSERT INTO model_artifacts (name, namespace, version, framework, step, fingerprint, "
        "uri, staging_dir, state, run_id, workload_id, spec_digest, image, environment_digest, "
        "record_json, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        a.name, a.namespace_, a.version, a.framework, a.step, a.fingerprint, StripSlashes(a.uri),
        StripSlashes(a.uri), a.state, a.run_id, a.workload_id, a.spec_digest, a.image,
        a.environment_digest, ToJson(a).dump(), a.created_at_ms));
    id = db_->LastInsertId();
    return Status::Ok();
  }));
  return id;
}

Status ArtifactStore::Commit(const std::string& run_id, const std::string& committed_uri) {
  std::lock_guard<std::mutex> lock(mu_);
  return db_->Run(
      "UPDATE model_artifacts SET state = ?, uri = ? || '/' || step WHERE run_id = ? AND state = "
      "?",
      kArtifactCommitted, StripSlashes(committed_uri), run_id, kArtifactStaged);
}

Status ArtifactStore::Discard(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return db_->Run("DELETE FROM model_artifacts WHERE run_id = ? AND state = ?", run_id,
                  kArtifactStaged);
}

Result<std::vector<ModelArtifact>> ArtifactStore::Query(const std::string& where,
                                                        const std::vector<std::string>& args) {
  std::lock_guard<std::mutex> lock(mu_);
  auto st = db_->Prepare("SELECT id, record_json, uri, state, created_at_ms FROM model_artifacts " +
                         where);
  if (!st.ok()) return st.error();
  for (size_t i = 0; i < args.size(); ++i) st->Bind(static_cast<int>(i + 1), args[i]);
  return st->Rows([](const Stmt& row) {
    auto j = json::parse(row.Text(1), nullptr, false);
    ModelArtifact a = j.is_object() ? FromJson(j) : ModelArtifact{};
    a.id = row.Int(0);
    a.uri = row.Text(2);
    a.state = row.Text(3);
    a.created_at_ms = row.Int(4);
    return a;
  });
}

Result<std::vector<ModelArtifact>> ArtifactStore::List() { return Query("ORDER BY id DESC", {}); }

Result<ModelArtifact> ArtifactStore::Find(const std::string& name, const std::string& version) {
  auto found =
      version.empty()
          ? Query("WHERE name = ? ORDER BY state = 'committed' DESC, id DESC", {name})
          : Query("WHERE name = ? AND version = ? ORDER BY state = 'committed' DESC, id DESC",
                  {name, version});
  if (!found.ok()) return found.error();
  if (!found->empty()) return found->front();
  auto all = List();
  std::vector<std::string> known;
  if (all.ok()) {
    for (const auto& a : *all) {
      std::string k = version.empty() ? a.name : a.name + ":" + a.version;
      if (std::find(known.begin(), known.end(), k) == known.end()) known.push_back(k);
    }
  }
  std::string wanted = version.empty() ? name : name + ":" + version;
  return Error(codes::kNotFound, "no model artifact " + Quote(wanted))
      .Value(wanted)
      .Hint(ClosestHint(
          wanted, known,
          known.empty() ? "no model has been recorded yet" : "known: " + Join(known, ", ")));
}

Result<ModelArtifact> ArtifactStore::FindByUri(const std::string& uri) {
  std::string wanted = StripSlashes(uri);
  std::vector<std::string> candidates = {wanted};
  if (auto local = UriToLocalDir(wanted)) {
    candidates = {DirToUri(*local), *local};
  }
  for (const auto& c : candidates) {
    auto found = Query("WHERE uri = ? ORDER BY id DESC", {c});
    if (!found.ok()) return found.error();
    if (!found->empty()) return found->front();
  }
  return Error(codes::kNotFound, "no model artifact recorded at " + wanted)
      .Value(wanted)
      .Hint("seedctl model list shows every artifact's URI");
}

Result<Verification> VerifyArtifact(const ModelArtifact& artifact, const std::string& dir) {
  if (!IsDirectory(dir)) {
    return Error(codes::kIoError, "artifact directory " + dir + " does not exist").Value(dir);
  }
  spec::ModelSpec outputs_only;  // the signature's outputs decide which .safetensors are models
  auto sig = json::parse(artifact.signature_json, nullptr, false);
  if (sig.is_object() && sig.contains("outputs") && sig["outputs"].is_array()) {
    for (const auto& o : sig["outputs"])
      outputs_only.outputs.push_back({o.value("name", ""), "", {}, {}});
  }
  auto files = FindModelFiles(dir, &outputs_only);
  if (!files.ok()) return files.error();
  auto fp = ComputeFingerprint(dir, *files);
  if (!fp.ok()) return fp.error();
  Verification v;
  v.computed = fp->digest;
  std::map<std::string, std::string> recorded, now;
  for (const auto& f : artifact.files) recorded[f.path] = f.sha256;
  for (const auto& f : fp->files) now[f.path] = f.sha256;
  for (const auto& [path, digest] : recorded) {
    auto it = now.find(path);
    if (it == now.end()) {
      v.differences.push_back(path + ": missing");
    } else if (it->second != digest) {
      v.differences.push_back(path + ": sha256 " + it->second + ", recorded " + digest);
    }
  }
  for (const auto& [path, digest] : now) {
    if (!recorded.count(path))
      v.differences.push_back(path + ": not part of the recorded artifact");
  }
  if (v.differences.empty() && v.computed != artifact.fingerprint) {
    v.differences.push_back("fingerprint " + v.computed + ", recorded " + artifact.fingerprint);
  }
  return v;
}

std::string ArtifactToJson(const ModelArtifact& artifact) { return ToJson(artifact).dump(2); }

std::string ProvenanceStatement(const ModelArtifact& a) {
  json subject = json::array();
  for (const auto& f : a.files) {
    subject.push_back({{"name", f.path}, {"digest", {{"sha256", f.sha256}}}});
  }
  json inputs = json::array();
  for (const auto& d : a.input_descriptors_json) {
    auto parsed = json::parse(d, nullptr, false);
    inputs.push_back(parsed.is_discarded() ? json(d) : parsed);
  }
  json statement = {{"_type", kStatementType},
                    {"subject", subject},
                    {"predicateType", kPredicateType},
                    {"predicate",
                     {{"workloadId", a.workload_id},
                      {"runId", a.run_id},
                      {"step", a.step},
                      {"specDigest", a.spec_digest},
                      {"inputs", inputs},
                      {"environment", {{"image", a.image}, {"digest", a.environment_digest}}},
                      {"model",
                       {{"name", a.name},
                        {"namespace", a.namespace_},
                        {"version", a.version},
                        {"framework", a.framework},
                        {"fingerprint", a.fingerprint},
                        {"uri", a.uri},
                        {"dependencies", a.dependencies}}}}}};
  return statement.dump(2);
}

}  // namespace rsl::model
