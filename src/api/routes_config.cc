// Configuration: who the caller is, configmaps and secrets (write-only values).
#include "api/routes.h"
#include "base/codes.h"
#include "base/strings.h"

namespace rsl::api::routes {

namespace {

enum class Kind { kConfigMap, kSecret };

const char* KindName(Kind kind) { return kind == Kind::kSecret ? "Secret" : "ConfigMap"; }
const char* ResourceName(Kind kind) { return kind == Kind::kSecret ? "secrets" : "configmaps"; }

Result<std::map<std::string, std::string>> ParseData(const Json& body) {
  std::map<std::string, std::string> data;
  if (!body.contains("data") || !body["data"].is_object()) {
    return Error(codes::kInvalidArgument, "body needs a `data` object of string values")
        .Path("data")
        .Hint("send {\"name\": \"...\", \"data\": {\"KEY\": \"VALUE\"}}");
  }
  for (const auto& [k, v] : body["data"].items()) {
    if (!v.is_string()) {
      return Error(codes::kInvalidArgument, "value of " + Quote(k) + " is not a string")
          .Path("data." + k);
    }
    data[k] = v.get<std::string>();
  }
  return data;
}

Status CheckName(const std::string& name, const std::string& what) {
  bool ok = !name.empty() && name.size() <= 253;
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.');
  }
  if (!ok) {
    return Error(codes::kInvalidArgument, "invalid " + what + " name " + Quote(name))
        .Value(name)
        .Hint("a DNS-1123 subdomain: a-z, 0-9, '-', '.'");
  }
  return Status::Ok();
}

Result<Reply> Create(const Services& s, RequestContext& c, Kind kind) {
  std::string ns = c.PathParam("ns");
  std::string resource = ResourceName(kind);
  if (!c.who.CanWrite(ns)) {
    Error e = Forbidden(c.who, "create " + resource, ns);
    RecordAudit(s, c.who, "create", resource, ns, "", e, "");
    return e;
  }
  auto body = Json::parse(c.req.body, nullptr, false);
  if (!body.is_object()) {
    return Error(codes::kInvalidArgument, "body is not a JSON object")
        .Hint("send {\"name\": \"...\", \"data\": {\"KEY\": \"VALUE\"}}");
  }
  std::string name = body.value("name", std::string());
  RSL_RETURN_IF_ERROR(CheckName(name, kind == Kind::kSecret ? "secret" : "configmap"));
  auto data = ParseData(body);
  if (!data.ok()) return data.error();
  std::vector<std::string> warnings;  // e.g. a secret value too short to be masked
  Status st = kind == Kind::kSecret ? s.service->PutSecret(ns, name, *data, &warnings)
                                    : s.service->PutConfigMap(ns, name, *data);
  std::vector<std::string> keys;
  for (const auto& [k, v] : *data) keys.push_back(k);
  RecordAudit(s, c.who, "create", resource, ns, name, st, "keys: " + Join(keys, ","));
  if (!st.ok()) return st.error();
  Json obj = {{"apiVersion", kApiVersion},
              {"kind", KindName(kind)},
              {"metadata", {{"name", name}, {"namespace", ns}}}};
  if (kind == Kind::kSecret) {
    obj["keys"] = keys;  // write-only: never the values
    if (!warnings.empty()) obj["warnings"] = warnings;
  } else {
    obj["data"] = *data;
  }
  return JsonReply(obj, 201);
}

Result<Reply> ListConfigObjects(const Services& s, RequestContext& c, Kind kind) {
  std::string ns = c.PathParam("ns");
  if (!c.who.CanRead(ns)) return Forbidden(c.who, "list", ns);
  auto j = kind == Kind::kSecret ? s.service->ListSecrets(ns) : s.service->ListConfigMaps(ns);
  if (!j.ok()) return j.error();
  return JsonReply(*j);
}

}  // namespace

Result<Reply> WhoAmI(const Services&, RequestContext& c) {
  return JsonReply({{"subject", c.who.subject},
                    {"role", RoleName(c.who.role)},
                    {"namespaces", c.who.namespaces},
                    {"defaultNamespace", c.who.DefaultNamespace()}});
}

Result<Reply> CreateConfigMap(const Services& s, RequestContext& c) {
  return Create(s, c, Kind::kConfigMap);
}

Result<Reply> CreateSecret(const Services& s, RequestContext& c) {
  return Create(s, c, Kind::kSecret);
}

Result<Reply> ListConfigMaps(const Services& s, RequestContext& c) {
  return ListConfigObjects(s, c, Kind::kConfigMap);
}

Result<Reply> ListSecrets(const Services& s, RequestContext& c) {
  return ListConfigObjects(s, c, Kind::kSecret);
}

}  // namespace rsl::api::routes
