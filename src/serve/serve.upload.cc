// serve/serve.upload.cc — POST /api/diagnose: the body (a text, or multipart files)
// written into a pipe per file as it arrives (UploadFeed) and read by the diagnosis on its
// own thread, in a slot Admission gives; the limits answered with 413, 503 or 400.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "serve/serve_internal.h"

namespace ff::serve {

namespace {

// A stream per uploaded file: the connection's thread writes into a pipe as the body
// arrives; the diagnosis thread reads the other end (io::read_streams).
class UploadFeed final : public io::StreamFeed {
 public:
  ~UploadFeed() override {
    close_current();
    for (auto& [name, fd] : pending_) ::close(fd);
  }
  // Starts the next stream; false when no pipe could be made.
  bool open(std::string name) {
    close_current();
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return false;
    ::fcntl(p[1], F_SETPIPE_SZ, 1 << 20);  // fewer wake-ups; a hint
    write_fd_ = p[1];
    dropping_ = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (streams_ == 0) first_name_ = name;
      pending_.emplace_back(std::move(name), p[0]);
      ++streams_;
    }
    cv_.notify_one();
    return true;
  }
  // The current stream's next bytes. A stream the reader stopped reading (a binary file,
  // the byte limit) is closed on its side: the rest of it is dropped.
  void write(const char* data, size_t n) {
    while (n > 0 && write_fd_ >= 0 && !dropping_) {
      const ssize_t w = ::write(write_fd_, data, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        dropping_ = true;  // EPIPE
        break;
      }
      data += w;
      n -= static_cast<size_t>(w);
    }
  }
  void close_current() {
    if (write_fd_ >= 0) ::close(write_fd_);
    write_fd_ = -1;
  }
  // No more streams.
  void finish() {
    close_current();
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
    }
    cv_.notify_one();
  }
  bool next(std::string& name, int& fd) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !pending_.empty() || finished_; });
    if (pending_.empty()) return false;
    name = std::move(pending_.front().first);
    fd = pending_.front().second;
    pending_.pop_front();
    return true;
  }
  size_t streams() const {
    std::lock_guard<std::mutex> lock(mu_);
    return streams_;
  }
  // The first stream's name: what the downloads are named after.
  std::string first_name() const {
    std::lock_guard<std::mutex> lock(mu_);
    return first_name_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::string, int>> pending_;
  bool finished_ = false;
  size_t streams_ = 0;
  std::string first_name_;
  int write_fd_ = -1;
  bool dropping_ = false;
};

// The name an uploaded file is shown by: its last path component, printable, bounded.
std::string display_name(std::string_view given) {
  if (const size_t slash = given.find_last_of("/\\"); slash != std::string_view::npos) given = given.substr(slash + 1);
  std::string out;
  for (char c : given) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) continue;
    out += c;
    if (out.size() >= 200) break;
  }
  return out.empty() || out == "." || out == ".." ? "pasted.log" : out;
}

// One multipart body's parts, as civetweb's mg_handle_form_request hands them over: each
// part's data comes in pieces of at most 8 KiB (its buffer), so a file is written into its
// pipe as it arrives, never held whole.
struct FormParts {
  UploadFeed& feed;
  uint64_t most;
  uint64_t total = 0;
  bool in_file = false;  // the current part is a file (a plain form field is not a log)
  bool over = false, no_pipe = false;

  static int found(const char*, const char* filename, char*, size_t, void* self) {
    auto& f = *static_cast<FormParts*>(self);
    // Only a part with a file name is an input (docs/serve.md); a form field's value is read
    // (and counted against the limit) and dropped.
    f.in_file = filename != nullptr && filename[0] != '\0';
    if (!f.in_file) {
      f.feed.close_current();
    } else if (!f.feed.open(display_name(filename))) {
      f.no_pipe = true;
      return MG_FORM_FIELD_STORAGE_ABORT;
    }
    return MG_FORM_FIELD_STORAGE_GET;
  }
  static int get(const char*, const char* value, size_t n, void* self) {
    auto& f = *static_cast<FormParts*>(self);
    f.total += n;
    if (f.total > f.most) {
      f.over = true;
      return MG_FORM_FIELD_HANDLE_ABORT;
    }
    if (f.in_file) f.feed.write(value, n);
    return MG_FORM_FIELD_HANDLE_GET;
  }
};

}  // namespace

