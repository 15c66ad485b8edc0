// record.prefix_program.cc — PrefixProgram::compile: a prefix format's regex parsed
// (the subset prefix_program.h lists) into a tree, then emitted as instructions for the
// backtracking matcher: a byte or a class per position, SPLIT for each choice (the
// preferred branch first, as RE2 and Perl prefer it), SAVE around each group.
#include <memory>
#include <string>

#include "record/prefix_program.h"

namespace ff::record::detail {

class ProgramCompiler {
 public:
  explicit ProgramCompiler(std::string_view re) : re_(re) {}

  std::optional<PrefixProgram> run() {
    size_t i = 0;
    if (!re_.empty() && re_[0] == '^') i = 1;  // the parser anchors every format anyway
    std::unique_ptr<Node> root = alternation(i);
    if (!root || i != re_.size() || failed_) return std::nullopt;
    emit_save(0);
    if (!emit(*root)) return std::nullopt;
    emit_save(1);
    prog_.code_.push_back({PrefixProgram::Op::kMatch, 0, 0, 0});
    prog_.slots_ = 2 * (groups_ + 1);
    if (prog_.slots_ > PrefixProgram::kMaxSlots || prog_.code_.size() > kMaxCode) return std::nullopt;
    return std::move(prog_);
  }

 private:
  static constexpr size_t kMaxCode = 4000;
  using Class = PrefixProgram::Class;
  struct Node {
    enum Kind { kClass, kConcat, kAlt, kRepeat, kGroup } kind;
    Class cls{};
    std::vector<std::unique_ptr<Node>> kids;
    int min = 0, max = 0;  // kRepeat; max -1: no bound
    bool greedy = true;
    int group = -1;  // kGroup: the capture's number, or -1
  };

  static void add(Class& c, unsigned char b) { c[b >> 6] |= uint64_t{1} << (b & 63); }
  static void add_range(Class& c, unsigned lo, unsigned hi) {
    for (unsigned b = lo; b <= hi; ++b) add(c, static_cast<unsigned char>(b));
  }
  static void negate(Class& c) {
    for (auto& w : c) w = ~w;
  }
  static bool has(const Class& c, unsigned char b) { return ((c[b >> 6] >> (b & 63)) & 1) != 0; }

  std::unique_ptr<Node> fail() {
    failed_ = true;
    return nullptr;
  }

  // \d \w \s and their negations, as RE2 reads them (ASCII only).
  static bool perl_class(char e, Class& c) {
    Class k{};
    switch (e) {
      case 'd':
      case 'D': add_range(k, '0', '9'); break;
      case 'w':
      case 'W': add_range(k, '0', '9'), add_range(k, 'a', 'z'), add_range(k, 'A', 'Z'), add(k, '_'); break;
      case 's':
      case 'S':
        for (char b : {'\t', '\n', '\f', '\r', ' '}) add(k, static_cast<unsigned char>(b));
        break;
      default: return false;
    }
    if (e == 'D' || e == 'W' || e == 'S') negate(k);
    for (int w = 0; w < 4; ++w) c[w] |= k[w];
    return true;
  }

