#pragma once

// Kubernetes object names and label values made from RSL names.
//
// RSL's workload, step and namespace names are wider than what the API server accepts: an
// object name must be a DNS-1123 subdomain (lower case alphanumerics, '-' and '.', at most 253,
// starting and ending alphanumeric), most names the backend builds must also be DNS-1123 labels
// (at most 63, no '.'), and label values at most 63 of [A-Za-z0-9._-], starting and ending
// alphanumeric. These functions map any string onto a valid name deterministically: the
// readable part kept where it fits, and a short hash of the original appended whenever
// anything was changed or cut, so that two different RSL names never meet in one Kubernetes name.

#include <string>
#include <string_view>

namespace rsl::k8s {

// The longest DNS-1123 label (Pod, Service, Secret names the backend makes; port names aside).
inline constexpr size_t kMaxLabelName = 63;

// `text` as a DNS-1123 label of at most `max_len` (<= 63, >= 12) characters.
std::string DnsLabel(std::string_view text, size_t max_len = kMaxLabelName);

// `readable` as a DNS-1123 label of at most `max_len` characters that always ends with
// `-<hash of key>`: for names built from several RSL names, where `key` joins them
// unambiguously (e.g. with '/', which no RSL name holds) so that no other combination meets it.
std::string HashedDnsLabel(std::string_view readable, std::string_view key,
                           size_t max_len = kMaxLabelName);

// `text` as a label value: unchanged where already valid, otherwise mapped and hashed.
// The empty string is a valid label value and stays empty.
std::string LabelValue(std::string_view text);

// True where `text` is already a valid DNS-1123 label / label value.
bool IsDnsLabel(std::string_view text);
bool IsLabelValue(std::string_view text);

}  // namespace rsl::k8s
