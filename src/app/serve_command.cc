// `firstfault serve`: the web page (src/serve) with its answers from this module's
// functions, so the page, the API and the command line can never disagree: the diagnosis
// is diagnose_loaded's, the search is search_json's, the report is render_report's.
#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "app/commands.h"
#include "pipeline/pipeline.h"
#include "base/escape.h"
#include "base/interrupt.h"
#include "scan/scan.h"
#include "serve/serve.h"
#include "site/search_index.h"

namespace ff::app {

namespace {

// The feed as the scan reads it, noting the names for the verify command.
class NamingFeed final : public io::StreamFeed {
 public:
  NamingFeed(io::StreamFeed& inner, std::vector<std::string>& names) : inner_(inner), names_(names) {}
  bool next(std::string& name, int& fd) override {
    if (!inner_.next(name, fd)) return false;
    names_.push_back(name);
    return true;
  }

 private:
  io::StreamFeed& inner_;
  std::vector<std::string>& names_;
};

serve::Server* g_server = nullptr;

void stop_server(int) {
  if (g_server != nullptr) g_server->stop();
}

// The server's address and limits from the command line.
serve::Options serve_options(const Options& opt) {
  serve::Options so;
  so.bind = opt.bind;
  so.port = opt.port;
  so.limits.max_upload_bytes = opt.max_upload;
  so.limits.max_running = opt.jobs != 0 ? opt.jobs : std::max(2u, std::thread::hardware_concurrency());
  so.limits.max_waiting = opt.queue;
  so.limits.read_timeout_s = opt.read_timeout;
  so.limits.write_timeout_s = std::max(opt.read_timeout, 10);
  return so;
}

// One upload diagnosed as `diagnose` would (one scanning thread: several diagnoses at once
// share the cores), rendered in the formats the page offers.
serve::Diagnosed diagnose_upload(const Loaded& loaded, const Options& opt, io::StreamFeed& feed,
                                 const serve::DiagnoseRequest& request) {
  Options o = opt;
  o.redact = request.redact;
  // The report's encyclopedia link opens the entry on the page itself (its frame may
  // navigate the page on a click: index.html's sandbox).
  o.entry_link = [](const std::string& id) { return "/#entry=" + id; };
  scan::ScanOptions sc;
  sc.threads = 1;  // several diagnoses at once share the cores (serve --jobs)
  if (opt.max_bytes > 0) sc.read.max_total_bytes = opt.max_bytes;
  std::vector<std::string> names;
  NamingFeed naming(feed, names);
  const ScanFn scan_fn = [&](const scan::Engine& engine, scan::EventSink& sink) {
    return scan::scan_feed(engine, naming, sink, sc);
  };
  DiagnosedJob job;
  serve::Diagnosed out;
  if (!diagnose_loaded(loaded, o, scan_fn, names, job)) throw std::runtime_error("--redact could not start");
  out.nothing_read = job.nothing_read;
  if (job.nothing_read) mark_nothing_read(job.d);
  out.verdict = analyze::verdict_name(job.d.verdict);
  out.json = render_report(job, "json", o);
  out.html = render_report(job, "html", o);
  out.markdown = render_report(job, "markdown", o);
  return out;
}

}  // namespace

// The handlers handed to serve are lambdas over the loaded KB and options; the server runs
// until a signal.
int run_serve(const Options& opt) {
  if (!serve::is_loopback_address(opt.bind) && !opt.allow_remote) {
    fmt::print(stderr,
               "firstfault: --bind {} is not a loopback address: other machines could send logs to this server and "
               "read its diagnoses. Logs can hold private data; add --allow-remote if that is what you want.\n",
               escape_for_terminal(opt.bind));
    return 2;
  }
  auto loaded = load_or_say(opt, false, KbFields::kAll);
  if (!loaded) return 2;
  const site::KeywordIndex index(*loaded->kb);
  const serve::Options so = serve_options(opt);

  serve::Handlers h;
  h.kb = loaded->kb.get();
  h.version = "firstfault " FF_VERSION;
  h.search = [&](std::string_view text, size_t limit) {
    return search_json(*loaded, index, text, limit)
               .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
           "\n";
  };
  h.diagnose = [&](io::StreamFeed& feed, const serve::DiagnoseRequest& request) {
    return diagnose_upload(*loaded, opt, feed, request);
  };

  serve::Server server(so, std::move(h));
  Result<int> port = server.bind();
  if (!port.ok()) {
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(port.error().to_string()));
    return 2;
  }
  const std::string host = opt.bind.find(':') != std::string::npos ? "[" + opt.bind + "]" : opt.bind;
  const std::string url = fmt::format("http://{}:{}/", host, *port);
  if (!serve::is_loopback_address(opt.bind)) {
    fmt::print(stderr,
               "firstfault: warning: serving on {}, not only this machine: anyone who can reach it can send logs "
               "and read the diagnoses; logs may be private.\n",
               escape_for_terminal(opt.bind));
  }
  fmt::print("firstfault serve: {} (Ctrl-C stops)\n", url);
  std::fflush(stdout);
  if (opt.open_browser) {
    // xdg-open, without a shell: the URL is ours, but no shell is needed to pass it.
    if (::fork() == 0) {
      ::execlp("xdg-open", "xdg-open", url.c_str(), static_cast<char*>(nullptr));
      std::_Exit(127);
    }
  }
  g_server = &server;
  std::signal(SIGINT, stop_server);
  std::signal(SIGTERM, stop_server);
  const bool ok = server.run();
  g_server = nullptr;
  fmt::print(stderr, "firstfault serve: stopped\n");
  return ok ? 0 : 2;
}

}  // namespace ff::app
