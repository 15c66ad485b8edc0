// record/prefix_program.h — a prefix format's regex compiled for a small backtracking
// matcher, so that a format written only in kb/formats/prefixes.yaml gets what a
// hand-written matcher (prefix_fast.h) gives the parser: a match without RE2, how far a
// failed attempt read (through PaddedProbe, for the memo) and whether the format tells
// one digit from another (digit_blind, for the memo's replay).
//
// The subset is what prefix formats are made of: literal bytes and escapes, classes
// ([...], [^...], \d \w \s and their negations, .), groups ((...), (?:...), (?P<name>...)),
// alternation, and the repeats ? * + {n} {n,} {n,m} with their lazy forms. Anything else
// (anchors but a leading ^, flags, \b, a repeat of what can match empty) is left to RE2:
// compile() says no, and the format keeps its RE2 match (as before, without the memo on
// the lines it is tried on). The matcher follows the alternatives and repeats in the
// order RE2 and Perl prefer them (leftmost-first), so it finds RE2's match and captures;
// record.test.cc runs every format's program against RE2 on samples and random texts.
// It gives up (-1) after kMaxSteps steps, and RE2 decides: a format whose regex
// backtracks badly costs no more than that per attempt.
//
// Internal to the record module. Thread-safety: immutable after compile(); match() keeps
// its state on the stack.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "record/prefix_fast.h"

namespace ff::record::detail {

class PrefixProgram {
 public:
  // The program of a format's regex (as kb/formats/prefixes.yaml writes it, without the
  // ^ the parser adds), or nullopt when the regex is outside the subset.
  static std::optional<PrefixProgram> compile(std::string_view regex);

  // No class and no literal of the program tells one digit from another: texts that
  // differ only in digits are matched alike (same length, captures at the same places).
  bool digit_blind() const { return digit_blind_; }

  // The format anchored at the start of s: 1 when it matches (m filled as RE2 fills it:
  // length and the named captures the parser reads), 0 when it does not, -1 when the
  // matcher gave up (kMaxSteps or its stack: RE2 decides). m is written only on a match.
  template <class S>
  int match(const S& s, M& m) const;

  static constexpr int kMaxSteps = 4096;

  enum class Op : uint8_t { kByte, kClass, kSplit, kJmp, kSave, kMatch };
  struct Inst {
    Op op;
    uint8_t byte;  // kByte
    uint16_t x;    // kClass: the class; kSplit, kJmp: the preferred target; kSave: the slot
    uint16_t y;    // kSplit: the other target
  };
  using Class = std::array<uint64_t, 4>;

 private:
  friend class ProgramCompiler;
  static bool at(const std::string_view& s, size_t i, unsigned char& c) {
    if (i >= s.size()) return false;
    c = static_cast<unsigned char>(s[i]);
    return true;
  }
  // Past the text's end reads as the end, and counts as read (the memo compares the
  // lines NUL-padded, and no cleaned line holds a NUL).
  static bool at(const PaddedProbe& p, size_t i, unsigned char& c) {
    if (i + 1 > p.reach) p.reach = i + 1;
    if (i >= p.text.size()) return false;
    c = static_cast<unsigned char>(p.text[i]);
    return true;
  }

  static constexpr int kMaxSlots = 32;  // 16 groups (RE2's captures the parser reads: 15)
  std::vector<Inst> code_;
  std::vector<Class> classes_;
  int slots_ = 2;
  // The group of each FormatMatch field, in CaptureField order (rank, local_rank, pid,
  // gpu, node, level, time, program); 0: the regex has none.
  std::array<uint8_t, 8> field_group_{};
  bool digit_blind_ = true;
};

template <class S>
int PrefixProgram::match(const S& s, M& m) const {
  constexpr size_t kNone = SIZE_MAX;
  size_t slot[kMaxSlots];
  for (int k = 0; k < slots_; ++k) slot[k] = kNone;
  // The backtracking stack: alternatives to try (pc, pos) and captures to restore on the
  // way back (undo: slot, old position).
  struct Frame {
    uint16_t pc;
    uint16_t undo;  // 0: an alternative; k + 1: restore slot k
    size_t pos;
  };
  constexpr int kStack = 256;
  Frame stack[kStack];
  int top = 0;
  stack[top++] = {0, 0, 0};
  int steps = 0;
  while (top > 0) {
    const Frame f = stack[--top];
    if (f.undo != 0) {
      slot[f.undo - 1] = f.pos;
      continue;
    }
    uint32_t pc = f.pc;
    size_t pos = f.pos;
    for (bool alive = true; alive;) {
      if (++steps > kMaxSteps) return -1;
      const Inst& in = code_[pc];
      unsigned char c;
      switch (in.op) {
        case Op::kByte:
          if (!at(s, pos, c) || c != in.byte) {
            alive = false;
          } else {
            ++pos, ++pc;
          }
          break;
        case Op::kClass:
          if (!at(s, pos, c) || ((classes_[in.x][c >> 6] >> (c & 63)) & 1) == 0) {
            alive = false;
          } else {
            ++pos, ++pc;
          }
          break;
        case Op::kSplit:
          if (top == kStack) return -1;
          stack[top++] = {in.y, 0, pos};
          pc = in.x;
          break;
        case Op::kJmp: pc = in.x; break;
        case Op::kSave:
          if (top == kStack) return -1;
          stack[top++] = {0, static_cast<uint16_t>(in.x + 1), slot[in.x]};
          slot[in.x] = pos;
          ++pc;
          break;
        case Op::kMatch: {
          m.matched = true;
          m.length = pos;
          for (int k = 0; k < kCaptureFields; ++k) {
            const int g = field_group_[k];
            if (g == 0) continue;
            const size_t b = slot[2 * g], e = slot[2 * g + 1];
            m.*kCaptureMembers[k] = b == kNone || e == kNone ? std::string_view() : s.substr(b, e - b);
          }
          return 1;
        }
      }
    }
  }
  return 0;
}

}  // namespace ff::record::detail
