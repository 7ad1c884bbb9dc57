#pragma once

// The stable error codes of the Kubernetes layer (docs/errors.md lists what each means), beside
// base/codes.h's.

namespace rsl::codes {

//! A step requests a GPU capability the capability -> node label table does not map.
inline constexpr char kK8sCapabilityUnmapped[] = "K8S_CAPABILITY_UNMAPPED";
//! A capability -> node label table file that does not parse or holds a bad entry.
inline constexpr char kK8sLabelTableInvalid[] = "K8S_LABEL_TABLE_INVALID";
//! A value no Kubernetes field can carry (e.g. a stabilization window over an hour).
inline constexpr char kK8sNotRepresentable[] = "K8S_NOT_REPRESENTABLE";

}  // namespace rsl::codes
