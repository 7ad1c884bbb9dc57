#include "api/sse.h"

namespace rsl::api {

std::vector<SseMessage> SseParser::Feed(std::string_view piece) {
  buffer_.append(piece);
  std::vector<SseMessage> out;
  size_t start = 0;
  for (;;) {
    size_t end = buffer_.find("\n\n", start);
    if (end == std::string::npos) break;
    SseMessage m;
    bool has_data = false;
    size_t line_start = start;
    while (line_start < end) {
      size_t nl = buffer_.find('\n', line_start);
      if (nl == std::string::npos || nl > end) nl = end;
      std::string_view line(buffer_.data() + line_start, nl - line_start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      size_t colon = line.find(':');
      if (colon != 0) {  // a line starting with ':' is a comment
        std::string_view field = line.substr(0, colon);
        std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
        if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        if (field == "event") {
          m.type = std::string(value);
        } else if (field == "data") {
          if (has_data) m.data += '\n';
          m.data.append(value);
          has_data = true;
        }
      }
      line_start = nl + 1;
    }
    if (has_data) out.push_back(std::move(m));
    start = end + 2;
  }
  buffer_.erase(0, start);
  return out;
}

void ApplyWatchEvent(const std::string& type, const nlohmann::json& data,
                     nlohmann::json* workload) {
  if (type == "workload") {
    *workload = data;
  } else if (type == "status") {
    nlohmann::json steps = (*workload)["status"].value("steps", nlohmann::json::array());
    (*workload)["status"] = data;
    (*workload)["status"]["steps"] = std::move(steps);
  } else if (type == "step") {
    nlohmann::json& steps = (*workload)["status"]["steps"];
    if (!steps.is_array()) steps = nlohmann::json::array();
    std::string name = data.value("name", std::string());
    for (auto& s : steps) {
      if (s.value("name", std::string()) == name) {
        s = data;
        return;
      }
    }
    steps.push_back(data);
  }
}

}  // namespace rsl::api
