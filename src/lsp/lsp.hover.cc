// lsp/lsp.hover.cc — what a document's diagnosis says per line: the diagnostics published
// (the decisive line, collateral, the user's frame), hover and code actions.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "kb_check/kb_check.h"
#include "pipeline/pipeline.h"
#include "lsp/lsp.h"
#include "lsp/lsp_internal.h"
#include "base/strings.h"
#include "record/record.h"
#include "scan/scan.h"

namespace ff::app::lsp {

std::optional<size_t> Server::user_frame_line(const Document& doc, const analyze::Finding& p) {
  if (!p.user_frame || p.evidence.empty() || p.evidence[0].line == 0) return std::nullopt;
  const std::string needle = fmt::format("File \"{}\", line {}", p.user_frame->file, p.user_frame->line);
  const std::string_view text = *doc.text;
  const size_t decisive0 = p.evidence[0].line - 1;
  // Only the lines above the decisive one, nearest first, up to a traceback's length.
  size_t end = lsp::byte_offset(text, decisive0, 0);  // where the line below starts
  size_t line = decisive0;
  for (size_t n = 0; n < 5000 && end > 0; ++n) {
    const size_t stop = end - 1;  // the '\n' that ends the line above
    size_t b = stop == 0 ? std::string_view::npos : text.rfind('\n', stop - 1);
    b = b == std::string_view::npos ? 0 : b + 1;
    --line;
    if (text.substr(b, stop - b).find(needle) != std::string_view::npos) return line;
    end = b;
  }
  return std::nullopt;
}

json Server::diagnostics_of(const Document& doc) const {
  json out = json::array();
  const analyze::Diagnosis& d = *doc.diagnosis;
  if (!d.primary || d.primary->evidence.empty() || d.primary->evidence[0].line == 0) return out;
  const analyze::Finding& p = *d.primary;
  const analyze::Evidence& decisive = p.evidence[0];
  const size_t line0 = decisive.line - 1;
  json primary;
  primary["range"] = range_of_line(*doc.text, line0);
  primary["severity"] = 1;
  primary["source"] = "firstfault";
  primary["code"] = p.id;
  std::string where;
  if (p.rank) where = fmt::format(" on rank {}", *p.rank);
  if (!p.node.empty()) where += " (node " + p.node + ")";
  primary["message"] = fmt::format("{}{}: the first failure of this log ({})", p.title, where, p.category);
  primary["data"] = {{"id", p.id}};
  out.push_back(std::move(primary));
  const json decisive_location = {{"uri", doc.uri}, {"range", range_of_line(*doc.text, line0)}};
  for (const auto& c : d.collateral) {
    if (c.first.line == 0 || c.first.source != decisive.source) continue;
    json diag;
    diag["range"] = range_of_line(*doc.text, c.first.line - 1);
    diag["severity"] = 3;
    diag["source"] = "firstfault";
    diag["code"] = c.id;
    diag["message"] = fmt::format("Collateral: {} ({} line{}), explained by {}", c.title, c.count,
                                  c.count == 1 ? "" : "s", c.explained_by.empty() ? p.id : c.explained_by);
    diag["relatedInformation"] =
        json::array({{{"location", decisive_location}, {"message", "the first failure: " + p.title}}});
    diag["data"] = {{"id", c.id}};
    out.push_back(std::move(diag));
  }
  if (auto frame = user_frame_line(doc, p)) {
    json diag;
    diag["range"] = range_of_line(*doc.text, *frame);
    diag["severity"] = 4;
    diag["source"] = "firstfault";
    diag["message"] =
        fmt::format("Your code: {}:{}{}, the innermost frame of yours in the traceback of {}", p.user_frame->file,
                    p.user_frame->line, p.user_frame->function.empty() ? "" : " in " + p.user_frame->function, p.title);
    diag["relatedInformation"] = json::array({{{"location", decisive_location}, {"message", "the decisive line"}}});
    diag["data"] = {{"id", p.id}};
    out.push_back(std::move(diag));
  }
  return out;
}

const kb::Entry* Server::entry_for_line(const Document& doc, size_t line0, bool& decisive) const {
  decisive = false;
  if (doc.diagnosis && doc.diagnosis->primary && !doc.diagnosis->primary->evidence.empty() &&
      doc.diagnosis->primary->evidence[0].line == line0 + 1) {
    decisive = true;
    if (const kb::Entry* e = loaded_.kb->find(doc.diagnosis->primary->id)) return e;
    return nullptr;  // an unrecognised crash: no entry, the diagnosis speaks for it
  }
  std::string clean;
  record::clean_line(lsp::line_at(*doc.text, line0), clean);
  record::Record rec;
  loaded_.engine->prefixes().parse(clean, rec);
  if (trim(rec.message).empty()) return nullptr;
  LineWinner w = best_entry_for_line(*loaded_.engine, rec.message);
  return w.entry_id.empty() ? nullptr : loaded_.kb->find(w.entry_id);
}

std::string Server::verify_of(const Document& doc, const kb::Entry* e, bool decisive) {
  if (decisive && doc.diagnosis && doc.diagnosis->primary) return doc.diagnosis->primary->verify;
  return e ? e->verify : "";
}

json Server::hover(const json& params, const Document& doc) const {
  const size_t line0 = params.at("position").at("line").get<size_t>();
  bool decisive = false;
  const kb::Entry* e = entry_for_line(doc, line0, decisive);
  const analyze::Finding* p = decisive ? &*doc.diagnosis->primary : nullptr;
  if (!e && !p) return nullptr;
  std::string md;
  const std::string title = e ? e->title : p->title;
  const std::string id = e ? e->id : p->id;
  md += fmt::format("**{}** `{}`\n\n", title, id);
  if (p)
    md += fmt::format("The first failure of this log ({}).\n\n",
                      p->rank ? fmt::format("rank {}", *p->rank) : "rank unknown");
  const std::string summary = e ? e->summary : p->summary;
  if (!summary.empty()) md += std::string(trim(summary)) + "\n\n";
  const std::vector<std::string>& fix = p ? p->fix : e->fix;
  if (!fix.empty()) {
    md += "**Fix**\n\n";
    for (size_t i = 0; i < fix.size(); ++i) md += fmt::format("{}. {}\n", i + 1, trim(fix[i]));
    md += "\n";
  }
  if (std::string v = verify_of(doc, e, decisive); !v.empty())
    md += "**Verify**\n\n```sh\n" + std::string(trim(v)) + "\n```\n";
  return {{"contents", {{"kind", "markdown"}, {"value", md}}}, {"range", range_of_line(*doc.text, line0)}};
}

json Server::code_actions(const json& params, const Document& doc) const {
  json out = json::array();
  const json& range = params.at("range");
  const size_t first = range.at("start").at("line").get<size_t>();
  const size_t last = std::min(range.at("end").at("line").get<size_t>(), first + 50);
  std::set<std::string> seen;
  const json diagnostics =
      params.contains("context") ? params["context"].value("diagnostics", json::array()) : json::array();
  for (size_t line0 = first; line0 <= last; ++line0) {
    bool decisive = false;
    const kb::Entry* e = entry_for_line(doc, line0, decisive);
    if (!e || !seen.insert(e->id).second) continue;
    json related = json::array();
    for (const auto& dg : diagnostics)
      if (dg.contains("code") && dg["code"] == e->id) related.push_back(dg);
    auto action = [&](const std::string& title, const std::string& command, json args) {
      json a = {{"title", title},
                {"kind", "quickfix"},
                {"command", {{"title", title}, {"command", command}, {"arguments", args}}}};
      if (!related.empty()) a["diagnostics"] = related;
      out.push_back(std::move(a));
    };
    action("firstfault: open the entry " + e->id, "firstfault.openEntry", json::array({e->id}));
    if (std::string v = verify_of(doc, e, decisive); !v.empty())
      action("firstfault: copy the verify command", "firstfault.copyVerifyCommand", json::array({v}));
  }
  if (doc.diagnosis && doc.diagnosis->primary) {
    const std::string title = "firstfault: open the HTML report";
    out.push_back(
        {{"title", title},
         {"kind", "quickfix"},
         {"command", {{"title", title}, {"command", "firstfault.openReport"}, {"arguments", json::array({doc.uri})}}}});
  }
  return out;
}

}  // namespace ff::app::lsp
