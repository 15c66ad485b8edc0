// record.framing.cc — LineFramer: bytes in chunks of any size → lines, with the end of
// each line and whether it needs cleaning found in one SIMD pass (SSE2, AVX2 where the
// processor has it); long lines cut, not buffered; CR-only logs detected.
#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "record/record.h"

namespace ff::record {

// ---------------------------------------------------------------------------
// Line framing

void LineFramer::emit(std::string_view bytes, bool cut, const std::function<void(const RawLine&)>& on_line,
                      bool plain) {
  RawLine line;
  line.number = ++number_;
  line.offset = line_start_;
  line.bytes = bytes;
  line.cut = cut;
  line.plain = plain;
  if (cut) ++cut_lines_;
  on_line(line);
  pending_.clear();
  pending_cut_ = false;
}

// Appends at most what still fits under max_line_ to the pending line.
void LineFramer::keep(std::string_view piece) {
  size_t room = max_line_ > pending_.size() ? max_line_ - pending_.size() : 0;
  if (piece.size() > room) pending_cut_ = true;
  pending_.append(piece.substr(0, std::min(room, piece.size())));
}

namespace {

// find_line_end (detail::FindLineEnd): the first '\n' in [p, e), or e; sets `dirty` when a
// byte that clean_line changes ('\r', ESC, NUL) comes before it. One pass finds the line's
// end and whether it needs cleaning. This is its byte-at-a-time form (the SIMD ones finish
// with it).
inline const char* find_line_end_bytes(const char* p, const char* e, bool& dirty) {
  for (; p < e; ++p) {
    const char c = *p;
    if (c == '\n') return p;
    if (c == '\x1b' || c == '\r' || c == '\0') dirty = true;
  }
  return e;
}

#if defined(__x86_64__) && defined(__GNUC__)
// 32 bytes at a time, on processors with AVX2 (chosen at run time).
__attribute__((target("avx2"))) const char* find_line_end_avx2(const char* p, const char* e, bool& dirty) {
  const __m256i lf = _mm256_set1_epi8('\n'), esc = _mm256_set1_epi8('\x1b'), cr = _mm256_set1_epi8('\r'),
                nul = _mm256_setzero_si256();
  for (; e - p >= 32; p += 32) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const auto at_lf = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(w, lf)));
    const auto odd = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_or_si256(
        _mm256_or_si256(_mm256_cmpeq_epi8(w, esc), _mm256_cmpeq_epi8(w, cr)), _mm256_cmpeq_epi8(w, nul))));
    if (at_lf != 0) {
      const int k = __builtin_ctz(at_lf);
      if ((odd & ((1u << k) - 1)) != 0) dirty = true;
      return p + k;
    }
    if (odd != 0) dirty = true;
  }
  return find_line_end_bytes(p, e, dirty);
}
#endif

// Sixteen bytes at a time (SSE2 is part of x86-64).
const char* find_line_end_sse2(const char* p, const char* e, bool& dirty) {
#if defined(__SSE2__)
  const __m128i lf = _mm_set1_epi8('\n'), esc = _mm_set1_epi8('\x1b'), cr = _mm_set1_epi8('\r'),
                nul = _mm_setzero_si128();
  for (; e - p >= 16; p += 16) {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const auto at_lf = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(w, lf)));
    const auto odd = static_cast<uint32_t>(_mm_movemask_epi8(
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, esc), _mm_cmpeq_epi8(w, cr)), _mm_cmpeq_epi8(w, nul))));
    if (at_lf != 0) {
      const int k = __builtin_ctz(at_lf);
      if ((odd & ((1u << k) - 1)) != 0) dirty = true;
      return p + k;
    }
    if (odd != 0) dirty = true;
  }
#endif
  return find_line_end_bytes(p, e, dirty);
}

const detail::FindLineEnd find_line_end = [] {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx2")) return &find_line_end_avx2;
#endif
  return &find_line_end_sse2;
}();

}  // namespace

std::vector<detail::FindLineEnd> detail::line_end_finders() {
  std::vector<FindLineEnd> all{&find_line_end_sse2};
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx2")) all.push_back(&find_line_end_avx2);
#endif
  return all;
}

