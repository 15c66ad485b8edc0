// bundle/bundle.cc — `firstfault bundle JOB... -o evidence.tar.gz`: the minimal evidence a
// helper needs, redacted by default: the diagnosis (JSON, Markdown, HTML), the decisive
// lines with their context per rank, the environment facts the log states (versions, GPU,
// driver, world size; kb/formats/environment.yaml), and a manifest.
#include "bundle/bundle.h"

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>
#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <ctime>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "pipeline/redaction.h"
#include "base/escape.h"
#include "base/strings.h"
#include "io/io.h"
#include "kb/kb.h"
#include "record/record.h"
#include "report/report.h"

namespace ff::app {

Result<std::vector<EnvironmentFact>> environment_facts(const std::vector<kb::File>& files) {
  for (const kb::File& f : files) {
    if (!ends_with(f.path, "formats/environment.yaml")) continue;
    std::vector<EnvironmentFact> out;
    try {
      YAML::Node doc = YAML::Load(f.content);
      YAML::Node facts = doc["facts"];
      if (!facts || !facts.IsSequence())
        return make_error(ErrorCode::kInvalidKb, "no 'facts' list", {f.path, 0, "facts"});
      for (size_t i = 0; i < facts.size(); ++i) {
        const YAML::Node& n = facts[i];
        EnvironmentFact fact;
        fact.name = n["name"].as<std::string>("");
        fact.literal = n["literal"].as<std::string>("");
        fact.regex = n["regex"].as<std::string>("");
        const Location where{f.path, n.Mark().line + 1, "facts[" + std::to_string(i) + "]"};
        if (fact.name.empty() || fact.literal.empty() || fact.regex.empty())
          return make_error(ErrorCode::kInvalidKb, "a fact needs a name, a literal and a regex", where);
        RE2 re(fact.regex);
        if (!re.ok()) return make_error(ErrorCode::kInvalidKb, "regex: " + re.error(), where);
        if (re.NumberOfCapturingGroups() < 1)
          return make_error(ErrorCode::kInvalidKb, "the regex needs a group for the value", where);
        if (YAML::Node ex = n["examples"]; ex && ex.IsSequence())
          for (const auto& e : ex) fact.examples.push_back(e.as<std::string>());
        out.push_back(std::move(fact));
      }
    } catch (const YAML::Exception& ex) {
      return make_error(ErrorCode::kInvalidKb, ex.what(), {f.path, ex.mark.line + 1, ""});
    }
    return out;
  }
  return make_error(ErrorCode::kInvalidKb, "kb/formats/environment.yaml is not in the knowledge base", {});
}

namespace {

// Reads every source once more, line by line, and keeps each fact's values (the first
// few distinct ones, each with where it was first seen: different driver versions on two
// nodes is itself worth seeing).
class FactSink : public io::ByteSink {
 public:
  explicit FactSink(const std::vector<EnvironmentFact>& facts) : facts_(facts) {
    for (const auto& f : facts) res_.push_back(std::make_unique<RE2>(f.regex));
  }
  void begin(const io::SourceInfo& source) override {
    name_ = source.name;
    framer_ = record::LineFramer(kMaxLine);  // the scan's line numbers, CR-only logs included
  }
  void data(std::string_view chunk) override {
    framer_.feed(chunk, [this](const record::RawLine& l) { line(l); });
  }
  void end(const io::SourceInfo&, const Status&) override {
    framer_.finish([this](const record::RawLine& l) { line(l); });
  }
  std::map<std::string, std::vector<FactValue>> found;

