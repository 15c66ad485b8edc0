// lsp/lsp_internal.h — what the files of `firstfault lsp` share (lsp/lsp.h is the public side):
//
//   lsp.protocol.cc   LSP positions (UTF-16), file URIs, the framing (MessageReader), the
//                     server's output and the dispatch of requests and notifications
//   lsp.documents.cc  open documents, the debounced diagnosing thread, requests parked until
//                     their document's diagnosis, cancellation; run_lsp
//   lsp.hover.cc      what the diagnosis says per line: published diagnostics, hover, code actions
//   lsp.commands.cc   workspace/executeCommand: the entry and the report as files shown
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/diagnosis.h"
#include "pipeline/pipeline.h"
#include "lsp/lsp.h"
#include "kb/kb.h"

namespace ff::app::lsp {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kServerNotInitialized = -32002;
inline constexpr int kRequestCancelled = -32800;

inline constexpr auto kDebounce = std::chrono::milliseconds(300);

// The diagnosis of a buffer's text as one source named `name`, made as `diagnose` makes
// it (diagnose_loaded, no redaction); nullopt when *cancel was set meanwhile (the scan
// stops at its next chunk).
std::optional<analyze::Diagnosis> diagnose_text(const Loaded& loaded, const std::string& name, std::string_view text,
                                                const std::atomic<bool>* cancel);

// A message's JSON as sent (invalid UTF-8 replaced).
std::string dump(const json& j);
// file:///a%20b/x.log -> /a b/x.log; other schemes: the URI itself (a name for the source).
std::string uri_to_path(const std::string& uri);
// A path as a file:// URI, every byte but [A-Za-z0-9/._~-] percent-encoded.
std::string path_to_file_uri(const std::string& path);
// The range of line `line0` (0-based) of text, whole.
json range_of_line(std::string_view text, size_t line0);

// Applies a didChange's contentChanges (ranges or whole texts, in order) to *text: in place
// when nobody else holds the text (a 100 MB buffer is not copied per keystroke), otherwise
// on a copy made once, so that a reader's snapshot (the diagnosing thread, an answer in
// progress) never changes under it. Readers take their reference with the server's mutex
// held, as the caller holds it. Returns whether it copied.
bool apply_changes(std::shared_ptr<std::string>& text, const json& changes);

struct Document {
  std::string uri;
  std::string name;  // the source's name in the Diagnosis (the file's path)
  int version = 0;
  // Shared with readers' snapshots; edited in place only while no snapshot holds it.
  std::shared_ptr<std::string> text;
  uint64_t generation = 0;  // bumped by every change
  uint64_t diagnosed = 0;   // the generation `diagnosis` is of (0: none yet)
  std::shared_ptr<const analyze::Diagnosis> diagnosis;
};

// A request that waits for its document's diagnosis (hover, code actions, the report).
struct Parked {
  json id;
  std::string method;
  json params;
  std::string uri;
};

// The server: the reading thread (run) dispatches, one thread diagnoses (diagnose_loop).
class Server {
 public:
  explicit Server(Loaded loaded) : loaded_(std::move(loaded)) {}

  int run();

 private:
  // ---- output ----
  void send(const json& msg);
  void respond(const json& id, json result);
  void respond_error(const json& id, int code, const std::string& message);
  void notify(const std::string& method, json params);
  void request(const std::string& method, json params);
  void log(const std::string& text);

  // ---- input ----
  // Returns true when the server should stop (exit); rc is the exit code then.
  bool handle_message(const std::string& body, int& rc);
  void handle_notification(const std::string& method, const json& params);
  void handle_request(const json& id, const std::string& method, const json& params);

  // ---- documents ----
  void open(const std::string& uri, int version, std::string text);
  void change(const std::string& uri, int version, const json& changes);
  void close(const std::string& uri);
  // Called with mu_ held: the requests parked on uri, taken out.
  std::vector<Parked> take_parked(const std::string& uri);
  // Called with mu_ held: diagnose uri at `when`; a diagnosis of it in flight is stale.
  void schedule(const std::string& uri, Clock::time_point when);
  // A request that needs the document's diagnosis: answered now, or parked until it comes.
  void park(const json& id, const std::string& method, const json& params, const std::string& uri);
  void answer(const Parked& p, const Document& doc);
  void cancel_request(const json& id);

  // ---- the diagnosing thread ----
  void diagnose_loop();

  // ---- what the diagnosis says, per line ----
  // The log line (0-based) of the user's frame: the traceback's `File "f", line n` line
  // nearest above the decisive line.
  static std::optional<size_t> user_frame_line(const Document& doc, const analyze::Finding& p);
  json diagnostics_of(const Document& doc) const;
  // The KB entry that recognises line0 of doc (the diagnosis's primary wins its own line).
  const kb::Entry* entry_for_line(const Document& doc, size_t line0, bool& decisive) const;
  static std::string verify_of(const Document& doc, const kb::Entry* e, bool decisive);
  json hover(const json& params, const Document& doc) const;
  json code_actions(const json& params, const Document& doc) const;

  // ---- commands ----
  // A private folder for the files the commands write (0700, made once).
  std::string temp_dir();
  std::string write_temp(const std::string& name, const std::string& bytes);
  void show(const json& id, const std::string& path, bool external);
  void open_report(const json& id, const Document& doc);
  static std::string entry_markdown(const kb::Entry& e);
  void execute(const json& id, const json& params);

  Loaded loaded_;
  bool initialised_ = false;
  bool shutdown_ = false;
  int next_request_ = 0;
  int files_ = 0;
  std::string temp_dir_;

  std::mutex out_mu_;
  std::mutex mu_;  // guards what follows
  std::condition_variable cv_;
  std::map<std::string, Document> docs_;
  std::map<std::string, Clock::time_point> pending_;
  std::deque<Parked> parked_;
  std::string running_uri_;
  std::shared_ptr<std::atomic<bool>> running_cancel_;
  bool stopping_ = false;
};

}  // namespace ff::app::lsp
