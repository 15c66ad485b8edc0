#include "report/editor.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/escape.h"
#include "report/format.h"

namespace ff::report {

using analyze::Diagnosis;
using analyze::Evidence;
using analyze::Finding;
using nlohmann::ordered_json;

namespace {

// One line of a quickfix message: line breaks become spaces, controls escaped.
std::string one_line(const std::string& s) {
  std::string flat = s;
  for (char& c : flat)
    if (c == '\n' || c == '\r') c = ' ';
  return escape_for_terminal(flat);
}

// The explaining location, "job.log:1234".
std::string at(const Evidence& e) { return fmt::format("{}:{}", e.source, e.line); }

// The fix steps and the verify command as one text: numbered steps, then "Verify:".
std::string fix_text(const Finding& p, bool markdown) {
  std::string out;
  for (size_t i = 0; i < p.fix.size(); ++i) out += fmt::format("{}. {}\n", i + 1, p.fix[i]);
  if (!p.verify.empty()) {
    if (!out.empty()) out += "\n";
    out += markdown ? "Verify:\n\n```sh\n" + p.verify + "\n```\n" : "Verify:\n" + p.verify + "\n";
  }
  return out;
}

}  // namespace

std::string render_vimgrep(const Diagnosis& d) {
  std::string out;
  if (!d.primary || d.primary->evidence.empty()) return out;
  const Finding& p = *d.primary;
  const Evidence& decisive = p.evidence[0];
  // grep's layout: a name with ':' in it still parses, since Vim takes the first ":N:N:".
  out += fmt::format("{}:{}:1: error: {} [{}], {}: {}\n", one_line(decisive.source), decisive.line, one_line(p.title),
                     one_line(p.id), one_line(detail::where_text(p)), one_line(decisive.text));
  for (const auto& c : d.collateral) {
    if (c.first.line == 0) continue;
    std::string who = c.ranks.empty()
                          ? ""
                          : fmt::format(" on rank{} {}", c.ranks.size() == 1 ? "" : "s", detail::ranks_text(c.ranks));
    out += fmt::format("{}:{}:1: info: collateral: {} [{}]{}, {}; explained by {} at {}: {}\n",
                       one_line(c.first.source), c.first.line, one_line(c.title), one_line(c.id), who,
                       detail::plural(c.count, "line"), one_line(c.explained_by.empty() ? p.id : c.explained_by),
                       one_line(at(decisive)), one_line(c.first.text));
  }
  if (p.user_frame && p.user_frame->line > 0) {
    const auto& f = *p.user_frame;
    out += fmt::format("{}:{}:1: note: your code{}, the innermost frame of yours in the traceback of {} [{}] at {}\n",
                       one_line(f.file), f.line, f.function.empty() ? "" : " (" + one_line(f.function) + ")",
                       one_line(p.title), one_line(p.id), one_line(at(decisive)));
  }
  return out;
}

std::string path_to_uri_reference(const std::string& path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = !path.empty() && path[0] == '/' ? "file://" : "";
  for (unsigned char c : path) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                            c == '.' || c == '_' || c == '~' || c == '/';
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  // ':' is encoded too, so a relative name never reads as a scheme ("c:x.log").
  return out;
}

namespace {

ordered_json location(const std::string& file, uint64_t line, const std::string& snippet, const std::string& message) {
  ordered_json phys;
  phys["artifactLocation"] = {{"uri", path_to_uri_reference(file)}};
  if (line > 0) {
    ordered_json region;
    region["startLine"] = line;
    if (!snippet.empty()) region["snippet"] = {{"text", snippet}};
    phys["region"] = std::move(region);
  }
  ordered_json loc;
  loc["physicalLocation"] = std::move(phys);
  if (!message.empty()) loc["message"] = {{"text", message}};
  return loc;
}

ordered_json evidence_location(const Evidence& e, const std::string& message = "") {
  return location(e.source, e.line, e.text, message);
}

}  // namespace

// Over 80 lines: SARIF's one run is a single nested document (tool, rules, results with
// their locations and related locations); it is built top-down in the order the format
// lays it out, so it reads against the SARIF 2.1.0 schema.
std::string render_sarif(const Diagnosis& d, const SarifOptions& options) {
  ordered_json driver;
  driver["name"] = "firstfault";
  if (!options.version.empty()) driver["version"] = options.version;
  driver["rules"] = ordered_json::array();
  std::vector<std::string> rule_ids;
  // The rule of an entry id, added on first use; its index in driver.rules.
  auto rule = [&](const std::string& id, const std::string& title, const std::string& category,
                  const Finding* finding) -> size_t {
    for (size_t i = 0; i < rule_ids.size(); ++i)
      if (rule_ids[i] == id) return i;
    ordered_json r;
    r["id"] = id;
    r["shortDescription"] = {{"text", title.empty() ? id : title}};
    if (finding) {
      const std::string full = !finding->root_cause.empty() ? finding->root_cause : finding->summary;
      if (!full.empty()) r["fullDescription"] = {{"text", full}};
      const std::string help = fix_text(*finding, false);
      if (!help.empty()) r["help"] = {{"text", help}, {"markdown", fix_text(*finding, true)}};
    }
    if (options.entry_link) {
      if (std::string link = options.entry_link(id); !link.empty()) r["helpUri"] = link;
    }
    r["defaultConfiguration"] = {{"level", finding ? "error" : "note"}};
    r["properties"] = {{"category", category}, {"tags", ordered_json::array({category})}};
    driver["rules"].push_back(std::move(r));
    rule_ids.push_back(id);
    return rule_ids.size() - 1;
  };

  ordered_json results = ordered_json::array();
  if (d.primary && !d.primary->evidence.empty()) {
    const Finding& p = *d.primary;
    const Evidence& decisive = p.evidence[0];
    ordered_json r;
    r["ruleId"] = p.id;
    r["ruleIndex"] = rule(p.id, p.title, p.category, &p);
    r["level"] = "error";
    std::string msg = fmt::format("{} ({}): {}", p.title, detail::where_text(p), decisive.text);
    if (std::string fix = fix_text(p, false); !fix.empty()) msg += "\n\nFix:\n" + fix;
    r["message"] = {{"text", msg}};
    r["locations"] = ordered_json::array({evidence_location(decisive)});
    ordered_json related = ordered_json::array();
    int next_id = 1;
    if (p.user_frame && p.user_frame->line > 0) {
      const auto& f = *p.user_frame;
      ordered_json loc = location(f.file, f.line, "", "your code" + (f.function.empty() ? "" : ", in " + f.function));
      loc["id"] = next_id++;
      related.push_back(std::move(loc));
    }
    for (size_t i = 1; i < p.evidence.size(); ++i) {
      ordered_json loc = evidence_location(p.evidence[i], "more evidence");
      loc["id"] = next_id++;
      related.push_back(std::move(loc));
    }
    if (!related.empty()) r["relatedLocations"] = std::move(related);
    if (!p.traceback.empty()) {
      // SARIF lists a stack's frames innermost first; the Diagnosis outermost first.
      ordered_json frames = ordered_json::array();
      for (auto it = p.traceback.rbegin(); it != p.traceback.rend(); ++it) {
        ordered_json fr;
        ordered_json loc = location(it->file, it->line, "", "");
        if (!it->function.empty()) loc["logicalLocations"] = ordered_json::array({{{"name", it->function}}});
        fr["location"] = std::move(loc);
        frames.push_back(std::move(fr));
      }
      r["stacks"] =
          ordered_json::array({{{"message", {{"text", "the decisive line's traceback"}}}, {"frames", frames}}});
    }
    if (!p.fingerprint.empty()) r["partialFingerprints"] = {{"firstfault/v1", p.fingerprint}};
    ordered_json props;
    props["category"] = p.category;
    props["confidence"] = p.confidence;
    props["rank"] = p.rank ? ordered_json(*p.rank) : ordered_json(nullptr);
    if (!p.node.empty()) props["node"] = p.node;
    if (!p.verify.empty()) props["verify"] = p.verify;
    r["properties"] = std::move(props);
    results.push_back(std::move(r));

    for (const auto& c : d.collateral) {
      if (c.first.line == 0) continue;
      ordered_json cr;
      cr["ruleId"] = c.id;
      cr["ruleIndex"] = rule(c.id, c.title, c.category, nullptr);
      cr["level"] = "note";
      const std::string by = c.explained_by.empty() ? p.id : c.explained_by;
      cr["message"] = {{"text", fmt::format("Collateral: {} ({}), explained by {} at [{}:{}](0)", c.title,
                                            detail::plural(c.count, "line"), by, decisive.source, decisive.line)}};
      cr["locations"] = ordered_json::array({evidence_location(c.first)});
      ordered_json explained = evidence_location(decisive, "the decisive line");
      explained["id"] = 0;
      cr["relatedLocations"] = ordered_json::array({std::move(explained)});
      if (!c.fingerprint.empty()) cr["partialFingerprints"] = {{"firstfault/v1", c.fingerprint}};
      cr["properties"] = {{"category", c.category}, {"ranks", c.ranks}, {"count", c.count}};
      results.push_back(std::move(cr));
    }
  }

  ordered_json run;
  run["tool"] = {{"driver", std::move(driver)}};
  run["results"] = std::move(results);
  run["invocations"] = ordered_json::array({{{"executionSuccessful", true}}});
  run["properties"] = {{"verdict", analyze::verdict_name(d.verdict)}};
  ordered_json j;
  j["$schema"] = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";
  j["version"] = "2.1.0";
  j["runs"] = ordered_json::array({std::move(run)});
  return j.dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace ff::report