namespace {

// A carriage return followed by more text on the same line ("a\rb", not "a\r" or "a\r\n").
bool has_lone_cr(std::string_view s) {
  for (size_t i = s.find('\r'); i != std::string_view::npos && i + 1 < s.size(); i = s.find('\r', i + 1)) {
    if (s[i + 1] != '\r' && s[i + 1] != '\n') return true;
  }
  return false;
}

}  // namespace

// The first line had no '\n' and is CR-separated: re-frame what is pending in CR mode.
void LineFramer::switch_to_cr(const std::function<void(const RawLine&)>& on_line) {
  eol_ = Eol::kCr;
  std::string held = std::move(pending_);
  pending_.clear();
  pending_cut_ = false;
  offset_ = line_start_;
  feed_cr(held, on_line);
}

void LineFramer::feed_cr(std::string_view chunk, const std::function<void(const RawLine&)>& on_line) {
  size_t pos = 0;
  if (skip_lf_ && !chunk.empty()) {
    skip_lf_ = false;
    if (chunk[0] == '\n') {  // the '\n' of a "\r\n" split across chunks
      pos = 1;
      line_start_ = ++offset_;
    }
  }
  while (pos < chunk.size()) {
    size_t end = chunk.find_first_of("\r\n", pos);
    if (end == std::string_view::npos) {
      keep(chunk.substr(pos));
      offset_ += chunk.size() - pos;
      return;
    }
    std::string_view piece = chunk.substr(pos, end - pos);
    if (pending_.empty() && !pending_cut_) {
      emit(piece.substr(0, std::min(piece.size(), max_line_)), piece.size() > max_line_, on_line);
    } else {
      keep(piece);
      emit(pending_, pending_cut_, on_line);
    }
    size_t term = 1;
    if (chunk[end] == '\r') {
      if (end + 1 < chunk.size()) {
        if (chunk[end + 1] == '\n') term = 2;
      } else {
        skip_lf_ = true;
      }
    }
    offset_ += piece.size() + term;
    line_start_ = offset_;
    pos = end + term;
  }
}

void LineFramer::feed(std::string_view chunk, const std::function<void(const RawLine&)>& on_line) {
  if (eol_ == Eol::kUndecided) {
    if (!chunk.empty() && std::memchr(chunk.data(), '\n', chunk.size()) != nullptr) {
      eol_ = Eol::kLf;
    } else if (pending_.size() + chunk.size() > max_line_) {
      // The first line would be cut: decide now, while every byte of it is still here.
      bool lone_cr = has_lone_cr(pending_) || has_lone_cr(chunk) ||
                     (!pending_.empty() && pending_.back() == '\r' && !chunk.empty() && chunk[0] != '\r');
      if (!lone_cr) {
        eol_ = Eol::kLf;
      } else {
        switch_to_cr(on_line);
        feed_cr(chunk, on_line);
        return;
      }
    }
  }
  if (eol_ == Eol::kCr) {
    feed_cr(chunk, on_line);
    return;
  }
  size_t pos = 0;
  const char* const chunk_end = chunk.data() + chunk.size();
  while (pos < chunk.size()) {
    bool dirty = false;
    const char* nl = find_line_end(chunk.data() + pos, chunk_end, dirty);
    size_t end = static_cast<size_t>(nl - chunk.data());
    std::string_view piece = chunk.substr(pos, end - pos);
    if (nl == chunk_end) {
      keep(piece);  // an incomplete line waits for the next chunk
      offset_ += piece.size();
      return;
    }
    if (pending_.empty() && !pending_cut_) {
      // The common case: the whole line is inside this chunk; no copy.
      emit(piece.substr(0, std::min(piece.size(), max_line_)), piece.size() > max_line_, on_line, !dirty);
    } else {
      keep(piece);
      emit(pending_, pending_cut_, on_line);
    }
    offset_ += piece.size() + 1;
    line_start_ = offset_;
    pos = end + 1;
  }
}

void LineFramer::finish(const std::function<void(const RawLine&)>& on_line) {
  if (eol_ == Eol::kUndecided && has_lone_cr(pending_)) switch_to_cr(on_line);
  if (pending_.empty() && !pending_cut_) return;
  emit(pending_, pending_cut_, on_line);
  line_start_ = offset_;
}
}  // namespace ff::record
