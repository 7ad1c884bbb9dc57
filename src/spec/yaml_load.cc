#include "spec/yaml_load.h"

#include "base/codes.h"
#include "spec/parse_text.h"

namespace rsl::spec {

Result<YAML::Node> LoadYaml(const std::string& text, const std::string& file) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    if (auto tab = TabIndentError(text, e.mark.line + 1, file)) return *tab;
    return Error(codes::kSpecParseError, e.msg)
        .At(SourcePos{file, e.mark.line + 1, e.mark.column + 1});
  }
}

}  // namespace rsl::spec