 private:
  static constexpr size_t kMaxLine = 64 * 1024;
  void line(const record::RawLine& raw) {
    std::string_view text = raw.bytes;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    for (size_t i = 0; i < facts_.size(); ++i) {
      if (text.find(facts_[i].literal) == std::string_view::npos) continue;
      std::string value;
      if (!RE2::PartialMatch(text, *res_[i], &value) || trim(value).empty()) continue;
      auto& values = found[facts_[i].name];
      bool seen = false;
      for (auto& v : values) {
        if (v.value == value) {
          ++v.count;
          seen = true;
        }
      }
      if (!seen && values.size() < 5) values.push_back({std::string(trim(value)), name_, raw.number, 1});
    }
  }
  const std::vector<EnvironmentFact>& facts_;
  std::vector<std::unique_ptr<RE2>> res_;
  std::string name_;
  record::LineFramer framer_;
};

// The decisive lines with their context, per rank: the first failure with the lines
// before it, then the first line of each collateral incident and each rank's first event.
std::string evidence_text(const analyze::Diagnosis& d) {
  std::string out;
  if (d.primary) {
    const auto& p = *d.primary;
    out += fmt::format("== first failure: {}{}{}\n", p.title, p.rank ? fmt::format(", rank {}", *p.rank) : "",
                       p.node.empty() ? "" : ", node " + p.node);
    if (!p.evidence.empty()) out += fmt::format("   {}:{}\n", p.evidence[0].source, p.evidence[0].line);
    for (const auto& c : p.context_before) out += fmt::format("{:>8}  {}\n", c.line, c.text);
    if (!p.evidence.empty()) out += fmt::format("{:>8}> {}\n", p.evidence[0].line, p.evidence[0].text);
    for (const auto& f : p.traceback)
      out += fmt::format("   frame {}:{}{}\n", f.file, f.line, f.function.empty() ? "" : " in " + f.function);
  }
  for (const auto& c : d.collateral) {
    out += fmt::format("\n== collateral: {} x{}{}\n   {}:{}\n{:>8}> {}\n", c.title, c.count,
                       c.ranks.empty() ? "" : fmt::format(" on {} rank(s)", c.ranks.size()), c.first.source,
                       c.first.line, c.first.line, c.first.text);
  }
  std::map<int, const analyze::TimelineEntry*> first_per_rank;
  for (const auto& t : d.timeline)
    for (int r : t.ranks) first_per_rank.emplace(r, &t);
  if (!first_per_rank.empty()) out += "\n== each rank's first event\n";
  for (const auto& [rank, t] : first_per_rank)
    out += fmt::format("rank {:<6} {} {}:{}  {}\n", rank, t->role, t->source, t->line, t->text);
  return out;
}

// libarchive's writer into a string (the bundle is then written like any -o file).
la_ssize_t append_to_string(archive*, void* out, const void* buf, size_t n) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(buf), n);
  return static_cast<la_ssize_t>(n);
}

bool add_member(archive* a, const std::string& name, const std::string& bytes, std::time_t now) {
  archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, name.c_str());
  archive_entry_set_size(e, static_cast<la_int64_t>(bytes.size()));
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  archive_entry_set_mtime(e, now, 0);
  bool ok = archive_write_header(a, e) == ARCHIVE_OK &&
            archive_write_data(a, bytes.data(), bytes.size()) == static_cast<la_ssize_t>(bytes.size());
  archive_entry_free(e);
  return ok;
}

}  // namespace

