// app/commands.events.cc — `events`: the scan's events, one per line (text or JSON Lines).
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "pipeline/pipeline.h"
#include "pipeline/redaction.h"
#include "base/escape.h"
#include "kb/kb.h"
#include "record/record.h"
#include "scan/scan.h"

namespace ff::app {

namespace {

class JsonlSink : public scan::EventSink {
 public:
  JsonlSink(const scan::JobStats& stats, bool jsonl) : stats_(stats), jsonl_(jsonl) {}
  void event(const record::Event& e) override {
    std::string source = e.source < stats_.sources.size() ? stats_.sources[e.source].name : "";
    if (!jsonl_) {
      std::string who = e.rank >= 0 ? fmt::format("rank {}", e.rank) : "-";
      // A terminal's, most likely: the name and the line are shown escaped (issue 14).
      std::cout << fmt::format("{}:{}\t{}\t{}\t{}\t{}\n", escape_for_terminal(source), e.line, who,
                               escape_for_terminal(e.entry_id.empty() ? record::event_kind_name(e.kind) : e.entry_id),
                               e.kind == record::EventKind::kPattern ? kb::role_name(e.role) : "-",
                               escape_for_terminal(e.text));
      return;
    }
    nlohmann::ordered_json j;
    j["source"] = source;
    j["line"] = e.line;
    j["kind"] = record::event_kind_name(e.kind);
    j["rank"] = e.rank >= 0 ? nlohmann::ordered_json(e.rank) : nlohmann::ordered_json(nullptr);
    j["local_rank"] = e.local_rank >= 0 ? nlohmann::ordered_json(e.local_rank) : nlohmann::ordered_json(nullptr);
    j["node"] = e.node.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.node);
    j["pid"] = e.pid >= 0 ? nlohmann::ordered_json(e.pid) : nlohmann::ordered_json(nullptr);
    j["gpu"] = e.gpu >= 0 ? nlohmann::ordered_json(e.gpu) : nlohmann::ordered_json(nullptr);
    j["time"] = e.time_text.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.time_text);
    j["level"] = e.level ? nlohmann::ordered_json(std::string(1, e.level)) : nlohmann::ordered_json(nullptr);
    j["entry"] = e.entry_id.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.entry_id);
    j["pattern"] = e.pattern_id.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.pattern_id);
    j["role"] = e.kind == record::EventKind::kPattern ? nlohmann::ordered_json(kb::role_name(e.role))
                                                      : nlohmann::ordered_json(nullptr);
    if (!e.exc_type.empty()) j["exception_type"] = e.exc_type;
    if (!e.captures.empty()) j["captures"] = e.captures;
    if (e.in_launcher_summary) j["launcher_summary"] = true;
    j["text"] = e.text;
    std::cout << j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  }

 private:
  const scan::JobStats& stats_;
  bool jsonl_;
};

}  // namespace

int run_events(const Options& opt) {
  auto loaded = load_or_say(opt, false, KbFields::kDiagnosis);
  if (!loaded) return 2;
  // Source names are known once scan_job returns; collect, then print.
  scan::CollectSink collect;
  scan::JobStats stats = scan::scan_job(*loaded->engine, opt.inputs, collect, scan_options(opt));
  if (opt.redact) {
    std::optional<redact::Redactor> redactor;
    if (!start_redactor(redactor, collect.events, stats.errors)) return 2;
    redact_events(collect.events, *redactor);
    for (auto& s : stats.sources) s.name = redactor->apply(s.name);
  }
  JsonlSink out(stats, opt.format != "text");
  for (const auto& e : collect.events) out.event(e);
  for (const auto& e : stats.errors) fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(e.to_string()));
  if (stats.sources.empty()) return 2;
  return collect.events.empty() ? 0 : 1;
}

}  // namespace ff::app
