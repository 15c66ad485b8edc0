#include "history/history.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>

#include "base/escape.h"

namespace ff::app {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS diagnoses ("
    " id INTEGER PRIMARY KEY,"
    " at INTEGER NOT NULL,"
    " command TEXT NOT NULL,"
    " job TEXT NOT NULL,"
    " attempt INTEGER NOT NULL,"
    " verdict TEXT NOT NULL,"
    " entry TEXT NOT NULL,"
    " category TEXT NOT NULL,"
    " fingerprint TEXT NOT NULL,"
    " rank INTEGER NOT NULL,"
    " node TEXT NOT NULL,"
    " title TEXT NOT NULL,"
    " UNIQUE (job, attempt, fingerprint));"
    "CREATE INDEX IF NOT EXISTS diagnoses_fingerprint ON diagnoses (fingerprint, at);";

// The scheduler's columns (issue 36), added to a database made before them: an older
// firstfault reading it again ignores them.
constexpr std::pair<const char*, const char*> kSchedulerColumns[] = {
    {"job_id", "TEXT NOT NULL DEFAULT ''"},    {"user", "TEXT NOT NULL DEFAULT ''"},
    {"partition", "TEXT NOT NULL DEFAULT ''"}, {"account", "TEXT NOT NULL DEFAULT ''"},
    {"node_list", "TEXT NOT NULL DEFAULT ''"}, {"gpu_hours", "REAL NOT NULL DEFAULT 0"}};

// A prepared statement, finalised when it goes.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { ok_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) == SQLITE_OK; }
  ~Stmt() { sqlite3_finalize(s_); }
  bool ok() const { return ok_; }
  void bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  int step() { return sqlite3_step(s_); }
  std::string text(int i) {
    const unsigned char* t = sqlite3_column_text(s_, i);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s_, i))) : "";
  }
  int64_t integer(int i) { return sqlite3_column_int64(s_, i); }
  void bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
  double real(int i) { return sqlite3_column_double(s_, i); }

 private:
  sqlite3_stmt* s_ = nullptr;
  bool ok_ = false;
};

std::string count_word(int n) {
  if (n == 1) return "once";
  if (n == 2) return "twice";
  return std::to_string(n) + " times";
}

}  // namespace

std::string ordinal(int n) {
  const int mod100 = n % 100, mod10 = n % 10;
  const char* suffix = (mod100 >= 11 && mod100 <= 13) ? "th"
                       : mod10 == 1                   ? "st"
                       : mod10 == 2                   ? "nd"
                       : mod10 == 3                   ? "rd"
                                                      : "th";
  return std::to_string(n) + suffix;
}

std::string history_path() {
  if (const char* p = std::getenv("FIRSTFAULT_HISTORY"); p && *p) return p;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return std::string(x) + "/firstfault/history.db";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/state/firstfault/history.db";
  return {};
}

std::string job_key(const std::vector<std::string>& inputs, int& attempt) {
  attempt = -1;
  std::vector<std::string> parts;
  for (const auto& in : inputs) {
    if (in == "-" || in.rfind("$ ", 0) == 0) {  // stdin; a command (run)
      parts.push_back(in == "-" ? "<stdin>" : in);
      continue;
    }
    std::error_code ec;
    fs::path p = fs::absolute(in, ec).lexically_normal();
    fs::path kept;
    for (const auto& part : p) {
      const std::string s = part.string();
      if (s.rfind("attempt_", 0) == 0 && s.size() > 8 && std::all_of(s.begin() + 8, s.end(), ::isdigit)) {
        attempt = std::max(attempt, std::atoi(s.c_str() + 8));
        continue;
      }
      kept /= part;
    }
    parts.push_back(kept.string());
  }
  std::sort(parts.begin(), parts.end());
  std::string key;
  for (const auto& p : parts) key += (key.empty() ? "" : "\n") + p;
  return key;
}

