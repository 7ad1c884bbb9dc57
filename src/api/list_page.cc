#include "api/list_page.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "api/service.h"
#include "base/codes.h"
#include "base/strings.h"

namespace rsl::api {

std::string ContinueToken(int64_t created_at_ms, const std::string& id) {
  return std::to_string(created_at_ms) + "_" + id;
}

Result<std::pair<int64_t, std::string>> ParseContinueToken(const std::string& token) {
  size_t sep = token.find('_');
  bool ok = sep != std::string::npos && sep > 0 && sep <= 18 && sep + 1 < token.size() &&
            token.find_first_not_of("0123456789") == sep;
  if (!ok) {
    return Error(codes::kInvalidArgument,
                 "continue token " + Quote(token) + " is not one this API gave")
        .Path("continue")
        .Value(token)
        .Hint("pass back metadata.continue of the page before, as it is");
  }
  return std::make_pair(static_cast<int64_t>(std::stoll(token.substr(0, sep))),
                        token.substr(sep + 1));
}

std::string StepContinueToken(int index) { return "step-" + std::to_string(index); }

Result<int> ParseStepContinueToken(const std::string& token) {
  const std::string digits = StartsWith(token, "step-") ? token.substr(5) : "";
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return Error(codes::kInvalidArgument,
                 "continue token " + Quote(token) + " is not one this API gave")
        .Path("continue")
        .Value(token)
        .Hint("pass back status.stepsContinue of the page before, as it is");
  }
  return std::stoi(digits);
}

namespace {

int64_t CreatedAt(const Json& item) {
  const Json& st = item.contains("status") ? item["status"] : Json::object();
  if (st.contains("createdAtMs") && st["createdAtMs"].is_number())
    return st["createdAtMs"].get<int64_t>();
  return 0;
}

std::string IdOf(const Json& item) {
  return item.contains("metadata") ? item["metadata"].value("id", std::string()) : "";
}

}  // namespace

// The whole list, filtered and cut in memory: for services without an index to page on.
Result<Json> Service::ListWorkloadsPage(const WorkloadListQuery& q) {
  std::pair<int64_t, std::string> after;
  if (!q.continue_token.empty()) {
    auto parsed = ParseContinueToken(q.continue_token);
    if (!parsed.ok()) return parsed.error();
    after = *parsed;
  }
  auto l = ListWorkloads(q.namespaces, q.name);
  if (!l.ok()) return l.error();
  std::vector<Json> kept;
  for (auto& item : (*l)["items"]) {
    if (!q.phase.empty() && item["status"].value("phase", std::string()) != q.phase) continue;
    if (!q.label_key.empty()) {
      const Json labels = item["metadata"].value("labels", Json::object());
      auto it = labels.find(q.label_key);
      if (it == labels.end() || !it->is_string() || *it != q.label_value) continue;
    }
    kept.push_back(std::move(item));
  }
  std::stable_sort(kept.begin(), kept.end(), [](const Json& a, const Json& b) {
    return CreatedAt(a) != CreatedAt(b) ? CreatedAt(a) > CreatedAt(b) : IdOf(a) > IdOf(b);
  });
  bool paging = q.limit > 0 || !q.continue_token.empty();
  Json items = Json::array();
  bool more = false;
  for (auto& item : kept) {
    if (!q.continue_token.empty() &&
        !(CreatedAt(item) < after.first ||
          (CreatedAt(item) == after.first && IdOf(item) < after.second))) {
      continue;
    }
    if (q.limit > 0 && static_cast<int64_t>(items.size()) >= q.limit) {
      more = true;
      break;
    }
    items.push_back(std::move(item));
  }
  (*l)["items"] = std::move(items);
  if (paging) {
    (*l)["metadata"]["total"] = kept.size();
    if (more) {
      const Json& last = (*l)["items"].back();
      (*l)["metadata"]["continue"] = ContinueToken(CreatedAt(last), IdOf(last));
    }
  }
  return l;
}

}  // namespace rsl::api
