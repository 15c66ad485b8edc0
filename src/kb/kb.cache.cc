// kb/kb.cache.cc — the parsed-KB cache: YAML parsing dominates start-up, so the loaded
// model is kept keyed by the hash of every file's path and content, in a binary layout
// read straight into the structs: u32 counts, length-prefixed strings, numbers as their
// bytes (the file never leaves the machine that wrote it). The reader checks every length
// against the bytes left, so a short or damaged file is noticed and the YAML parsed instead.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <type_traits>

#include "base/cache.h"
#include "kb/kb.h"
#include "kb/kb_internal.h"

namespace ff::kb {

namespace {

constexpr const char* kCacheMagic = "ffkb";
// kCacheVersion, with the history of the layout, is in kb_internal.h: load() keys on it.

// One field list per type serves both directions, so the writer and the reader cannot
// disagree on the layout.
template <typename T, typename U>
concept Is = std::is_same_v<std::remove_const_t<T>, U>;

void fields(auto& io, Is<Source> auto& s) { io(s.repo, s.ref, s.path, s.line, s.url, s.since, s.until); }
void fields(auto& io, Is<Pattern> auto& p) {
  io(p.id, p.role, p.regex, p.literal, p.priority, p.precedence, p.line, p.sources, p.source_note);
}
void fields(auto& io, Is<Example> auto& x) { io(x.text, x.captures, x.line); }
void fields(auto& io, Is<Symptom> auto& s) { io(s.symptom, s.why); }
void fields(auto& io, Is<Reference> auto& r) { io(r.url, r.note); }
void fields(auto& io, Is<Lookalike> auto& l) { io(l.id, l.how_to_tell); }
void fields(auto& io, Is<Faq> auto& f) {
  io(f.hardware_or_software, f.fix_time, f.inference, f.cheapest_confirm, f.scale, f.monitor, f.docs);
}
void fields(auto& io, Is<LintData> auto& l) {
  io(l.commands, l.per_process_state, l.configurable_frameworks, l.code_example_kinds, l.default_branches,
     l.tag_singletons);
}
// An entry is the fields a diagnosis reads, then the page fields (LoadOptions::page_fields),
// which the cache keeps in a section of their own so that a load without them skips it.
void fields(auto& io, Is<Entry> auto& e) {
  io(e.id, e.title, e.category, e.severity, e.wrapper, e.after_completion, e.summary, e.patterns, e.symptoms,
     e.root_cause, e.fix, e.verify, e.verify_where, e.verify_expect, e.references, e.file);
}
void page_fields(auto& io, Is<Entry> auto& e) {
  io(e.phase, e.frameworks, e.tags, e.mechanism, e.affected, e.confirm, e.transience, e.lookalikes, e.prevention,
     e.related, e.code_examples, e.examples, e.negatives, e.transience_recovers, e.transience_stop, e.faq,
     e.code_examples_note);
}
void fields(auto& io, Is<PrefixFormat> auto& f) {
  io(f.id, f.regex, f.consume, f.time_format, f.glued, f.end, f.rank_wins, f.samples, f.line);
}
void fields(auto& io, Is<ExceptionRule> auto& r) { io(r.type, r.category); }
void fields(auto& io, Is<FrameRule> auto& r) { io(r.path, r.category); }
void fields(auto& io, Is<MetricUnit> auto& u) { io(u.unit, u.scale); }
void fields(auto& io, Is<MetricSpec> auto& m) { io(m.name, m.keys, m.event_keys, m.units, m.total_of); }
void fields(auto& io, Is<KnowledgeBase> auto& kb) {
  io(kb.entries, kb.prefixes, kb.source_names, kb.glue, kb.identity, kb.rank_headers, kb.exceptions, kb.frames,
     kb.metric_specs, kb.exception_default_category, kb.teardown_exceptions, kb.library_frames, kb.lint);
}
void fields(auto& io, Is<Location> auto& l) { io(l.file, l.line, l.field); }
void fields(auto& io, Is<Error> auto& e) { io(e.code, e.message, e.where); }

// Empties every field it is given (page_fields(clear, e) for a load without them).
struct ClearFields {
  template <typename... T>
  void operator()(T&... v) const {
    ((v = T{}), ...);
  }
};

class CacheWriter {
 public:
  template <typename... T>
  void operator()(const T&... v) {
    (put(v), ...);
  }
  const std::string& bytes() const { return out_; }