Result<std::unique_ptr<History>> History::open(const std::string& path) {
  if (path.empty()) return make_error(ErrorCode::kNotFound, "no place for the history (set XDG_STATE_HOME or HOME)");
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path();
  // The history holds what the user ran and what failed: its folder is the user's alone
  // (0700, and a folder of ours named firstfault made so when an older version made it
  // 0755), the database 0600 (SQLite gives its journal the same mode).
  if (!dir.empty()) {
    if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);
    struct stat st {};
    if (::mkdir(dir.c_str(), 0700) != 0 && dir.filename() == "firstfault" && ::lstat(dir.c_str(), &st) == 0 &&
        S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) != 0)
      ::chmod(dir.c_str(), st.st_mode & 0700);
  }
  if (const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600); fd >= 0) {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) != 0)
      ::fchmod(fd, st.st_mode & 0600);
    ::close(fd);
  }
  sqlite3* db = nullptr;
  // NOFOLLOW: a symbolic link planted at the history's place is not written through.
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "cannot open";
    sqlite3_close(db);
    return make_error(ErrorCode::kIo, "history: " + msg, {path, 0, ""});
  }
  sqlite3_busy_timeout(db, 2000);  // a watch and a diagnose at once wait for each other
  char* err = nullptr;
  if (sqlite3_exec(db, kSchema, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "cannot create the table";
    sqlite3_free(err);
    sqlite3_close(db);
    return make_error(ErrorCode::kIo, "history: " + msg, {path, 0, ""});
  }
  std::set<std::string> have;
  {
    Stmt cols(db, "PRAGMA table_info(diagnoses)");
    while (cols.ok() && cols.step() == SQLITE_ROW) have.insert(cols.text(1));
  }
  for (const auto& [name, type] : kSchedulerColumns) {
    if (have.count(name)) continue;
    const std::string sql = fmt::format("ALTER TABLE diagnoses ADD COLUMN {} {}", name, type);
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "cannot add a column";
      sqlite3_free(err);
      sqlite3_close(db);
      return make_error(ErrorCode::kIo, "history: " + msg, {path, 0, ""});
    }
  }
  return std::unique_ptr<History>(new History(db));
}

History::~History() { sqlite3_close(db_); }

Status History::add(const analyze::Diagnosis& d, const std::string& command, const std::vector<std::string>& inputs,
                    int64_t now_s, const SchedulerFacts* facts) {
  HistoryRow r;
  r.unix_s = now_s;
  r.command = command;
  r.job = job_key(inputs, r.attempt);
  r.verdict = analyze::verdict_name(d.verdict);
  if (d.primary) {
    r.entry = d.primary->id;
    r.category = d.primary->category;
    r.fingerprint = d.primary->fingerprint.empty() ? d.primary->id : d.primary->fingerprint;
    r.rank = d.primary->rank.value_or(-1);
    r.node = d.primary->node;
    r.title = d.primary->title;
  }
  if (facts) {
    r.job_id = facts->job_id;
    r.user = facts->user;
    r.partition = facts->partition;
    r.account = facts->account;
    r.node_list = facts->node_list;
    r.gpu_hours = facts->gpu_hours;
  }
  Stmt s(db_,
         "INSERT INTO diagnoses (at, command, job, attempt, verdict, entry, category, fingerprint, rank, node, title, "
         "job_id, user, partition, account, node_list, gpu_hours) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17) "
         "ON CONFLICT (job, attempt, fingerprint) DO UPDATE SET at = ?1, command = ?2, verdict = ?5, rank = ?9, "
         "node = ?10, title = ?11, job_id = ?12, user = ?13, partition = ?14, account = ?15, node_list = ?16, "
         "gpu_hours = ?17");
  if (!s.ok()) return make_error(ErrorCode::kIo, std::string("history: ") + sqlite3_errmsg(db_));
  s.bind(1, r.unix_s);
  s.bind(2, r.command);
  s.bind(3, r.job);
  s.bind(4, static_cast<int64_t>(r.attempt));
  s.bind(5, r.verdict);
  s.bind(6, r.entry);
  s.bind(7, r.category);
  s.bind(8, r.fingerprint);
  s.bind(9, static_cast<int64_t>(r.rank));
  s.bind(10, r.node);
  s.bind(11, r.title);
  s.bind(12, r.job_id);
  s.bind(13, r.user);
  s.bind(14, r.partition);
  s.bind(15, r.account);
  s.bind(16, r.node_list);
  s.bind(17, r.gpu_hours);
  if (s.step() != SQLITE_DONE) return make_error(ErrorCode::kIo, std::string("history: ") + sqlite3_errmsg(db_));
  last_ = r;
  return Status::Ok();
}