  // One escaped byte (after the backslash at i): its value, or -1 when it is not a
  // literal this subset takes.
  int escaped_byte(size_t& i) {
    if (i >= re_.size()) return -1;
    const char e = re_[i++];
    switch (e) {
      case 't': return '\t';
      case 'n': return '\n';
      case 'r': return '\r';
      case 'f': return '\f';
      case 'v': return '\v';
      case 'x': {
        auto hex = [](char h) {
          return h >= '0' && h <= '9'   ? h - '0'
                 : h >= 'a' && h <= 'f' ? h - 'a' + 10
                 : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                        : -1;
        };
        if (i + 2 > re_.size() || hex(re_[i]) < 0 || hex(re_[i + 1]) < 0) return -1;
        const int v = hex(re_[i]) * 16 + hex(re_[i + 1]);
        i += 2;
        return v;
      }
    }
    // Punctuation stands for itself; letters and digits are RE2's other escapes (\b, \A,
    // \pN, \1 ...): not in the subset.
    const auto u = static_cast<unsigned char>(e);
    if ((u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || u >= 0x80) return -1;
    return u;
  }

  std::unique_ptr<Node> class_node(Class c) {
    auto n = std::make_unique<Node>();
    n->kind = Node::kClass;
    n->cls = c;
    return n;
  }

  std::unique_ptr<Node> bracket(size_t& i) {  // at the byte after '['
    Class c{};
    bool neg = false;
    if (i < re_.size() && re_[i] == '^') neg = true, ++i;
    bool first = true;
    for (;;) {
      if (i >= re_.size()) return fail();
      char ch = re_[i];
      if (ch == ']' && !first) {
        ++i;
        break;
      }
      first = false;
      if (ch == '[' && i + 1 < re_.size() && re_[i + 1] == ':') return fail();  // [[:alpha:]]
      int lo;
      if (ch == '\\') {
        ++i;
        if (i < re_.size() && perl_class(re_[i], c)) {
          ++i;
          continue;
        }
        lo = escaped_byte(i);
        if (lo < 0) return fail();
      } else {
        lo = static_cast<unsigned char>(ch);
        ++i;
      }
      int hi = lo;
      if (i + 1 < re_.size() && re_[i] == '-' && re_[i + 1] != ']') {
        ++i;
        if (re_[i] == '\\') {
          ++i;
          hi = escaped_byte(i);
          if (hi < 0) return fail();
        } else {
          hi = static_cast<unsigned char>(re_[i++]);
        }
        if (hi < lo) return fail();
      }
      add_range(c, static_cast<unsigned>(lo), static_cast<unsigned>(hi));
    }
    if (neg) negate(c);
    return class_node(c);
  }

  std::unique_ptr<Node> atom(size_t& i) {
    const char ch = re_[i];
    if (ch == '(') {
      ++i;
      int group = -1;
      std::string name;
      if (re_.substr(i, 2) == "?:") {
        i += 2;
      } else if (re_.substr(i, 3) == "?P<" || re_.substr(i, 2) == "?<") {
        i += re_[i + 1] == 'P' ? 3 : 2;
        const size_t end = re_.find('>', i);
        if (end == std::string_view::npos) return fail();
        name = std::string(re_.substr(i, end - i));
        i = end + 1;
        group = ++groups_;
      } else if (i < re_.size() && re_[i] == '?') {
        return fail();  // flags and other group kinds
      } else {
        group = ++groups_;
      }
      if (group > 15 && !name.empty()) return fail();  // past the captures the parser reads
      for (int k = 0; k < kCaptureFields; ++k) {
        if (name == kCaptureNames[k]) prog_.field_group_[k] = static_cast<uint8_t>(group);
      }
      auto inner = alternation(i);
      if (!inner || i >= re_.size() || re_[i] != ')') return fail();
      ++i;
      auto n = std::make_unique<Node>();
      n->kind = Node::kGroup;
      n->group = group;
      n->kids.push_back(std::move(inner));
      return n;
    }
    if (ch == '[') return bracket(++i);
    Class c{};
    ++i;
    if (ch == '\\') {
      if (i < re_.size() && perl_class(re_[i], c)) {
        ++i;
        return class_node(c);
      }
      const int b = escaped_byte(i);
      if (b < 0) return fail();
      add(c, static_cast<unsigned char>(b));
      return class_node(c);
    }
    if (ch == '.') {
      negate(c);
      c['\n' >> 6] &= ~(uint64_t{1} << ('\n' & 63));
      return class_node(c);
    }
    if (ch == '^' || ch == '$' || ch == '*' || ch == '+' || ch == '?' || ch == ')' || ch == '|') return fail();
    add(c, static_cast<unsigned char>(ch));
    return class_node(c);
  }

  // {n}, {n,}, {n,m} at i (after '{'): true with min and max, else false (RE2 then takes
  // the brace as a literal).
  bool braces(size_t i, size_t& end, int& min, int& max) const {
    auto number = [&](size_t& j, int& v) {
      const size_t s = j;
      v = 0;
      while (j < re_.size() && re_[j] >= '0' && re_[j] <= '9' && v <= 1000) v = v * 10 + (re_[j++] - '0');
      return j > s;
    };
    size_t j = i;
    if (!number(j, min)) return false;
    max = min;
    if (j < re_.size() && re_[j] == ',') {
      ++j;
      if (!number(j, max)) max = -1;
    }
    if (j >= re_.size() || re_[j] != '}') return false;
    end = j + 1;
    return true;
  }

  static bool can_be_empty(const Node& n) {
    switch (n.kind) {
      case Node::kClass: return false;
      case Node::kConcat:
        for (const auto& k : n.kids)
          if (!can_be_empty(*k)) return false;
        return true;
      case Node::kAlt:
        for (const auto& k : n.kids)
          if (can_be_empty(*k)) return true;
        return n.kids.empty();
      case Node::kRepeat: return n.min == 0 || can_be_empty(*n.kids[0]);
      case Node::kGroup: return can_be_empty(*n.kids[0]);
    }
    return true;
  }

  std::unique_ptr<Node> repeat(size_t& i) {
    auto a = atom(i);
    if (!a) return nullptr;
    if (i >= re_.size()) return a;
    int min = -1, max = -1;
    size_t end = i + 1;
    switch (re_[i]) {
      case '?': min = 0, max = 1; break;
      case '*': min = 0, max = -1; break;
      case '+': min = 1, max = -1; break;
      case '{':
        if (!braces(i + 1, end, min, max)) return a;  // a literal '{' follows
        if (min > 1000 || max > 1000 || (max >= 0 && max < min)) return fail();
        break;
      default: return a;
    }
    i = end;
    bool greedy = true;
    if (i < re_.size() && re_[i] == '?') greedy = false, ++i;
    if (i < re_.size() && (re_[i] == '?' || re_[i] == '*' || re_[i] == '+' || re_[i] == '{')) return fail();
    // A repeat of what can match empty is where backtracking and RE2 part ways.
    if (max != min && can_be_empty(*a)) return fail();
    auto n = std::make_unique<Node>();
    n->kind = Node::kRepeat;
    n->min = min;
    n->max = max;
    n->greedy = greedy;
    n->kids.push_back(std::move(a));
    return n;
  }

  std::unique_ptr<Node> concat(size_t& i) {
    auto n = std::make_unique<Node>();
    n->kind = Node::kConcat;
    while (i < re_.size() && re_[i] != '|' && re_[i] != ')') {
      auto r = repeat(i);
      if (!r) return fail();
      n->kids.push_back(std::move(r));
    }
    return n;
  }

  std::unique_ptr<Node> alternation(size_t& i) {
    auto first = concat(i);
    if (!first) return nullptr;
    if (i >= re_.size() || re_[i] != '|') return first;
    auto n = std::make_unique<Node>();
    n->kind = Node::kAlt;
    n->kids.push_back(std::move(first));
    while (i < re_.size() && re_[i] == '|') {
      ++i;
      auto k = concat(i);
      if (!k) return nullptr;
      n->kids.push_back(std::move(k));
    }
    return n;
  }

  // ---- code

  size_t here() const { return prog_.code_.size(); }
  void emit_save(int slot) { prog_.code_.push_back({PrefixProgram::Op::kSave, 0, static_cast<uint16_t>(slot), 0}); }
  size_t emit_split() {
    prog_.code_.push_back({PrefixProgram::Op::kSplit, 0, 0, 0});
    return here() - 1;
  }
  size_t emit_jmp() {
    prog_.code_.push_back({PrefixProgram::Op::kJmp, 0, 0, 0});
    return here() - 1;
  }
  // A split at `at` whose preferred branch is `pref` and other `other`.
  void patch_split(size_t at, size_t pref, size_t other) {
    prog_.code_[at].x = static_cast<uint16_t>(pref);
    prog_.code_[at].y = static_cast<uint16_t>(other);
  }

  bool emit(const Node& n) {
    if (here() > kMaxCode) return false;
    switch (n.kind) {
      case Node::kClass: {
        int digits = 0;
        for (unsigned char d = '0'; d <= '9'; ++d) digits += has(n.cls, d) ? 1 : 0;
        if (digits != 0 && digits != 10) prog_.digit_blind_ = false;
        int count = 0, only = 0;
        for (unsigned b = 0; b < 256; ++b) {
          if (has(n.cls, static_cast<unsigned char>(b))) ++count, only = static_cast<int>(b);
        }
        if (count == 1) {
          prog_.code_.push_back({PrefixProgram::Op::kByte, static_cast<uint8_t>(only), 0, 0});
        } else {
          size_t k = 0;
          while (k < prog_.classes_.size() && prog_.classes_[k] != n.cls) ++k;
          if (k == prog_.classes_.size()) prog_.classes_.push_back(n.cls);
          prog_.code_.push_back({PrefixProgram::Op::kClass, 0, static_cast<uint16_t>(k), 0});
        }
        return true;
      }
      case Node::kConcat:
        for (const auto& k : n.kids)
          if (!emit(*k)) return false;
        return true;
      case Node::kAlt: {
        std::vector<size_t> jumps;
        for (size_t k = 0; k < n.kids.size(); ++k) {
          if (k + 1 == n.kids.size()) {
            if (!emit(*n.kids[k])) return false;
            break;
          }
          const size_t split = emit_split();
          if (!emit(*n.kids[k])) return false;
          jumps.push_back(emit_jmp());
          patch_split(split, split + 1, here());
        }
        for (size_t j : jumps) prog_.code_[j].x = static_cast<uint16_t>(here());
        return true;
      }
      case Node::kGroup:
        if (n.group >= 0) emit_save(2 * n.group);
        if (!emit(*n.kids[0])) return false;
        if (n.group >= 0) emit_save(2 * n.group + 1);
        return true;
      case Node::kRepeat: {
        const Node& x = *n.kids[0];
        for (int k = 0; k < n.min; ++k)
          if (!emit(x)) return false;
        if (n.max < 0) {
          // L: split body, out; body: x; jmp L; out:
          const size_t split = emit_split();
          if (!emit(x)) return false;
          const size_t back = emit_jmp();
          prog_.code_[back].x = static_cast<uint16_t>(split);
          n.greedy ? patch_split(split, split + 1, here()) : patch_split(split, here(), split + 1);
          return true;
        }
        // (x(x(x)?)?)?: each optional copy, when skipped, skips the rest.
        std::vector<size_t> splits;
        for (int k = n.min; k < n.max; ++k) {
          splits.push_back(emit_split());
          if (!emit(x)) return false;
        }
        for (size_t s : splits) n.greedy ? patch_split(s, s + 1, here()) : patch_split(s, here(), s + 1);
        return true;
      }
    }
    return false;
  }

  std::string_view re_;
  PrefixProgram prog_;
  int groups_ = 0;
  bool failed_ = false;
};

std::optional<PrefixProgram> PrefixProgram::compile(std::string_view regex) { return ProgramCompiler(regex).run(); }

}  // namespace ff::record::detail
