// seedctl env register|list|inspect|remove, signature check, model list|describe|verify
// (docs/model.md): the flags of each command and the function that runs it. The env and
// model commands work on a state directory (`state_dir`, "" = $RSL_STATE_DIR, else
// ~/.local/state/rsl, the one `seedctl run` uses by default). Functions print to
// stdout/stderr and end a failing command by throwing Exit (cli.h).
#pragma once

#include <string>

#include "model/env_registry.h"

namespace rsl::cli {

struct EnvRegisterFlags {
  std::string state_dir;
  std::string output;  //!< "" (a summary line) | json
  model::RegisterRequest request;
};

//! Inspects IMAGE's interpreter or root and records what it contains.
void RunEnvRegister(const EnvRegisterFlags& flags);

struct EnvListFlags {
  std::string state_dir;
  std::string output;  //!< "" (table) | json | wide
};

void RunEnvList(const EnvListFlags& flags);

struct EnvInspectFlags {
  std::string state_dir;
  std::string output;  //!< "" (summary and packages) | json
  std::string image;
  bool live = false;  //!< inspect again now and list what changed since registration
};

void RunEnvInspect(const EnvInspectFlags& flags);

struct EnvRemoveFlags {
  std::string state_dir;
  std::string image;
};

void RunEnvRemove(const EnvRemoveFlags& flags);

struct SignatureCheckFlags {
  std::string file;     //!< the AIWorkload YAML with spec.model.signature
  std::string outputs;  //!< the directory a step wrote
};

//! Checks every tensor file named after a signature output; exit 1 on a mismatch.
void RunSignatureCheck(const SignatureCheckFlags& flags);

struct ModelListFlags {
  std::string state_dir;
  std::string output;  //!< "" (table) | json | wide
};

void RunModelList(const ModelListFlags& flags);

struct ModelDescribeFlags {
  std::string state_dir;
  std::string output;  //!< "" (text) | json | provenance
  std::string ref;     //!< NAME[:VERSION]
};

void RunModelDescribe(const ModelDescribeFlags& flags);

struct ModelVerifyFlags {
  std::string state_dir;
  std::string uri;  //!< file:///dir or a local directory
};

//! Recomputes the fingerprint of the artifact at `uri` and compares it with the record;
//! exit 1 with MODEL_FINGERPRINT_MISMATCH per difference.
void RunModelVerify(const ModelVerifyFlags& flags);

}  // namespace rsl::cli