Recurrence History::recurrence(const HistoryRow& row, int64_t now_s) {
  Recurrence out;
  if (row.fingerprint.empty()) return out;
  // One count per job (its attempts are one run), this job included.
  Stmt s(db_, "SELECT job, node FROM diagnoses WHERE fingerprint = ?1 AND at >= ?2 ORDER BY at");
  if (!s.ok()) return out;
  s.bind(1, row.fingerprint);
  s.bind(2, now_s - 7 * 24 * 3600);
  std::map<std::string, std::string> job_node;
  while (s.step() == SQLITE_ROW) job_node[s.text(0)] = s.text(1);
  out.times = static_cast<int>(job_node.size());
  std::map<std::string, int> per_node;
  for (const auto& [job, node] : job_node) {
    if (!node.empty()) ++per_node[node];
  }
  for (const auto& [node, n] : per_node) {
    if (n > 1) out.nodes.emplace_back(node, n);
  }
  std::stable_sort(out.nodes.begin(), out.nodes.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (out.times > 1) {
    out.line = fmt::format("{} time this week ({})", ordinal(out.times), row.entry);
    if (!out.nodes.empty()) {
      std::string nodes;
      for (size_t i = 0; i < out.nodes.size() && i < 5; ++i)
        nodes += (i ? ", " : "") + out.nodes[i].first + " " + count_word(out.nodes[i].second);
      out.line += "; node" + std::string(out.nodes.size() > 1 ? "s " : " ") + nodes;
    }
  }
  return out;
}

namespace {
constexpr const char* kColumns =
    "SELECT at, command, job, attempt, verdict, entry, category, fingerprint, rank, node, title, job_id, user, "
    "partition, account, node_list, gpu_hours FROM diagnoses ";

HistoryRow read_row(Stmt& s) {
  HistoryRow r;
  r.unix_s = s.integer(0);
  r.command = s.text(1);
  r.job = s.text(2);
  r.attempt = static_cast<int>(s.integer(3));
  r.verdict = s.text(4);
  r.entry = s.text(5);
  r.category = s.text(6);
  r.fingerprint = s.text(7);
  r.rank = static_cast<int>(s.integer(8));
  r.node = s.text(9);
  r.title = s.text(10);
  r.job_id = s.text(11);
  r.user = s.text(12);
  r.partition = s.text(13);
  r.account = s.text(14);
  r.node_list = s.text(15);
  r.gpu_hours = s.real(16);
  return r;
}
}  // namespace

Status History::each(const std::function<void(const HistoryRow&)>& fn) {
  Stmt s(db_, (std::string(kColumns) + "ORDER BY at, id").c_str());
  if (!s.ok()) return make_error(ErrorCode::kIo, std::string("history: ") + sqlite3_errmsg(db_));
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) fn(read_row(s));
  if (rc != SQLITE_DONE) return make_error(ErrorCode::kIo, std::string("history: ") + sqlite3_errmsg(db_));
  return Status::Ok();
}

std::vector<HistoryRow> History::list(int limit) {
  std::vector<HistoryRow> rows;
  Stmt s(db_, (std::string(kColumns) + "ORDER BY at DESC, id DESC LIMIT ?1").c_str());
  if (!s.ok()) return rows;
  s.bind(1, static_cast<int64_t>(limit > 0 ? limit : -1));
  while (s.step() == SQLITE_ROW) { rows.push_back(read_row(s)); }
  return rows;
}

std::string remember_diagnosis(const analyze::Diagnosis& d, const std::string& command,
                               const std::vector<std::string>& inputs, const SchedulerFacts* facts,
                               const std::string& path) {
  // Test suites (and anyone) turn it off for every command at once.
  if (const char* off = std::getenv("FIRSTFAULT_NO_HISTORY"); off && *off && std::string(off) != "0") return {};
  auto h = History::open(path.empty() ? history_path() : path);
  if (!h.ok()) {
    fmt::print(stderr, "firstfault: {} (--no-history turns it off)\n", escape_for_terminal(h.error().to_string()));
    return {};
  }
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  if (Status st = h.value()->add(d, command, inputs, now, facts); !st.ok()) {
    fmt::print(stderr, "firstfault: {} (--no-history turns it off)\n", escape_for_terminal(st.error().to_string()));
    return {};
  }
  if (!d.primary) return {};
  return h.value()->recurrence(h.value()->last(), now).line;
}

}  // namespace ff::app