 private:
  template <typename T>
  void scalar(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put(uint32_t v) { scalar(v); }
  void put(uint64_t v) { scalar(v); }
  void put(int v) { scalar(v); }
  void put(double v) { scalar(v); }
  void put(bool v) { scalar(static_cast<uint8_t>(v)); }
  void put(Role v) { scalar(static_cast<uint8_t>(v)); }
  void put(Precedence v) { scalar(static_cast<uint8_t>(v)); }
  void put(ErrorCode v) { scalar(static_cast<uint8_t>(v)); }
  void put(const std::string& s) {
    put(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  template <typename T>
  void put(const std::vector<T>& v) {
    put(static_cast<uint32_t>(v.size()));
    for (const T& x : v) put(x);
  }
  void put(const std::map<std::string, std::string>& m) {
    put(static_cast<uint32_t>(m.size()));
    for (const auto& [k, v] : m) put(k), put(v);
  }
  template <typename T>
  void put(const T& x) {
    fields(*this, x);
  }

  std::string out_;
};

class CacheReader {
 public:
  explicit CacheReader(std::string_view in) : in_(in) {}
  template <typename... T>
  void operator()(T&... v) {
    (get(v), ...);
  }
  // Everything read was there and nothing is left over.
  bool complete() const { return ok_ && pos_ == in_.size(); }
  size_t pos() const { return pos_; }

 private:
  // The next n bytes, or null (and the reader has failed) when fewer are left.
  const char* take(size_t n) {
    if (!ok_ || n > in_.size() - pos_) {
      ok_ = false;
      return nullptr;
    }
    pos_ += n;
    return in_.data() + pos_ - n;
  }
  template <typename T>
  void scalar(T& v) {
    if (const char* p = take(sizeof v)) std::memcpy(&v, p, sizeof v);
  }
  // A one-byte enum whose value must not pass `last`.
  template <typename E>
  void enumerator(E& v, E last) {
    uint8_t b = 0;
    scalar(b);
    if (b > static_cast<uint8_t>(last))
      ok_ = false;
    else
      v = static_cast<E>(b);
  }
  // Every item of a list takes at least four bytes, so a count the bytes left cannot hold
  // is damage, found before anything is built for it.
  uint32_t count() {
    uint32_t n = 0;
    scalar(n);
    if (n > (in_.size() - pos_) / 4) ok_ = false;
    return ok_ ? n : 0;
  }
  void get(uint32_t& v) { scalar(v); }
  void get(uint64_t& v) { scalar(v); }
  void get(int& v) { scalar(v); }
  void get(double& v) { scalar(v); }
  void get(bool& v) {
    uint8_t b = 0;
    scalar(b);
    if (b > 1) ok_ = false;
    v = b == 1;
  }
  void get(Role& v) { enumerator(v, Role::kCompletion); }
  void get(Precedence& v) { enumerator(v, Precedence::kNone); }
  void get(ErrorCode& v) { enumerator(v, ErrorCode::kInternal); }
  void get(std::string_view& s) {
    uint32_t n = 0;
    scalar(n);
    if (const char* p = take(n)) s = {p, n};
  }
  void get(std::string& s) {
    std::string_view v;
    get(v);
    s = v;
  }
  template <typename T>
  void get(std::vector<T>& v) {
    uint32_t n = count();
    // Room for all n at once saves moving the items as the vector grows, but never more
    // than the bytes left: a damaged count must not reserve gigabytes.
    v.reserve(std::min<size_t>(n, (in_.size() - pos_) / sizeof(T)));
    for (uint32_t i = 0; i < n && ok_; ++i) get(v.emplace_back());
  }
  void get(std::map<std::string, std::string>& m) {
    for (uint32_t i = 0, n = count(); i < n && ok_; ++i) {
      std::string k, v;
      get(k), get(v);
      m.emplace_hint(m.end(), std::move(k), std::move(v));
    }
  }
  template <typename T>
  void get(T& x) {
    fields(*this, x);
  }

  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// The bytes a KB cache file begins with (its magic, as the writer puts a string), for
// pruning only files of this cache.
std::string cache_magic_bytes() {
  CacheWriter w;
  w(std::string(kCacheMagic));
  return w.bytes();
}

}  // namespace

// The cached model and its files' errors, or false when the file is missing, damaged,
// short, or of another version or key. The file is mapped rather than read into memory,
// which meant zeroing and copying its megabyte first (0.8 ms, more than the decoding of
// what a diagnosis needs). Mapping is safe because a cache file is never rewritten in
// place: write_cache renames a new one over it. Layout: magic, version, key, the
// checksums of the two sections (cache_checksum), the diagnosis section (the model and
// its errors), the page section (length-prefixed). The lengths catch a cut file; the
// checksums catch a flipped bit (a changed text the lengths cannot see), each checked only
// for the section that is read.
bool read_cache(const std::string& path, uint64_t hash, bool with_pages, KnowledgeBase& kb,
                std::vector<Error>& errors) {
  size_t size = 0;
  const int fd = open_cache_file(path, &size);
  if (fd < 0) return false;
  void* map = size > 0 ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (map == MAP_FAILED) return false;
  const std::string_view bytes(static_cast<const char*>(map), size);
  CacheReader in(bytes);
  std::string magic, version;
  uint64_t key = 0, main_sum = 0, pages_sum = 0;
  std::string_view pages;
  in(magic, version, key, main_sum, pages_sum);
  bool ok = magic == kCacheMagic && version == kCacheVersion && key == hash;
  const size_t main_begin = in.pos();
  if (ok) in(kb, errors);
  const size_t main_end = in.pos();
  if (ok) in(pages);
  ok = ok && in.complete() && cache_checksum(bytes.substr(main_begin, main_end - main_begin)) == main_sum;
  if (ok && with_pages) {
    ok = cache_checksum(pages) == pages_sum;
    CacheReader page_in(pages);
    for (Entry& e : kb.entries) {
      if (ok) page_fields(page_in, e);
    }
    ok = ok && page_in.complete();
  }
  ::munmap(map, size);
  if (!ok) {
    kb = KnowledgeBase{};  // whatever was decoded before the damage showed is dropped
    errors.clear();
  }
  return ok;
}

void write_cache(const std::string& dir, const std::string& path, uint64_t hash, const KnowledgeBase& kb,
                 const std::vector<Error>& errors) {
  CacheWriter pages;
  for (const Entry& e : kb.entries) page_fields(pages, e);
  CacheWriter main;
  main(kb, errors);
  CacheWriter head;
  head(std::string(kCacheMagic), std::string(kCacheVersion), hash, cache_checksum(main.bytes()),
       cache_checksum(pages.bytes()));
  CacheWriter tail;
  tail(pages.bytes());
  // Atomic, to a fresh temporary name: a reader never sees half a file, and no planted
  // link is written through.
  write_cache_file(dir, path, {head.bytes(), main.bytes(), tail.bytes()});
  prune_cache(dir, "kb-", cache_magic_bytes(), 8);
}

void clear_page_fields(Entry& e) {
  ClearFields clear;
  page_fields(clear, e);
}

}  // namespace ff::kb
