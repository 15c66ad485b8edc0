// kb/kb.load.cc — load(): the given or embedded files and every *.yaml of the override
// folders, hashed; the model from the cache when it has this hash, else each file parsed
// (an entry, or a formats file under formats/) and the cache written.
#include <fcntl.h>
#include <re2/re2.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <map>

#include "base/strings.h"
#include "kb/kb.h"
#include "kb/kb_internal.h"

namespace ff::kb {

// Checks that a regex is in the subset both RE2 and Vectorscan accept.
std::string check_regex(const std::string& rx) {
  RE2::Options opts;
  opts.set_log_errors(false);
  RE2 re(rx, opts);
  if (!re.ok()) return "regex does not compile: " + re.error();
  static const char* kUnsupported[] = {"(?=", "(?!", "(?<=", "(?<!", "(?>", "\\K", "\\Z", "\\z"};
  for (const char* bad : kUnsupported) {
    if (rx.find(bad) != std::string::npos) return std::string("regex uses unsupported construct ") + bad;
  }
  RE2 empty_probe(rx, opts);
  if (RE2::PartialMatch("", empty_probe)) return "regex matches the empty string, so it would match every line";
  return {};
}

namespace {

// The whole of a regular file, or false when it cannot be opened or read.
bool read_file(const std::string& path, std::string& out) {
  // O_NONBLOCK: a FIFO named like a KB file must not hang the run (it is not regular).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (ok) out.resize(static_cast<size_t>(st.st_size));
  for (size_t got = 0; ok && got < out.size();) {
    ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      ok = false;  // an error, or a file that shrank under us
    else
      got += static_cast<size_t>(n);
  }
  ::close(fd);
  return ok;
}

bool is_format_path(const std::string& path) { return path.find("formats/") != std::string::npos; }

// 1-based line of the first byte of `s` that is not valid UTF-8, or 0 when it is all valid.
int first_invalid_utf8_line(std::string_view s) {
  const std::string clean = sanitize_utf8(s);
  if (clean == s) return 0;
  // sanitize_utf8 keeps valid bytes and puts U+FFFD (3 bytes) for each bad one: the first
  // difference is where the first bad byte was.
  size_t i = 0;
  while (i < s.size() && i < clean.size() && s[i] == clean[i]) ++i;
  return 1 + static_cast<int>(std::count(s.begin(), s.begin() + static_cast<long>(i), '\n'));
}

// `override_files`: the id -> file of the entries the override directories gave so far:
// an id an override gives twice is an error (which one is meant cannot be told), while
// an override of an embedded entry is the feature (kb/README.md).
void load_file(const File& f, KnowledgeBase& kb, std::vector<Error>& errors,
               std::map<std::string, std::string>& id_files, bool is_override,
               std::map<std::string, std::string>& override_files) {
  // The names tables (kb/names/*.tsv) are embedded beside the YAML for `kb check`
  // (app/kb_names.cc); they are no entries.
  if (!ends_with(f.path, ".yaml") && !ends_with(f.path, ".yml")) return;
  // Every text of the KB is shown and written as UTF-8 (JSON output cannot hold anything
  // else: nlohmann throws on it); a file that is not is refused, saying where.
  if (int line = first_invalid_utf8_line(f.content); line > 0) {
    errors.push_back(make_error(ErrorCode::kInvalidKb, "not valid UTF-8; the file is skipped", {f.path, line, ""}));
    return;
  }
  YAML::Node doc;
  try {
    doc = YAML::Load(f.content);
  } catch (const YAML::Exception& ex) {
    errors.push_back(make_error(ErrorCode::kInvalidKb, "YAML syntax error: " + ex.msg,
                                {f.path, ex.mark.line >= 0 ? ex.mark.line + 1 : 0, ""}));
    return;
  }
  try {
    if (is_format_path(f.path)) {
      parse_formats(doc, f.path, kb, errors);
      return;
    }
    bool ok = false;
    Entry e = parse_entry(doc, f.path, errors, ok, f.trusted);
    if (!ok) return;
    auto seen = id_files.find(e.id);
    if (seen != id_files.end() && !is_override) {
      errors.push_back(make_error(ErrorCode::kInvalidKb, "duplicate id '" + e.id + "' (also in " + seen->second + ")",
                                  {f.path, doc["id"].Mark().line + 1, "id"}));
      return;
    }
    if (is_override) {
      auto twice = override_files.find(e.id);
      if (twice != override_files.end()) {
        errors.push_back(make_error(ErrorCode::kInvalidKb,
                                    "duplicate id '" + e.id + "' (also in " + twice->second + ", which is used)",
                                    {f.path, doc["id"].Mark().line + 1, "id"}));
        return;
      }
      override_files[e.id] = f.path;
    }
    id_files[e.id] = f.path;
    Loader::add(kb, std::move(e));
  } catch (const YAML::Exception& ex) {
    errors.push_back(make_error(ErrorCode::kInvalidKb, "unexpected YAML shape: " + ex.msg,
                                {f.path, ex.mark.line >= 0 ? ex.mark.line + 1 : 0, ""}));
  }
}

uint64_t hash_file(const File& f, uint64_t hash) { return fnv1a64(f.content, fnv1a64(f.path, hash)); }

// `files` null: the embedded files.
LoadResult load_files(const std::vector<File>* files, const std::vector<std::string>& override_dirs,
                      const LoadOptions& options) {
  namespace fs = std::filesystem;
  LoadResult r;
  // 1. The files of each override directory in order; they come after the given ones.
  std::vector<File> overrides;
  for (const std::string& dir : override_dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      r.errors.push_back(make_error(ErrorCode::kNotFound, "knowledge-base directory not found", {dir, 0, ""}));
      continue;
    }
    std::vector<std::string> paths;
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec) && (it->path().extension() == ".yaml" || it->path().extension() == ".yml"))
        paths.push_back(it->path().string());
    }
    std::sort(paths.begin(), paths.end());
    for (const std::string& p : paths) {
      File f{p, "", false};
      if (!read_file(p, f.content)) {
        r.errors.push_back(make_error(ErrorCode::kIo, "cannot read knowledge-base file", {p, 0, ""}));
        continue;
      }
      overrides.push_back(std::move(f));
    }
  }
  // 2. The hash of everything decides whether the cached model can be used. The embedded
  // files' part was computed at build time, so that a start neither hashes nor copies out
  // their megabyte.
  uint64_t hash = fnv1a64(kCacheVersion);
  if (!files) {
    uint64_t embedded = embedded_files_hash();
    hash = fnv1a64(std::string_view(reinterpret_cast<const char*>(&embedded), sizeof embedded), hash);
  } else {
    for (const File& f : *files) hash = hash_file(f, hash);
  }
  for (const File& f : overrides) hash = hash_file(f, hash);
  std::string cache_file;
  if (!options.cache_dir.empty()) {
    char name[64];
    std::snprintf(name, sizeof(name), "kb-%016llx.bin", static_cast<unsigned long long>(hash));
    cache_file = (fs::path(options.cache_dir) / name).string();
  }
  KnowledgeBase cached;
  std::vector<Error> cached_errors;
  if (!cache_file.empty() && read_cache(cache_file, hash, options.page_fields, cached, cached_errors)) {
    r.kb = std::move(cached);
    r.errors.insert(r.errors.end(), cached_errors.begin(), cached_errors.end());
  } else {
    // 3. Parse.
    std::map<std::string, std::string> id_files, override_files;
    size_t first_parse_error = r.errors.size();
    for (const File& f : files ? *files : embedded_files())
      load_file(f, r.kb, r.errors, id_files, false, override_files);
    for (const File& f : overrides) load_file(f, r.kb, r.errors, id_files, true, override_files);
    if (!cache_file.empty())
      write_cache(options.cache_dir, cache_file, hash, r.kb,
                  std::vector<Error>(r.errors.begin() + static_cast<long>(first_parse_error), r.errors.end()));
    // Left out here too, so that the model is the same whether the cache had it or not.
    if (!options.page_fields) {
      for (Entry& e : r.kb.entries) clear_page_fields(e);
    }
  }
  r.kb.hash = hash;
  Loader::index(r.kb);
  return r;
}

}  // namespace

LoadResult load(const std::vector<File>& files, const std::vector<std::string>& override_dirs,
                const LoadOptions& options) {
  return load_files(&files, override_dirs, options);
}

LoadResult load_embedded(const std::vector<std::string>& override_dirs, const LoadOptions& options) {
  return load_files(nullptr, override_dirs, options);
}

}  // namespace ff::kb
