// lsp/lsp.commands.cc — workspace/executeCommand: an entry as Markdown and the HTML report,
// written to a private temporary folder and shown with window/showDocument; the verify
// command handed back to be copied.
#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "pipeline/pipeline.h"
#include "lsp/lsp.h"
#include "lsp/lsp_internal.h"
#include "base/strings.h"
#include "report/report.h"

namespace ff::app::lsp {

// ---- commands ----

std::string Server::temp_dir() {
  if (!temp_dir_.empty()) return temp_dir_;
  const char* t = std::getenv("TMPDIR");
  std::string tmpl = std::string(t && *t ? t : "/tmp") + "/firstfault-lsp-XXXXXX";
  if (!::mkdtemp(tmpl.data()))
    throw std::runtime_error(std::string("cannot make a temporary folder: ") + std::strerror(errno));
  temp_dir_ = tmpl;
  return temp_dir_;
}

std::string Server::write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = temp_dir() + "/" + name;
  if (std::string problem = write_output_file(path, bytes); !problem.empty())
    throw std::runtime_error("cannot write " + path + ": " + problem);
  return path;
}

void Server::show(const json& id, const std::string& path, bool external) {
  const std::string uri = path_to_file_uri(path);
  request("window/showDocument", {{"uri", uri}, {"external", external}, {"takeFocus", true}});
  respond(id, {{"uri", uri}, {"path", path}});
}

void Server::open_report(const json& id, const Document& doc) {
  if (!doc.diagnosis) {
    respond_error(id, kInvalidParams, "no diagnosis of that document yet");
    return;
  }
  report::HtmlOptions ho;
  ho.generator = "firstfault " FF_VERSION;
  const std::string path = write_temp(fmt::format("report-{}.html", ++files_), report::render_html(*doc.diagnosis, ho));
  show(id, path, true);
}

std::string Server::entry_markdown(const kb::Entry& e) {
  std::string md = fmt::format("# {}\n\n`{}` · {} · {}\n\n{}\n", e.title, e.id, e.category, e.phase, trim(e.summary));
  if (!e.root_cause.empty()) md += fmt::format("\n## Root cause\n\n{}\n", trim(e.root_cause));
  if (!e.fix.empty()) {
    md += "\n## Fix\n\n";
    for (size_t i = 0; i < e.fix.size(); ++i) md += fmt::format("{}. {}\n", i + 1, trim(e.fix[i]));
  }
  if (!e.verify.empty()) md += fmt::format("\n## Verify\n\n```sh\n{}\n```\n", trim(e.verify));
  if (!e.prevention.empty()) {
    md += "\n## Prevention\n\n";
    for (const auto& p : e.prevention) md += fmt::format("- {}\n", trim(p));
  }
  if (!e.references.empty()) {
    md += "\n## References\n\n";
    for (const auto& r : e.references) md += fmt::format("- {}{}\n", r.url, r.note.empty() ? "" : " (" + r.note + ")");
  }
  return md;
}

void Server::execute(const json& id, const json& params) {
  const std::string command = params.at("command").get<std::string>();
  const json args = params.value("arguments", json::array());
  if (command == "firstfault.openEntry") {
    const std::string entry = args.at(0).get<std::string>();
    const kb::Entry* e = loaded_.kb->find(entry);
    if (!e) {
      respond_error(id, kInvalidParams, "no entry " + entry);
      return;
    }
    // The id is [a-z0-9._-] for KB entries; an override's may be anything: made safe.
    std::string file;
    for (char c : e->id) file += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
    show(id, write_temp(file + ".md", entry_markdown(*e)), false);
  } else if (command == "firstfault.copyVerifyCommand") {
    // No clipboard in LSP: the client's own command copies it (the VS Code extension
    // does); others get the text in a message and in the result.
    const std::string text = args.at(0).get<std::string>();
    notify("window/showMessage", {{"type", 3}, {"message", "Verify with:\n" + text}});
    respond(id, {{"text", text}});
  } else if (command == "firstfault.openReport") {
    park(id, command, params, args.at(0).get<std::string>());
  } else {
    respond_error(id, kInvalidParams, "no command " + command);
  }
}

}  // namespace ff::app::lsp
