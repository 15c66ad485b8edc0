// lsp/lsp.documents.cc — the documents `firstfault lsp` holds: their text as edited, a
// diagnosis 300 ms after the last change on one diagnosing thread (a newer change cancels
// the one in flight), and the requests parked until their document's diagnosis.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "pipeline/pipeline.h"
#include "lsp/lsp.h"
#include "lsp/lsp_internal.h"
#include "scan/scan.h"

namespace ff::app {
namespace lsp {

// The diagnosis of a buffer's text as one source named `name`, made as `diagnose` makes
// it (diagnose_loaded, no redaction); nullopt when *cancel was set meanwhile (the scan
// stops at its next chunk).
std::optional<analyze::Diagnosis> diagnose_text(const Loaded& loaded, const std::string& name, std::string_view text,
                                                const std::atomic<bool>* cancel) {
  scan::ScanOptions so;
  so.cancel = cancel;
  const ScanFn scan_fn = [&](const scan::Engine& engine, scan::EventSink& sink) {
    return scan::scan_text(engine, name, text, sink, so);
  };
  const Options opt;
  DiagnosedJob job;
  if (!diagnose_loaded(loaded, opt, scan_fn, {name}, job) || cancel->load()) return std::nullopt;
  return std::move(job.d);
}

int Server::run() {
  std::thread worker([this] { diagnose_loop(); });
  lsp::MessageReader reader(STDIN_FILENO);
  int rc = 1;
  while (auto body = reader.next()) {
    if (handle_message(*body, rc)) break;
  }
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (running_cancel_) running_cancel_->store(true);
  }
  cv_.notify_all();
  worker.join();
  return rc;
}

// ---- documents ----

bool apply_changes(std::shared_ptr<std::string>& text, const json& changes) {
  bool copied = false;
  for (const auto& c : changes) {
    if (!c.contains("range")) {
      text = std::make_shared<std::string>(c.at("text").get<std::string>());
      continue;
    }
    const json& r = c.at("range");
    const std::string_view now = *text;
    size_t b =
        lsp::byte_offset(now, r.at("start").at("line").get<size_t>(), r.at("start").at("character").get<size_t>());
    size_t e = lsp::byte_offset(now, r.at("end").at("line").get<size_t>(), r.at("end").at("character").get<size_t>());
    if (e < b) std::swap(b, e);
    if (text.use_count() > 1) {
      text = std::make_shared<std::string>(*text);
      copied = true;
    }
    text->replace(b, e - b, c.at("text").get_ref<const std::string&>());
  }
  return copied;
}

void Server::open(const std::string& uri, int version, std::string text) {
  {
    std::lock_guard lock(mu_);
    Document& d = docs_[uri];
    d.uri = uri;
    d.name = uri_to_path(uri);
    d.version = version;
    d.text = std::make_shared<std::string>(std::move(text));
    ++d.generation;
    schedule(uri, Clock::now());
  }
  cv_.notify_all();
}

void Server::change(const std::string& uri, int version, const json& changes) {
  {
    std::lock_guard lock(mu_);
    auto it = docs_.find(uri);
    if (it == docs_.end()) {
      log("didChange for a document that is not open: " + uri);
      return;
    }
    Document& d = it->second;
    apply_changes(d.text, changes);
    d.version = version;
    ++d.generation;
    schedule(uri, Clock::now() + kDebounce);
  }
  cv_.notify_all();
}

void Server::close(const std::string& uri) {
  std::vector<Parked> orphans;
  {
    std::lock_guard lock(mu_);
    docs_.erase(uri);
    pending_.erase(uri);
    if (running_uri_ == uri && running_cancel_) running_cancel_->store(true);
    orphans = take_parked(uri);
  }
  for (const auto& p : orphans) respond(p.id, nullptr);
  notify("textDocument/publishDiagnostics", {{"uri", uri}, {"diagnostics", json::array()}});
}

std::vector<Parked> Server::take_parked(const std::string& uri) {
  std::vector<Parked> out;
  for (auto it = parked_.begin(); it != parked_.end();) {
    if (it->uri == uri) {
      out.push_back(std::move(*it));
      it = parked_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void Server::schedule(const std::string& uri, Clock::time_point when) {
  pending_[uri] = when;
  if (running_uri_ == uri && running_cancel_) running_cancel_->store(true);
}

// ---- the diagnosing thread ----

void Server::diagnose_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (stopping_) return;
    if (pending_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto next = std::min_element(pending_.begin(), pending_.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    if (next->second > Clock::now()) {
      cv_.wait_until(lock, next->second);
      continue;
    }
    const std::string uri = next->first;
    pending_.erase(next);
    auto doc = docs_.find(uri);
    if (doc == docs_.end()) continue;
    const std::shared_ptr<const std::string> text = doc->second.text;
    const std::string name = doc->second.name;
    const uint64_t generation = doc->second.generation;
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    running_uri_ = uri;
    running_cancel_ = cancel;
    lock.unlock();
    std::optional<analyze::Diagnosis> d = diagnose_text(loaded_, name, *text, cancel.get());
    lock.lock();
    running_uri_.clear();
    running_cancel_.reset();
    doc = docs_.find(uri);
    if (!d || doc == docs_.end() || doc->second.generation != generation) continue;  // superseded
    doc->second.diagnosis = std::make_shared<const analyze::Diagnosis>(std::move(*d));
    doc->second.diagnosed = generation;
    const json diagnostics = diagnostics_of(doc->second);
    const int version = doc->second.version;
    const std::vector<Parked> ready = take_parked(uri);
    const Document snapshot = doc->second;
    lock.unlock();
    notify("textDocument/publishDiagnostics", {{"uri", uri}, {"version", version}, {"diagnostics", diagnostics}});
    for (const auto& p : ready) answer(p, snapshot);
    lock.lock();
  }
}

// ---- requests that wait for a diagnosis ----

void Server::park(const json& id, const std::string& method, const json& params, const std::string& uri) {
  Document snapshot;
  {
    std::lock_guard lock(mu_);
    auto it = docs_.find(uri);
    if (it == docs_.end()) {
      respond(id, nullptr);
      return;
    }
    if (it->second.diagnosed != it->second.generation) {
      parked_.push_back({id, method, params, uri});
      return;
    }
    snapshot = it->second;
  }
  answer({id, method, params, uri}, snapshot);
}

void Server::answer(const Parked& p, const Document& doc) {
  try {
    if (p.method == "textDocument/hover") {
      respond(p.id, hover(p.params, doc));
    } else if (p.method == "textDocument/codeAction") {
      respond(p.id, code_actions(p.params, doc));
    } else if (p.method == "firstfault.openReport") {
      open_report(p.id, doc);
    }
  } catch (const json::exception& e) {
    respond_error(p.id, kInvalidParams, fmt::format("bad parameters for {}: {}", p.method, e.what()));
  } catch (const std::exception& e) {
    // A parked request is answered on the diagnosing thread: an exception that left here
    // (a report that cannot be written) ended the server through std::terminate.
    respond_error(p.id, kInternalError, fmt::format("{}: {}", p.method, e.what()));
  }
}

void Server::cancel_request(const json& id) {
  std::optional<Parked> gone;
  {
    std::lock_guard lock(mu_);
    for (auto it = parked_.begin(); it != parked_.end(); ++it) {
      if (it->id == id) {
        gone = std::move(*it);
        parked_.erase(it);
        break;
      }
    }
  }
  // A request already answered, or unknown: nothing to do (LSP).
  if (gone) respond_error(gone->id, kRequestCancelled, "cancelled");
}

}  // namespace lsp

int run_lsp(const Options& opt) {
  auto loaded = load_or_say(opt, false, KbFields::kAll);
  if (!loaded) return 2;
  lsp::Server server(std::move(*loaded));
  return server.run();
}

}  // namespace ff::app