// Over 80 lines: one upload's life in order (the limit, a slot, the diagnosing thread fed
// while the body is read, then the answer for each outcome), sharing the feed and the slot.
void Server::Impl::diagnose(Request& req, Response& res) {
  const Limits& lim = options.limits;
  res.set_header("Cache-Control", "no-store");
  res.set_header("Content-Security-Policy", kApiCsp);
  if (const int64_t len = req.content_length(); len > 0 && static_cast<uint64_t>(len) > lim.max_upload_bytes) {
    // Drained a little (the client reads the answer, not a reset), then the connection is
    // closed: the rest of the body is never read as a request.
    drain(req);
    return refuse(res, 413,
                  fmt::format("the upload is {} bytes; this server accepts at most {} (firstfault serve "
                              "--max-upload, or run firstfault diagnose on the file)",
                              len, lim.max_upload_bytes));
  }
  switch (admission.enter(std::chrono::seconds(lim.queue_wait_s))) {
    case Admission::Outcome::kAdmitted: break;
    case Admission::Outcome::kQueueFull:
      res.set_header("Retry-After", "5");
      return refuse(res, 503,
                    fmt::format("busy: {} diagnoses running and {} waiting; try again in a few seconds",
                                lim.max_running, lim.max_waiting));
    case Admission::Outcome::kTimedOut:
      res.set_header("Retry-After", "10");
      return refuse(res, 503,
                    fmt::format("busy: no diagnosis slot came free within {} s; try again", lim.queue_wait_s));
  }
  struct Leave {
    Admission& a;
    ~Leave() { a.leave(); }
  } leave{admission};

  DiagnoseRequest dr;
  dr.redact = req.param("redact") == "1";
  UploadFeed feed;
  std::shared_ptr<Diagnosed> result = std::make_shared<Diagnosed>();
  std::string failure;
  std::thread worker([&] {
    try {
      *result = handlers.diagnose(feed, dr);
    } catch (const std::exception& e) {
      failure = e.what();
      std::string name;
      int fd;
      while (feed.next(name, fd)) ::close(fd);  // so the writer never blocks on a pipe nobody reads
    }
  });
  req.continue_if_expected();
  bool over = false, no_pipe = false, ok;
  if (req.is_multipart()) {
    FormParts parts{feed, lim.max_upload_bytes};
    mg_form_data_handler handler{FormParts::found, FormParts::get, nullptr, &parts};
    // A negative count: malformed, cut short, or a client gone silent.
    ok = mg_handle_form_request(req.conn, &handler) >= 0;
    over = parts.over;
    no_pipe = parts.no_pipe;
  } else {
    const std::string name = req.has_param("name") ? req.param("name") : "pasted.log";
    ok = feed.open(display_name(name));
    no_pipe = !ok;
    BodyReader body(req);
    std::vector<char> buf(256u << 10);
    long n = 0;
    while (ok && (n = body.read(buf.data(), buf.size())) > 0) {
      if (body.total() > lim.max_upload_bytes) {
        over = true;
        break;
      }
      feed.write(buf.data(), static_cast<size_t>(n));
    }
    ok = ok && n == 0;
  }
  feed.finish();
  worker.join();
  if (over) {
    drain(req);
    return refuse(res, 413,
                  fmt::format("the upload is larger than {} bytes, the most this server accepts "
                              "(firstfault serve --max-upload)",
                              lim.max_upload_bytes));
  }
  if (no_pipe) return refuse(res, 503, std::string("cannot start a diagnosis: ") + std::strerror(errno));
  if (!ok) {
    return refuse(res, 400,
                  req.is_multipart()
                      ? "the multipart body could not be read (malformed, cut short, or the client went silent)"
                      : "the body could not be read (cut short, or the client went silent)");
  }
  if (!failure.empty()) return set_error(res, 500, "the diagnosis failed: " + failure);
  if (feed.streams() == 0) return set_error(res, 400, "no file in the upload: send a text body or multipart files");
  result->name = feed.first_name();
  res.status = result->nothing_read ? 422 : 200;
  res.set_header("X-Firstfault-Verdict", result->verdict);
  if (req.param("keep") == "1") res.set_header("X-Firstfault-Report", reports.put(result));
  res.set_content(result->json, "application/json");
}

}  // namespace ff::serve
