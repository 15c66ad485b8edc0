// serve/serve.h — the local web page and its JSON API (`firstfault serve`).
//
// One HTTP server (civetweb, Debian's libcivetweb) answers, from memory only:
//   GET  /                     the page (assets embedded at build time: no CDN, no network)
//   GET  /assets/<name>        its script and style sheet
//   GET  /samples/<name>.log   logs of real runs bundled with the binary ("Try one")
//   POST /api/diagnose         a text body, or multipart/form-data files: the diagnosis
//                              contract (docs/json-output.md); the body is streamed to the
//                              engine as it arrives (pipes, io::StreamFeed), never stored
//   GET  /report/<id>.html|md|json   a diagnosis kept in memory for the page (?keep=1)
//   GET  /api/entries, /api/entries/<id>, /api/search?q=   the encyclopedia
//   GET  /healthz
// No request path reaches the filesystem: every route is matched exactly and every answer
// is built in memory.
//
//   serve::Server server(options, handlers);
//   Result<int> port = server.bind();   // 0 in options.port: any free port
//   server.run();                       // until stop() (another thread, or a signal)
//
// Safety (docs/serve.md): loopback by default; on a loopback address the Host header
// must name it (a DNS-rebinding page cannot talk to us); a strict Content-Security-Policy
// on every answer; an upload limit (413), a bounded number of diagnoses at once with a
// bounded queue (503 with Retry-After), a bounded request head (64 KiB, 63 header lines:
// 431), a deadline for the head and for each read and write (--read-timeout), and a
// connection closed after any refusal whose body was not read to its end.
// Thread-safety: handlers are called from the connection threads, several at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "io/io.h"
#include "kb/kb.h"

namespace ff::serve {

struct Limits {
  uint64_t max_upload_bytes = 8ull << 30;     // one request's body; above: 413
  unsigned max_running = 2;                   // diagnoses at once
  unsigned max_waiting = 64;                  // diagnoses queued behind them; more: 503
  int queue_wait_s = 120;                     // a queued diagnosis waits this long at most: 503
  int read_timeout_s = 10;                    // a request's head must arrive within this; a client
                                              // silent this long in its body, or not reading, is dropped
  int write_timeout_s = 10;                   // unused: civetweb has one timeout, read_timeout_s
  size_t kept_reports = 32;                   // diagnoses kept in memory for /report/ (oldest dropped)
  uint64_t kept_report_bytes = 256ull << 20;  // and their bytes together (the newest is always kept)
  unsigned connection_threads = 0;            // 0: max_running + max_waiting + 32
};

struct Options {
  std::string bind = "127.0.0.1";
  int port = 8765;  // 0: any free port (bind() says which)
  Limits limits;
};

// What a diagnosis gives the server: the three renderings of one Diagnosis.
struct Diagnosed {
  std::string json;      // the contract (docs/json-output.md)
  std::string html;      // report::render_html
  std::string markdown;  // report::render_markdown
  std::string verdict;   // "failed", "healthy", ...
  std::string name;      // the first input's name as shown (the downloads are named after it)
  bool nothing_read = false;
};

struct DiagnoseRequest {
  bool redact = false;  // ?redact=1: secrets and identities replaced (app/redaction.h)
};

// What the answers are made of; app fills these in (it alone sees the engine).
struct Handlers {
  // Diagnoses the streams the feed hands out, reading them as they arrive; called once a
  // diagnosis slot is free, on its own thread while the connection's thread feeds it.
  std::function<Diagnosed(io::StreamFeed& feed, const DiagnoseRequest& request)> diagnose;
  // `firstfault search --format json` for a text (at most `limit` results).
  std::function<std::string(std::string_view text, size_t limit)> search;
  const kb::KnowledgeBase* kb = nullptr;
  std::string version;  // "firstfault 0.1.0", shown on the page and in /healthz
};

// A bounded number of holders at once, and a bounded queue behind them (the diagnoses).
class Admission {
 public:
  Admission(unsigned running, unsigned waiting) : running_(running), waiting_(waiting) {}
  enum class Outcome { kAdmitted, kQueueFull, kTimedOut };
  // Blocks until a slot is free (at most `wait`); kQueueFull at once when the queue is full.
  Outcome enter(std::chrono::milliseconds wait);
  void leave();
  unsigned running() const;
  unsigned waiting() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  unsigned running_, waiting_;
  unsigned in_ = 0, queued_ = 0;
};

// True when `host` (a Host header: name or address, with or without a port) names the
// loopback address the server listens on at `port`: localhost, 127.0.0.1, [::1].
bool host_is_loopback(std::string_view host, int port);
bool is_loopback_address(std::string_view address);

class Server {
 public:
  Server(Options options, Handlers handlers);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  // Binds the address; the port (the chosen one when options.port is 0), or the error.
  Result<int> bind();
  // Serves until stop(). False when the server could not run.
  bool run();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The page's assets and the bundled samples (embedded at build time).
struct Sample {
  std::string_view name;   // "rank_exception.log"
  std::string_view title;  // what it shows
  std::string_view text;
};
const std::vector<Sample>& samples();
std::string_view asset(std::string_view name);  // "index.html", "app.js", "app.css"; empty: none

// The encyclopedia's answers (kb.h's Entry as JSON): the list, and one entry in full.
std::string entries_json(const kb::KnowledgeBase& kb);
std::string entry_json(const kb::Entry& e);

}  // namespace ff::serve
