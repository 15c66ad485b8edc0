// record.clean.cc — clean_line: ANSI escapes, progress-bar CR residue and NUL bytes out
// of a line; needs_cleaning tells the lines that have none (most) in one SIMD pass.
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "record/record.h"

namespace ff::record {

// ---------------------------------------------------------------------------
// Cleaning

bool needs_cleaning(std::string_view raw) {
  const char* p = raw.data();
  size_t n = raw.size(), i = 0;
#if defined(__SSE2__)
  // Sixteen bytes at a time (SSE2 is part of x86-64).
  const __m128i esc = _mm_set1_epi8('\x1b'), cr = _mm_set1_epi8('\r'), nul = _mm_setzero_si128();
  for (; i + 16 <= n; i += 16) {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const __m128i hit =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, esc), _mm_cmpeq_epi8(w, cr)), _mm_cmpeq_epi8(w, nul));
    if (_mm_movemask_epi8(hit) != 0) return true;
  }
#endif
  // Eight bytes at a time: a byte below 0x20 is rare in a log (tabs aside), so the exact
  // test runs only on words that have one.
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    // High bit set in each byte that is < 0x20 (and possibly in bytes >= 0x80: rechecked).
    uint64_t lo = (w - 0x2020202020202020ull) & ~w & 0x8080808080808080ull;
    if (lo == 0) continue;
    for (size_t k = i; k < i + 8; ++k) {
      char c = p[k];
      if (c == '\x1b' || c == '\r' || c == '\0') return true;
    }
  }
  for (; i < n; ++i) {
    char c = p[i];
    if (c == '\x1b' || c == '\r' || c == '\0') return true;
  }
  return false;
}

std::string_view clean_line_view(std::string_view raw, std::string& buf) {
  if (!needs_cleaning(raw)) return raw;
  clean_line(raw, buf);
  return buf;
}

void clean_line(std::string_view raw, std::string& out) {
  out.clear();
  // Drop a trailing CR (CRLF files), then keep only what follows the last CR that still
  // has text after it: "  3%|▏ | 1/30\r 100%|█| 30/30\rloss 0.1" shows as "loss 0.1".
  while (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
  size_t cr = raw.rfind('\r');
  if (cr != std::string_view::npos) raw = raw.substr(cr + 1);
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '\x1b') {
      if (i + 1 < raw.size() && raw[i + 1] == '[') {
        // CSI: parameters and intermediates, then one final byte in 0x40..0x7e.
        size_t j = i + 2;
        while (j < raw.size() && !(raw[j] >= 0x40 && raw[j] <= 0x7e)) ++j;
        i = j;
        continue;
      }
      if (i + 1 < raw.size() && raw[i + 1] == ']') {
        // OSC: until BEL or ESC '\'.
        size_t j = i + 2;
        while (j < raw.size() && raw[j] != '\a' && !(raw[j] == '\x1b' && j + 1 < raw.size() && raw[j + 1] == '\\')) ++j;
        i = (j < raw.size() && raw[j] == '\x1b') ? j + 1 : j;
        continue;
      }
      ++i;  // two-byte escape (ESC c, ESC =, ...)
      continue;
    }
    if (c == '\0') continue;
    out.push_back(c);
  }
}
}  // namespace ff::record
