// Pure text renderings of the controller's JSON objects for seedctl (no I/O, no clock
// except `now_ms` passed in), so golden tests pin them down (tests/api/golden/).
// Times are shown in local time ("2026-11-29 08:05:01"), ages kubectl-style ("5s", "3m").
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace rsl::cli {

using Json = nlohmann::json;

//! "2026-11-29 08:05:01" in local time; "-" for 0.
std::string LocalTime(int64_t ms);
//! kubectl ages: 42s, 5m, 3h, 2d.
std::string Age(int64_t ms, int64_t now_ms);
//! "1.5s", "2m3s", "1h2m"; "-" for negative.
std::string Duration(int64_t ms);
//! Binary units as Kubernetes quantities: "42.1Gi", "512Mi", "0".
std::string BinaryBytes(int64_t bytes);
//! "[########------------]" `width` cells for `percent` (0..100).
std::string ProgressBar(double percent, int width);

//! The seed's four lines: `Workload submitted successfully!`, `ID: ...`, `Status: ...`,
//! `Logs: seedctl workload logs --id ...`. `headline` replaces the first line (rollback).
std::string FormatSubmitted(const Json& workload, const std::string& headline);

//! STATUS / STEP n/m / PROGRESS / CPU / MEMORY_USED / GPU_UTIL lines, then the steps table
//! (with `wide`, node, attempts and exit codes too).
std::string FormatStatus(const Json& workload, bool wide);
//! One line for --watch when piped: "08:05:01 RUNNING step train (2/4) 63%".
std::string FormatStatusLine(const Json& workload);
//! A serving step's `status.serving`: ENDPOINT, REPLICAS ready/desired, UTILIZATION and a row
//! per replica (node, port, state, restarts, utilization).
std::string ServingText(const Json& serving);
//! Per-step progress bars for --watch on a terminal.
std::string FormatStatusBars(const Json& workload);

//! `workload list`: ID NAME [NAMESPACE] VERSION STATUS STEPS AGE [+ DIGEST CREATED-BY];
//! STEPS is succeeded/total, skipped steps counted apart ("3/4 (1 skipped)").
std::string FormatList(const Json& list, bool wide, bool show_namespace, int64_t now_ms);
//! `workload history --name`: VERSION ID STATUS DIGEST CREATED BY ROLLBACK-OF.
std::string FormatHistory(const Json& list);
//! `workload events`: TIME TYPE REASON STEP MESSAGE, oldest first.
std::string FormatEvents(const Json& events);
//! `events --watch`: the header, then one line per event (columns separated by two spaces,
//! not aligned: the widths of later events are not known yet).
std::string FormatEventHeader();
std::string FormatEventLine(const Json& event);
//! `workload describe`: kubectl-like sections; the spec as YAML. `limit`: the page size the
//! user asked for (-1: the server's default), repeated in the hint for the next page.
std::string FormatDescribe(const Json& described, int64_t limit = -1);
//! `node list`: NAME STATUS CPU MEMORY GPUS CAPABILITIES.
std::string FormatNodes(const Json& nodes, bool wide);
//! `cluster status`: the seed's lines.
std::string FormatClusterStatus(const Json& status);
//! `secret list` / `configmap list` of namespace `ns`: NAME KEYS UPDATED.
std::string FormatKeyValueList(const Json& list, const std::string& ns);
//! `audit`: TIME SUBJECT VERB RESOURCE NAMESPACE OBJECT RESULT MESSAGE.
std::string FormatAudit(const Json& entries);

//! JSON as block-style YAML (for -o yaml and describe's spec).
std::string JsonToYaml(const Json& j);

}  // namespace rsl::cli
