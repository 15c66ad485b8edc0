// analyze.cc — diagnose(): the driver over the steps of the reasoning (ARCHITECTURE.md,
// Reasoning), each in its own file (analyze_internal.h lists them); and the category
// of an exception that no entry names.
#include "analyze/analyze_internal.h"

namespace ff::analyze {

using record::Event;
using record::EventKind;

Guess guess_failure(const kb::KnowledgeBase& kb, const std::string& exc_type, const std::string& frame,
                    const std::vector<JobNumbers::NearEntry>& nearest) {
  for (const auto& r : kb.frames) {
    if (!frame.empty() && frame.find(r.path) != std::string::npos) return {r.category, "frame", frame};
  }
  if (!nearest.empty() && nearest.front().share >= kGuessMinShare) {
    if (const kb::Entry* e = kb.find(nearest.front().id); e && e->category != "healthy")
      return {e->category, "words", e->id};
  }
  std::string_view last = exc_type;
  if (size_t dot = last.rfind('.'); dot != std::string_view::npos) last = last.substr(dot + 1);
  for (const auto& r : kb.exceptions) {
    if (r.type == last) return {r.category, "type", std::string(last)};
  }
  return {kb.exception_default_category, "type", std::string(last)};
}

std::string guess_exception_category(const kb::KnowledgeBase& kb, const std::string& exc_type,
                                     const std::string& frame) {
  return guess_failure(kb, exc_type, frame).category;
}

using namespace detail;  // NOLINT(google-build-using-namespace): the module's own internals

Diagnosis diagnose(const std::vector<Event>& events, const std::vector<SourceSummary>& sources,
                   const kb::KnowledgeBase& kb, const JobNumbers& numbers) {
  Diagnosis d;
  d.sources = sources;
  d.errors = numbers.unread;  // the input problems, shown beside the verdict
  for (const auto& s : sources) {
    d.lines += s.lines;
    d.bytes += s.bytes;
  }
  Ctx c(events, sources, kb, numbers, numbers.rules, d);
  build_incidents(c);
  name_incidents(c);
  absorb_wrappers(c);
  name_hang_at_exit(c);
  drop_control_noise(c);
  mark_recovered(c);
  choose_primary(c);
  attribute_rank(c);
  fill_primary(c);
  group_collateral(c);
  list_hypotheses(c);
  list_symptoms(c);
  build_timeline(c);
  read_numbers(c);
  read_progress(c);
  decide_verdict(c);
  return d;
}

}  // namespace ff::analyze
