// controls/controls.h — `diff` against a healthy control and `verify` after a fix.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "analyze/diagnosis.h"
#include "pipeline/pipeline.h"

namespace ff::app {

// Scans and diagnoses one job; `seen_in_control` marks lines a control run also prints.
// `follow_symlinks`: -L/--follow (io::ReadOptions::follow_symlinks).
analyze::Diagnosis diagnose_inputs(const Loaded& loaded, const std::vector<std::string>& inputs,
                                   std::function<bool(std::string_view)> seen_in_control, bool* read_anything,
                                   bool follow_symlinks = false);

int run_diff(const Options& opt);    // failed = opt.inputs, control = opt.control
int run_verify(const Options& opt);  // before = opt.inputs, after = opt.control

}  // namespace ff::app
