// The configuration files of the systems `rsl-controller detect` looks for: Hadoop's
// *-site.xml (core-site, hdfs-site, yarn-site) and the AWS CLI's INI files (~/.aws/config,
// ~/.aws/credentials). Pure parsers of text already read: they never touch the file system.
//
// Errors: CONFIG_INVALID at `file:line:column` with the cause (the XML parser's message, the
// line that is not `key = value`), so that detect can warn about the file and go on.
#pragma once

#include <map>
#include <string>

#include "base/status.h"

namespace rsl::cli {

//! The properties of a Hadoop configuration file: each
//! `<configuration><property><name>N</name><value>V</value></property>...` as N -> V (name
//! and value trimmed; a later property of the same name wins, as in Hadoop). Other elements
//! (`<final>`, `<description>`, XInclude) are ignored. Errors: malformed XML (parsed with
//! expat), a top element other than `<configuration>`.
Result<std::map<std::string, std::string>> ParseHadoopSite(const std::string& xml,
                                                           const std::string& file);

//! An INI file of the AWS CLI: section -> key -> value. The section names are kept as
//! written ("default", "profile dev" in ~/.aws/config, "dev" in ~/.aws/credentials); keys are
//! lower-cased; '#' and ';' start comment lines. An indented line continues a nested block
//! (`s3 =` followed by `  endpoint_url = ...`): its keys are stored as "s3.endpoint_url".
//! Errors: a line that is neither a section, a `key = value`, a comment nor blank; a key
//! before any section.
Result<std::map<std::string, std::map<std::string, std::string>>> ParseAwsIni(
    const std::string& text, const std::string& file);

}  // namespace rsl::cli
