#include "cli/detect_files.h"

#include <expat.h>

#include <memory>
#include <optional>
#include <vector>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::cli {

namespace {

// What the expat callbacks build: the element path of the current position and the
// property being read.
struct SiteParse {
  XML_Parser parser = nullptr;
  std::string file;
  std::vector<std::string> path;  // open elements, outermost first
  std::string name, value, text;
  bool has_name = false;
  std::map<std::string, std::string> props;
  std::optional<Error> error;  // set by a callback; parsing stops there
};

SourcePos Where(XML_Parser p, const std::string& file) {
  return SourcePos{file, static_cast<int>(XML_GetCurrentLineNumber(p)),
                   static_cast<int>(XML_GetCurrentColumnNumber(p)) + 1};
}

void XMLCALL OnStart(void* data, const XML_Char* element, const XML_Char** /*attrs*/) {
  auto* s = static_cast<SiteParse*>(data);
  if (s->path.empty() && std::string(element) != "configuration") {
    s->error = Error(codes::kConfigInvalid,
                     "the top element is <" + std::string(element) + ">, not <configuration>")
                   .At(Where(s->parser, s->file))
                   .Hint("is this a Hadoop *-site.xml file?");
    XML_StopParser(s->parser, XML_FALSE);
    return;
  }
  s->path.emplace_back(element);
  s->text.clear();
  if (s->path.size() == 2 && s->path[1] == "property") {
    s->name.clear();
    s->value.clear();
    s->has_name = false;
  }
}

void XMLCALL OnEnd(void* data, const XML_Char* /*element*/) {
  auto* s = static_cast<SiteParse*>(data);
  if (s->path.size() == 3 && s->path[1] == "property") {
    if (s->path[2] == "name") {
      s->name = std::string(Trim(s->text));
      s->has_name = true;
    } else if (s->path[2] == "value") {
      s->value = std::string(Trim(s->text));
    }
  } else if (s->path.size() == 2 && s->path[1] == "property" && s->has_name) {
    s->props[s->name] = s->value;
  }
  s->text.clear();
  if (!s->path.empty()) s->path.pop_back();
}

void XMLCALL OnText(void* data, const XML_Char* chars, int len) {
  auto* s = static_cast<SiteParse*>(data);
  s->text.append(chars, static_cast<size_t>(len));
}

}  // namespace

Result<std::map<std::string, std::string>> ParseHadoopSite(const std::string& xml,
                                                           const std::string& file) {
  std::unique_ptr<XML_ParserStruct, void (*)(XML_Parser)> parser(XML_ParserCreate(nullptr),
                                                                 XML_ParserFree);
  if (!parser) return Error(codes::kInternal, "cannot create an XML parser").At({file, 0, 0});
  SiteParse s;
  s.parser = parser.get();
  s.file = file;
  XML_SetUserData(parser.get(), &s);
  XML_SetElementHandler(parser.get(), OnStart, OnEnd);
  XML_SetCharacterDataHandler(parser.get(), OnText);
  if (xml.size() > static_cast<size_t>(INT32_MAX)) {
    return Error(codes::kConfigInvalid, "file too large").At({file, 0, 0});
  }
  XML_Status st = XML_Parse(parser.get(), xml.data(), static_cast<int>(xml.size()), XML_TRUE);
  if (s.error) return *s.error;
  if (st != XML_STATUS_OK) {
    return Error(codes::kConfigInvalid,
                 std::string("malformed XML: ") + XML_ErrorString(XML_GetErrorCode(parser.get())))
        .At(Where(parser.get(), file))
        .Hint("fix or remove the file; Hadoop would not read it either");
  }
  return s.props;
}

Result<std::map<std::string, std::map<std::string, std::string>>> ParseAwsIni(
    const std::string& text, const std::string& file) {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::string section;
  bool in_section = false;
  std::string nested;  // the key of a nested block ("s3 ="), while its indented lines last
  std::vector<std::string> lines = Split(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& raw = lines[i];
    std::string_view line = Trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    const bool indented = raw[0] == ' ' || raw[0] == '\t';
    const SourcePos pos{file, static_cast<int>(i) + 1, 1};
    if (line[0] == '[') {
      if (line.back() != ']') {
        return Error(codes::kConfigInvalid, "a section header without its closing ']'")
            .At(pos)
            .Value(std::string(line))
            .Hint("write [name] or [profile name]");
      }
      section = std::string(Trim(line.substr(1, line.size() - 2)));
      in_section = true;
      nested.clear();
      out[section];
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return Error(codes::kConfigInvalid, "not a [section] or a key = value line")
          .At(pos)
          .Hint("AWS config lines read key = value");
    }
    if (!in_section) {
      return Error(codes::kConfigInvalid, "a key before any [section]")
          .At(pos)
          .Hint("start the file with [default] or [profile NAME]");
    }
    std::string key = ToLower(Trim(line.substr(0, eq)));
    std::string value(Trim(line.substr(eq + 1)));
    if (indented && !nested.empty()) {
      out[section][nested + "." + key] = value;
      continue;
    }
    nested = value.empty() ? key : "";
    if (!value.empty()) out[section][key] = value;
  }
  return out;
}

}  // namespace rsl::cli
