#include "match/match.h"

#include "base/cache.h"
#include "base/strings.h"

#include <re2/filtered_re2.h>
#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>

#ifdef FF_HAVE_VECTORSCAN
#include <hs/hs.h>
#endif

namespace ff::match {

namespace {
constexpr const char* kEngineVersion = "ffmatch-3";
}

std::string to_vectorscan_syntax(std::string_view rx) {
  std::string out;
  out.reserve(rx.size());
  for (size_t i = 0; i < rx.size(); ++i) {
    if (rx[i] == '\\' && i + 1 < rx.size()) {
      out.push_back(rx[i]);
      out.push_back(rx[++i]);
      continue;
    }
    if (rx.compare(i, 4, "(?P<") == 0) {
      size_t close = rx.find('>', i);
      if (close != std::string_view::npos) {
        out.push_back('(');
        i = close;
        continue;
      }
    }
    out.push_back(rx[i]);
  }
  return out;
}

bool relax_negated_repeats(std::string& rx) {
  std::string out;
  out.reserve(rx.size());
  bool changed = false;
  for (size_t i = 0; i < rx.size(); ++i) {
    if (rx[i] == '\\' && i + 1 < rx.size()) {
      out.append(rx, i, 2);
      ++i;
      continue;
    }
    if (rx[i] != '[') {
      out.push_back(rx[i]);
      continue;
    }
    // A class: find its end (a ']' first in the class is a literal; escapes are skipped).
    size_t j = i + 1;
    bool negated = j < rx.size() && rx[j] == '^';
    if (negated) ++j;
    if (j < rx.size() && rx[j] == ']') ++j;
    while (j < rx.size() && rx[j] != ']') j += rx[j] == '\\' ? 2 : 1;
    if (j >= rx.size()) {  // unterminated: leave the rest as it is
      out.append(rx, i, std::string::npos);
      break;
    }
    bool repeated = j + 1 < rx.size() && (rx[j + 1] == '+' || rx[j + 1] == '*' || rx[j + 1] == '{');
    if (negated && repeated) {
      out.push_back('.');
      changed = true;
    } else {
      out.append(rx, i, j - i + 1);
    }
    i = j;
  }
  if (changed) rx = std::move(out);
  return changed;
}

#ifdef FF_HAVE_VECTORSCAN
namespace {
hs_database_t* load_cached_joined_db(const CompileOptions& opt);
void store_cached_joined_db(const CompileOptions& opt, hs_database_t* db);
hs_database_t* compile_joined_db(const std::vector<PatternSpec>& specs);
}  // namespace
#endif

struct Database::Impl {
  // The literals the patterns require, for may_match_between_numbers: loaded from the
  // cache or computed on first use (load_atoms).
  CompileOptions atoms_cache;  // the cache folder and key of this pattern list
  mutable std::once_flag atoms_once;
  mutable std::vector<std::vector<std::string>> atoms;  // per pattern, lower-case (FilteredRE2's)
  mutable bool atoms_ok = false;                        // every pattern requires some
  // RE2 objects for captures, built on first use (most patterns never hit).
  mutable std::vector<std::unique_ptr<RE2>> re2s;
  mutable std::vector<std::once_flag> re2_once;
  std::vector<uint32_t> index_to_id;  // dense index -> caller id
  std::unique_ptr<RE2::Set> set;      // fallback: patterns not in the Vectorscan db
  std::vector<uint32_t> set_index_to_id;
  // Dense index -> Vectorscan has a relaxed form of the pattern (relax_negated_repeats),
  // so its hits are confirmed with RE2.
  std::vector<bool> relaxed;
#ifdef FF_HAVE_VECTORSCAN
  hs_database_t* hs = nullptr;
  // The same patterns for many lines at once (HS_FLAG_MULTILINE, every match reported):
  // see Scanner::candidate_lines. Loaded (or compiled) on first use, so a short input
  // never pays for it; null when some pattern is not in `hs`.
  bool joined_possible = false;
  CompileOptions joined_cache;
  mutable std::once_flag joined_once;
  mutable hs_database_t* joined = nullptr;
  hs_database_t* joined_db(const std::vector<PatternSpec>& specs) const {
    if (!joined_possible) return nullptr;
    std::call_once(joined_once, [&] {
      joined = load_cached_joined_db(joined_cache);
      if (!joined) {
        joined = compile_joined_db(specs);
        if (joined) store_cached_joined_db(joined_cache, joined);
      }
    });
    return joined;
  }
  ~Impl() {
    if (hs) hs_free_database(hs);
    if (joined) hs_free_database(joined);
  }
#endif
  size_t index_of(uint32_t id) const {
    auto it = std::lower_bound(index_to_id.begin(), index_to_id.end(), id);
    return (it != index_to_id.end() && *it == id) ? static_cast<size_t>(it - index_to_id.begin()) : SIZE_MAX;
  }
};

Database::Database() : impl_(std::make_unique<Impl>()) {}
Database::~Database() = default;

namespace {

RE2::Options re2_options() {
  RE2::Options o;
  o.set_log_errors(false);
  o.set_encoding(RE2::Options::EncodingLatin1);  // logs are bytes; invalid UTF-8 must not stop a match
  return o;
}

// A cache file, mapped read-only for as long as it is read (a start-up path: reading it
// into a zero-filled buffer cost more than deserialising it). Cache files are replaced by
// rename, never rewritten in place, so the mapping cannot shrink under us.
class MappedFile {
 public:
  // Not through a link, not a FIFO (which would block the run): base/cache.h.
  explicit MappedFile(const std::string& path) {
    size_t size = 0;
    const int fd = open_cache_file(path, &size);
    if (fd < 0) return;
    if (size > 0) {
      void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const char*>(p);
        size_ = size;
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view bytes() const { return {data_ != nullptr ? data_ : "", size_}; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

#ifdef FF_HAVE_VECTORSCAN
std::string cache_path(const CompileOptions& opt) {
  // hs_version() reads like "5.4.9 2023-03-23"; keep the version word only.
  std::string hsv = hs_version();
  hsv = hsv.substr(0, hsv.find(' '));
  char name[128];
  std::snprintf(name, sizeof(name), "patterns-%016llx-%s-hs%s.hsdb", static_cast<unsigned long long>(opt.cache_key),
                kEngineVersion, hsv.c_str());
  return (std::filesystem::path(opt.cache_dir) / name).string();
}


// Cache file layout: "FFHS", u32 pattern count, one byte per pattern (1 = served by
// Vectorscan), then the serialised database.
hs_database_t* load_cached(const CompileOptions& opt, std::vector<bool>& in_hs) {
  if (opt.cache_dir.empty() || opt.cache_key == 0) return nullptr;
  const MappedFile file(cache_path(opt));
  const std::string_view bytes = file.bytes();
  if (bytes.size() < 8 || bytes.compare(0, 4, "FFHS") != 0) return nullptr;
  uint32_t n = 0;
  std::memcpy(&n, bytes.data() + 4, 4);
  if (n != in_hs.size() || bytes.size() < 8 + n) return nullptr;
  for (uint32_t i = 0; i < n; ++i) in_hs[i] = bytes[8 + i] != 0;
  hs_database_t* db = nullptr;
  if (hs_deserialize_database(bytes.data() + 8 + n, bytes.size() - 8 - n, &db) != HS_SUCCESS) {
    in_hs.assign(n, false);
    return nullptr;
  }
  return db;
}

// Writes `header` and the serialised database to path, atomically (a fresh temporary
// file, then a rename: a reader never sees half a file, and no planted link is written
// through; base/cache.h). A cache that cannot be written is left out (and said once).
void write_cached_db(const std::string& dir, const std::string& path, const std::string& header, hs_database_t* db) {
  char* bytes = nullptr;
  size_t len = 0;
  if (hs_serialize_database(db, &bytes, &len) != HS_SUCCESS) return;
  write_cache_file(dir, path, {header, std::string_view(bytes, len)});
  std::free(bytes);
}

void store_cached(const CompileOptions& opt, hs_database_t* db, const std::vector<bool>& in_hs) {
  if (opt.cache_dir.empty() || opt.cache_key == 0) return;
  std::string header = "FFHS";
  uint32_t n = static_cast<uint32_t>(in_hs.size());
  header.append(reinterpret_cast<const char*>(&n), 4);
  for (bool b : in_hs) header.push_back(b ? 1 : 0);
  write_cached_db(opt.cache_dir, cache_path(opt), header, db);
  prune_cache(opt.cache_dir, "patterns-", "FFH", 8);  // FFHS and FFHJ files: ours
}

// The joined-lines database: its own cache file next to the main one, "FFHJ" + the
// serialised database.
hs_database_t* load_cached_joined_db(const CompileOptions& opt) {
  if (opt.cache_dir.empty() || opt.cache_key == 0) return nullptr;
  const MappedFile file(cache_path(opt) + ".joined");
  const std::string_view bytes = file.bytes();
  if (bytes.size() < 4 || bytes.compare(0, 4, "FFHJ") != 0) return nullptr;
  hs_database_t* db = nullptr;
  if (hs_deserialize_database(bytes.data() + 4, bytes.size() - 4, &db) != HS_SUCCESS) return nullptr;
  return db;
}

void store_cached_joined_db(const CompileOptions& opt, hs_database_t* db) {
  if (opt.cache_dir.empty() || opt.cache_key == 0) return;
  write_cached_db(opt.cache_dir, cache_path(opt) + ".joined", "FFHJ", db);
}

hs_database_t* compile_joined_db(const std::vector<PatternSpec>& specs) {
  std::vector<std::string> exprs;
  std::vector<const char*> ptrs;
  std::vector<unsigned> flags, ids;
  for (size_t i = 0; i < specs.size(); ++i) {
    exprs.push_back(to_vectorscan_syntax(specs[i].regex));
    relax_negated_repeats(exprs.back());
    flags.push_back(HS_FLAG_MULTILINE);
    ids.push_back(static_cast<unsigned>(i));
  }
  for (const auto& e : exprs) ptrs.push_back(e.c_str());
  hs_database_t* db = nullptr;
  hs_compile_error_t* err = nullptr;
  if (hs_compile_multi(ptrs.data(), flags.data(), ids.data(), static_cast<unsigned>(ptrs.size()), HS_MODE_BLOCK,
                       nullptr, &db, &err) != HS_SUCCESS) {
    hs_free_compile_error(err);
    return nullptr;
  }
  return db;
}

// Whether a joined text of lines can stand in for each line alone: the pattern must not
// anchor to the very start or end of the text (\A, \z, \Z); ^ and $ match at every line
// under HS_FLAG_MULTILINE.
bool joinable(std::string_view rx) {
  for (size_t i = 0; i + 1 < rx.size(); ++i) {
    if (rx[i] != '\\') continue;
    if (rx[i + 1] == 'A' || rx[i + 1] == 'z' || rx[i + 1] == 'Z') return false;
    ++i;
  }
  return true;
}

// Compiles the patterns; patterns Vectorscan rejects are returned in `rejected`.
hs_database_t* compile_hs(const std::vector<PatternSpec>& specs, std::vector<bool>& in_hs,
                          std::vector<Rejected>& rejected) {
  std::vector<std::string> exprs;
  std::vector<const char*> ptrs;
  std::vector<unsigned> flags, ids;
  in_hs.assign(specs.size(), false);
  for (size_t i = 0; i < specs.size(); ++i) {
    std::string e = to_vectorscan_syntax(specs[i].regex);
    relax_negated_repeats(e);
    hs_database_t* probe = nullptr;
    hs_compile_error_t* err = nullptr;
    if (hs_compile(e.c_str(), HS_FLAG_SINGLEMATCH, HS_MODE_BLOCK, nullptr, &probe, &err) != HS_SUCCESS) {
      rejected.push_back({specs[i].id, Rejected::Backend::kVectorscan, err ? err->message : "compile failed"});
      hs_free_compile_error(err);
      continue;
    }
    hs_free_database(probe);
    in_hs[i] = true;
    exprs.push_back(std::move(e));
    flags.push_back(HS_FLAG_SINGLEMATCH);
    ids.push_back(static_cast<unsigned>(i));
  }
  if (exprs.empty()) return nullptr;
  for (const auto& e : exprs) ptrs.push_back(e.c_str());
  hs_database_t* db = nullptr;
  hs_compile_error_t* err = nullptr;
  if (hs_compile_multi(ptrs.data(), flags.data(), ids.data(), static_cast<unsigned>(ptrs.size()), HS_MODE_BLOCK,
                       nullptr, &db, &err) != HS_SUCCESS) {
    rejected.push_back(
        {0, Rejected::Backend::kVectorscan, std::string("multi-pattern compile failed: ") + (err ? err->message : "")});
    hs_free_compile_error(err);
    in_hs.assign(specs.size(), false);
    return nullptr;
  }
  return db;
}
#endif

}  // namespace

Result<std::shared_ptr<const Database>> Database::compile(const std::vector<PatternSpec>& patterns,
                                                          const CompileOptions& options) {
  std::shared_ptr<Database> db(new Database());
  db->specs_ = patterns;
  std::sort(db->specs_.begin(), db->specs_.end(),
            [](const PatternSpec& a, const PatternSpec& b) { return a.id < b.id; });
  for (size_t i = 1; i < db->specs_.size(); ++i) {
    if (db->specs_[i].id == db->specs_[i - 1].id)
      return make_error(ErrorCode::kInternal, "duplicate pattern id " + std::to_string(db->specs_[i].id));
  }
  Impl& impl = *db->impl_;
  impl.re2s.resize(db->specs_.size());
  impl.relaxed.resize(db->specs_.size());
  for (size_t i = 0; i < db->specs_.size(); ++i) {
    std::string rx = to_vectorscan_syntax(db->specs_[i].regex);
    impl.relaxed[i] = relax_negated_repeats(rx);
  }
  impl.re2_once = std::vector<std::once_flag>(db->specs_.size());
  {
    uint64_t key = options.cache_key;
    for (const auto& s : db->specs_) key = (key ^ s.id) * 1099511628211ull;
    impl.atoms_cache = options;
    impl.atoms_cache.cache_key = options.cache_key == 0 ? 0 : key;
  }
  for (const auto& s : db->specs_) impl.index_to_id.push_back(s.id);

  std::vector<bool> in_hs(db->specs_.size(), false);
#ifdef FF_HAVE_VECTORSCAN
  if (options.use_vectorscan) {
    // The cache is keyed by the KB content hash; the pattern list is derived from it,
    // so a hit means the same patterns in the same order.
    uint64_t key = options.cache_key;
    for (const auto& s : db->specs_) key = (key ^ s.id) * 1099511628211ull;
    CompileOptions keyed = options;
    keyed.cache_key = options.cache_key == 0 ? 0 : key;
    impl.hs = load_cached(keyed, in_hs);
    if (impl.hs) {
      db->backend_ = "vectorscan (cached)";
      for (size_t i = 0; i < db->specs_.size(); ++i) {
        if (!in_hs[i])
          db->rejected_.push_back({db->specs_[i].id, Rejected::Backend::kVectorscan, "rejected (cached)", true});
      }
    } else {
      impl.hs = compile_hs(db->specs_, in_hs, db->rejected_);
      if (impl.hs) {
        db->backend_ = "vectorscan";
        store_cached(keyed, impl.hs, in_hs);
      }
    }
    bool all_joinable = impl.hs != nullptr;
    for (size_t i = 0; i < db->specs_.size() && all_joinable; ++i)
      all_joinable = in_hs[i] && joinable(db->specs_[i].regex);
    impl.joined_possible = all_joinable;
    impl.joined_cache = keyed;
  }
#endif
  // Everything not served by Vectorscan goes to one RE2::Set.
  std::vector<size_t> rest;
  for (size_t i = 0; i < db->specs_.size(); ++i) {
    if (!in_hs[i]) rest.push_back(i);
  }
  if (!rest.empty()) {
    impl.set = std::make_unique<RE2::Set>(re2_options(), RE2::UNANCHORED);
    for (size_t i : rest) {
      std::string err;
      if (impl.set->Add(db->specs_[i].regex, &err) < 0) {
        db->rejected_.push_back({db->specs_[i].id, Rejected::Backend::kRe2, err});
        continue;
      }
      impl.set_index_to_id.push_back(db->specs_[i].id);
    }
    if (!impl.set->Compile()) return make_error(ErrorCode::kInternal, "RE2::Set failed to compile (out of memory?)");
    if (db->backend_.empty()) db->backend_ = "re2";
  }
  if (db->backend_.empty()) db->backend_ = "none";
  return std::shared_ptr<const Database>(std::move(db));
}

namespace {

// The bytes a number between two pieces can hold (read_number in metrics: sign, digits,
// point, exponent, and the words nan, inf, infinity), lower-cased as FilteredRE2's atoms.
bool number_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || c == '.' || c == '+' || c == '-' || c == 'e' || c == 'n' || c == 'a' ||
         c == 'i' || c == 'f' || c == 't' || c == 'y';
}

// Whether `atom` can occur in some line pieces[0] N pieces[1] N ... pieces[k] where each N
// is any run of number bytes (a superset of the numbers: sound). The template is a list of
// tokens, a literal byte or a number run (kRun, which may also be empty); the atom is
// matched from any token on, as a substring.
bool atom_fits(std::string_view atom, const std::vector<int>& tokens) {
  constexpr int kRun = -1;
  const size_t n = tokens.size();
  std::vector<char> at(n + 1, 1), next(n + 1);  // the states: "the next token to match is t"
  // A number run may be empty: a state before one also stands after it.
  auto close = [&](std::vector<char>& st) {
    for (size_t t = 0; t < n; ++t)
      if (st[t] && tokens[t] == kRun) st[t + 1] = 1;
  };
  close(at);
  for (unsigned char c : atom) {
    std::fill(next.begin(), next.end(), 0);
    bool any = false;
    for (size_t t = 0; t < n; ++t) {
      if (!at[t]) continue;
      if (tokens[t] == kRun) {
        if (number_byte(c)) next[t] = 1, any = true;  // the run goes on
      } else if (tokens[t] == c) {
        next[t + 1] = 1, any = true;
      }
    }
    if (!any) return false;
    close(next);
    at.swap(next);
  }
  return true;
}

// The atoms cache file: "FFHA", u32 pattern count, u64 checksum of the rest, then per
// pattern its atoms, each ended by '\x1f', the pattern's list ended by a NUL byte. Keyed
// like the pattern database (the KB's hash and the pattern list).
std::string atoms_path(const CompileOptions& opt) {
  char name[96];
  std::snprintf(name, sizeof(name), "patterns-%016llx-%s.atoms", static_cast<unsigned long long>(opt.cache_key),
                kEngineVersion);
  return (std::filesystem::path(opt.cache_dir) / name).string();
}

using AtomLists = std::vector<std::vector<std::string>>;

bool load_atoms(const CompileOptions& opt, size_t patterns, AtomLists& atoms) {
  if (opt.cache_dir.empty() || opt.cache_key == 0) return false;
  const MappedFile file(atoms_path(opt));
  const std::string_view bytes = file.bytes();
  if (bytes.size() < 16 || bytes.compare(0, 4, "FFHA") != 0) return false;
  uint32_t n = 0;
  uint64_t sum = 0;
  std::memcpy(&n, bytes.data() + 4, 4);
  std::memcpy(&sum, bytes.data() + 8, 8);
  const std::string_view rest = bytes.substr(16);
  if (n != patterns || cache_checksum(rest) != sum) return false;
  atoms.assign(n, {});
  size_t at = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const size_t nul = rest.find('\0', at);
    if (nul == std::string_view::npos) return false;
    for (std::string_view a : split(rest.substr(at, nul - at), '\x1f'))
      if (!a.empty()) atoms[i].emplace_back(a);
    if (atoms[i].empty()) return false;  // every pattern has atoms, or nothing is cached
    at = nul + 1;
  }
  return at == rest.size();
}

void store_atoms(const CompileOptions& opt, const AtomLists& atoms) {
  if (opt.cache_dir.empty() || opt.cache_key == 0) return;
  std::string rest;
  for (const auto& list : atoms) {
    for (const auto& a : list) rest.append(a).push_back('\x1f');
    rest.push_back('\0');
  }
  std::string head = "FFHA";
  const uint32_t n = static_cast<uint32_t>(atoms.size());
  const uint64_t sum = cache_checksum(rest);
  head.append(reinterpret_cast<const char*>(&n), 4);
  head.append(reinterpret_cast<const char*>(&sum), 8);
  write_cache_file(opt.cache_dir, atoms_path(opt), {head, rest});
}

// Each pattern's atoms (FilteredRE2, atoms of 3 bytes and more, one pattern at a time), or
// false when some pattern requires none (FilteredRE2 cannot filter it: any line may match
// it) or is not RE2's. Once per KB: a few hundred million instructions, hence the cache.
bool compute_atoms(const std::vector<PatternSpec>& specs, AtomLists& atoms) {
  atoms.assign(specs.size(), {});
  for (size_t i = 0; i < specs.size(); ++i) {
    re2::FilteredRE2 f(3);
    int id = 0;
    if (f.Add(specs[i].regex, re2_options(), &id) != RE2::NoError) return false;
    f.Compile(&atoms[i]);
    std::vector<int> none, unfiltered;
    f.AllPotentials(none, &unfiltered);
    if (!unfiltered.empty() || atoms[i].empty()) return false;
  }
  return true;
}

}  // namespace

bool Database::may_match_between_numbers(const std::vector<std::string_view>& pieces) const {
  const Impl& impl = *impl_;
  std::call_once(impl.atoms_once, [&] {
    if (load_atoms(impl.atoms_cache, specs_.size(), impl.atoms)) {
      impl.atoms_ok = true;
    } else if (compute_atoms(specs_, impl.atoms)) {
      impl.atoms_ok = true;
      store_atoms(impl.atoms_cache, impl.atoms);
    }
  });
  if (!impl.atoms_ok) return true;
  std::vector<int> tokens;
  for (size_t p = 0; p < pieces.size(); ++p) {
    if (p > 0) tokens.push_back(-1);
    for (unsigned char c : pieces[p]) tokens.push_back(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  // A pattern none of whose atoms can be spelt in such a line cannot match it (its atoms'
  // formula is false with none of them there). The few others are asked exactly: one
  // FilteredRE2 of them alone, its atoms looked for in the line's shape.
  std::map<std::string_view, bool> fits;
  auto fit = [&](std::string_view a) {
    auto [it, fresh] = fits.try_emplace(a, false);
    if (fresh) it->second = atom_fits(a, tokens);
    return it->second;
  };
  re2::FilteredRE2 f(3);
  int added = 0;
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (std::none_of(impl.atoms[i].begin(), impl.atoms[i].end(), fit)) continue;
    int id = 0;
    if (f.Add(specs_[i].regex, re2_options(), &id) != RE2::NoError) return true;
    ++added;
  }
  if (added == 0) return false;
  std::vector<std::string> atoms;
  f.Compile(&atoms);
  std::vector<int> present, potential;
  for (size_t a = 0; a < atoms.size(); ++a) {
    if (atom_fits(atoms[a], tokens)) present.push_back(static_cast<int>(a));
  }
  f.AllPotentials(present, &potential);
  return !potential.empty();
}

bool Database::captures(uint32_t id, std::string_view line, std::map<std::string, std::string>* out,
                        std::pair<size_t, size_t>* span) const {
  size_t idx = impl_->index_of(id);
  if (idx == SIZE_MAX) return false;
  std::call_once(impl_->re2_once[idx],
                 [&] { impl_->re2s[idx] = std::make_unique<RE2>(specs_[idx].regex, re2_options()); });
  const RE2& re = *impl_->re2s[idx];
  if (!re.ok()) return false;
  int n = re.NumberOfCapturingGroups();
  std::vector<re2::StringPiece> groups(static_cast<size_t>(n) + 1);
  if (!re.Match(re2::StringPiece(line.data(), line.size()), 0, line.size(), RE2::UNANCHORED, groups.data(), n + 1)) {
    return false;
  }
  if (span) {
    span->first = static_cast<size_t>(groups[0].data() - line.data());
    span->second = span->first + groups[0].size();
  }
  if (out) {
    for (const auto& [name, index] : re.NamedCapturingGroups()) {
      const auto& g = groups[static_cast<size_t>(index)];
      if (g.data() != nullptr) (*out)[name] = std::string(g.data(), g.size());
    }
  }
  return true;
}

struct Scanner::State {
  int joined = 0;  // 0: not tried yet; 1: the joined database and a scratch for it; -1: none
#ifdef FF_HAVE_VECTORSCAN
  hs_scratch_t* scratch = nullptr;
  ~State() {
    if (scratch) hs_free_scratch(scratch);
  }
#endif
  std::vector<int> set_hits;
};

Scanner::Scanner(const Database& db) : db_(db), state_(std::make_unique<State>()) {
#ifdef FF_HAVE_VECTORSCAN
  if (db_.impl_->hs && hs_alloc_scratch(db_.impl_->hs, &state_->scratch) != HS_SUCCESS) state_->scratch = nullptr;
#endif
}

Scanner::~Scanner() = default;

#ifdef FF_HAVE_VECTORSCAN
namespace {
int on_hs_match(unsigned int index, unsigned long long, unsigned long long, unsigned int, void* ctx) {
  static_cast<std::vector<uint32_t>*>(ctx)->push_back(index);
  return 0;
}
}  // namespace
#endif

void Scanner::scan(std::string_view line, std::vector<uint32_t>& hits) {
  size_t first = hits.size();
#ifdef FF_HAVE_VECTORSCAN
  if (db_.impl_->hs && state_->scratch) {
    hs_scan(db_.impl_->hs, line.data(), static_cast<unsigned>(line.size()), 0, state_->scratch, on_hs_match, &hits);
    size_t kept = first;
    for (size_t i = first; i < hits.size(); ++i) {
      const uint32_t index = hits[i];
      // The Vectorscan form of a relaxed pattern matches a superset: RE2 has the last word.
      if (db_.impl_->relaxed[index] && !db_.captures(db_.impl_->index_to_id[index], line, nullptr, nullptr)) continue;
      hits[kept++] = db_.impl_->index_to_id[index];
    }
    hits.resize(kept);
  }
#endif
  if (db_.impl_->set) {
    state_->set_hits.clear();
    if (db_.impl_->set->Match(re2::StringPiece(line.data(), line.size()), &state_->set_hits)) {
      for (int k : state_->set_hits) hits.push_back(db_.impl_->set_index_to_id[static_cast<size_t>(k)]);
    }
  }
  std::sort(hits.begin() + static_cast<long>(first), hits.end());
  hits.erase(std::unique(hits.begin() + static_cast<long>(first), hits.end()), hits.end());
}

}  // namespace ff::match

namespace ff::match {

#ifdef FF_HAVE_VECTORSCAN
namespace {
struct JoinedCtx {
  const std::vector<uint32_t>* ends;
  std::vector<uint32_t>* lines;
};
int on_joined_match(unsigned int, unsigned long long, unsigned long long to, unsigned int, void* p) {
  auto* c = static_cast<JoinedCtx*>(p);
  // The line holding the match's last byte (a match that ends on a line's '\n' came from
  // across lines: its line is taken too, to stay on the safe side).
  const uint64_t last = to == 0 ? 0 : to - 1;
  const auto& ends = *c->ends;
  auto it = std::lower_bound(ends.begin(), ends.end(), last);
  if (it == ends.end()) return 0;
  const uint32_t line = static_cast<uint32_t>(it - ends.begin());
  if (c->lines->empty() || c->lines->back() != line) c->lines->push_back(line);
  return 0;
}
}  // namespace
#endif

bool Scanner::joins_lines() const {
#ifdef FF_HAVE_VECTORSCAN
  return state_->scratch != nullptr && db_.impl_->joined_possible && state_->joined >= 0;
#else
  return false;
#endif
}

bool Scanner::candidate_lines(std::string_view text, const std::vector<uint32_t>& line_ends,
                              std::vector<uint32_t>& lines) {
#ifdef FF_HAVE_VECTORSCAN
  if (state_->joined == 0) {
    // One scratch serves both databases once it has been grown for the second.
    hs_database_t* j = state_->scratch ? db_.impl_->joined_db(db_.specs_) : nullptr;
    state_->joined = (j && hs_alloc_scratch(j, &state_->scratch) == HS_SUCCESS) ? 1 : -1;
  }
  if (state_->joined < 0 || text.size() > UINT32_MAX) return false;
  const size_t first = lines.size();
  JoinedCtx ctx{&line_ends, &lines};
  hs_scan(db_.impl_->joined, text.data(), static_cast<unsigned>(text.size()), 0, state_->scratch, on_joined_match,
          &ctx);
  std::sort(lines.begin() + static_cast<long>(first), lines.end());
  lines.erase(std::unique(lines.begin() + static_cast<long>(first), lines.end()), lines.end());
  return true;
#else
  (void)text;
  (void)line_ends;
  (void)lines;
  return false;
#endif
}

}  // namespace ff::match