// Over 80 lines: the bundle is written in one pass, file after file into one archive, and
// its manifest lists them in that order; the steps read best as the list they are.
int run_bundle(const Options& given) {
  Options opt = given;
  opt.redact = !given.no_redact;
  if (opt.output.empty()) opt.output = "evidence.tar.gz";
  auto facts = environment_facts(kb::embedded_files());
  if (!facts.ok()) {
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(facts.error().to_string()));
    return 2;
  }
  DiagnosedJob job;
  if (int rc = diagnose_job(opt, job); rc != 0) return rc;
  if (job.nothing_read) {
    fmt::print(stderr, "firstfault: nothing could be read; no bundle written\n");
    return 2;
  }
  analyze::Diagnosis& d = job.d;
  FactSink sink(*facts);
  io::ReadOptions ro;
  ro.follow_symlinks = opt.follow_symlinks;
  if (opt.max_bytes) ro.max_total_bytes = opt.max_bytes;
  io::read_inputs(opt.inputs, sink, ro);

  nlohmann::ordered_json env = nlohmann::ordered_json::object();
  for (const auto& f : *facts) {
    auto it = sink.found.find(f.name);
    if (it == sink.found.end() || env.contains(f.name)) continue;
    nlohmann::ordered_json values = nlohmann::ordered_json::array();
    for (const auto& v : it->second) {
      const std::string value = job.redactor ? job.redactor->apply(v.value) : v.value;
      const std::string source = job.redactor ? job.redactor->apply(v.source) : v.source;
      values.push_back({{"value", value}, {"source", source}, {"line", v.line}, {"count", v.count}});
    }
    env[f.name] = std::move(values);
  }

  std::string json = report::render_json(d);
  if (job.redactor) json = add_redaction_json(json, *job.redactor);
  report::MarkdownOptions mo;
  mo.generator = "firstfault " FF_VERSION;
  std::string md = report::render_markdown(d, mo);
  report::HtmlOptions ho;
  ho.generator = "firstfault " FF_VERSION;
  std::string html = report::render_html(d, ho);
  std::string evidence = evidence_text(d);
  std::string environment = env.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";

  const std::vector<std::pair<std::string, const std::string*>> members = {{"diagnosis.json", &json},
                                                                           {"diagnosis.md", &md},
                                                                           {"report.html", &html},
                                                                           {"evidence.txt", &evidence},
                                                                           {"environment.json", &environment}};
  nlohmann::ordered_json manifest;
  manifest["schema"] = "firstfault.bundle/1";
  manifest["generator"] = "firstfault " FF_VERSION;
  manifest["verdict"] = analyze::verdict_name(d.verdict);
  manifest["primary"] = d.primary ? nlohmann::ordered_json(d.primary->id) : nlohmann::ordered_json(nullptr);
  manifest["redacted"] = job.redactor.has_value();
  manifest["inputs"] = nlohmann::ordered_json::array();
  for (const auto& s : d.sources)
    manifest["inputs"].push_back({{"name", s.name}, {"lines", s.lines}, {"bytes", s.bytes}});
  manifest["files"] = nlohmann::ordered_json::array();
  static const std::map<std::string, std::string> what = {
      {"diagnosis.json", "the diagnosis, JSON contract firstfault.diagnosis/2 (docs/json-output.md)"},
      {"diagnosis.md", "the diagnosis as Markdown, for an issue or a chat"},
      {"report.html", "the diagnosis as one self-contained page (timeline, plots)"},
      {"evidence.txt",
       "the decisive lines with the lines before them, each collateral incident's first line, each rank's first event"},
      {"environment.json", "versions, GPU, driver and world size as the log states them (first values, where seen)"}};
  for (const auto& [name, bytes] : members)
    manifest["files"].push_back({{"name", name},
                                 {"bytes", bytes->size()},
                                 {"fnv1a64", fmt::format("{:016x}", fnv1a64(*bytes))},
                                 {"what", what.at(name)}});
  std::string manifest_text = manifest.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";

  std::string tgz;
  archive* a = archive_write_new();
  archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  archive_write_set_bytes_in_last_block(a, 1);  // no padding past the data
  bool ok = archive_write_open2(a, &tgz, nullptr, append_to_string, nullptr, nullptr) == ARCHIVE_OK;
  const std::time_t now = std::time(nullptr);
  const std::string dir = "firstfault-evidence/";
  ok = ok && add_member(a, dir + "manifest.json", manifest_text, now);
  for (const auto& [name, bytes] : members) ok = ok && add_member(a, dir + name, *bytes, now);
  ok = archive_write_close(a) == ARCHIVE_OK && ok;
  std::string problem = ok ? "" : archive_error_string(a) ? archive_error_string(a) : "cannot make the archive";
  archive_write_free(a);
  if (problem.empty()) problem = write_output_file(opt.output, tgz);
  if (!problem.empty()) {
    fmt::print(stderr, "firstfault: cannot write {}: {}\n", escape_for_terminal(opt.output),
               escape_for_terminal(problem));
    return 2;
  }
  fmt::print("wrote {}: {} ({}){}\n  {}\n", escape_for_terminal(opt.output), analyze::verdict_name(d.verdict),
             d.primary ? escape_for_terminal(d.primary->id) : "no failure",
             job.redactor ? "; redacted (--no-redact to keep the text as logged)" : "; NOT redacted",
             job.redactor ? escape_for_terminal(std::string(trim(redaction_line(*job.redactor)))) : "");
  return analyze::verdict_exit_code(d.verdict);
}

}  // namespace ff::app
