// bundle/bundle.h — `firstfault bundle`: the evidence a helper needs, in one redacted
// tar.gz (bundle.cc); and the environment facts a log states, read with the rules of
// kb/formats/environment.yaml.
#pragma once

#include <string>
#include <vector>

#include "pipeline/pipeline.h"
#include "base/result.h"
#include "kb/kb.h"

namespace ff::app {

struct EnvironmentFact {
  std::string name;     // torch_version, cuda_version, driver_version, nccl_version, gpu_model, world_size, ...
  std::string literal;  // a line must contain it before the regex is tried
  std::string regex;    // RE2; its first group is the value
  std::vector<std::string> examples;  // real lines it must read
};

struct FactValue {
  std::string value;
  std::string source;
  uint64_t line = 0;
  uint64_t count = 0;  // lines that state this value
};

// The facts of the KB's formats/environment.yaml, checked (a regex that does not compile
// or has no group is an error with its file and line).
// `firstfault bundle JOB... -o evidence.tar.gz`.
int run_bundle(const Options& opt);

Result<std::vector<EnvironmentFact>> environment_facts(const std::vector<kb::File>& files);

}  // namespace ff::app
