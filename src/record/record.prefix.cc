// record.prefix.cc — PrefixParser's construction: each format of kb/formats/prefixes.yaml
// compiled with RE2 (named captures → fields), its hand-written matcher where one exists
// (prefix_fast.h), the first-byte and second-byte tables that pick the formats a text can
// start; one format matched on its own (match_format) and the formats' samples checked.
// The per-line parse is in record.prefix_memo.cc.
#include <re2/re2.h>

#include <algorithm>
#include <atomic>

#include "base/strings.h"
#include "record/record_internal.h"

namespace ff::record {

// ---------------------------------------------------------------------------
// Prefixes

PrefixParser::PrefixParser() : impl_(std::make_unique<Impl>()) {}
PrefixParser::~PrefixParser() = default;

// Long because it builds the parser's tables in the order they depend on one another:
// the formats and their matchers, the first-byte table, the per-byte candidates with
// their second bytes, and whether flat shapes may be kept.
Result<std::unique_ptr<PrefixParser>> PrefixParser::create(const std::vector<kb::PrefixFormat>& formats,
                                                           Matchers matchers,
                                                           const std::vector<kb::PrefixFormat>& glue) {
  std::unique_ptr<PrefixParser> p(new PrefixParser());
  p->impl_->use_fast = matchers != Matchers::kRegexOnly;
  static std::atomic<uint64_t> next_id{1};
  p->impl_->id = next_id++;
  RE2::Options opts;
  opts.set_log_errors(false);
  opts.set_encoding(RE2::Options::EncodingLatin1);
  for (const auto& f : formats) {
    Impl::Format fmt;
    fmt.spec = f;
    std::string rx = f.regex;
    if (!starts_with(rx, "^")) rx = "^(?:" + rx + ")";
    fmt.re = std::make_unique<RE2>(rx, opts);
    if (!fmt.re->ok()) {
      return make_error(ErrorCode::kInvalidKb, "prefix format does not compile: " + fmt.re->error(),
                        {"formats", f.line, f.id});
    }
    fmt.ngroups = std::min(15, fmt.re->NumberOfCapturingGroups());
    for (const auto& [name, idx] : fmt.re->NamedCapturingGroups()) {
      if (idx > fmt.ngroups) continue;
      for (int k = 0; k < detail::kCaptureFields; ++k) {
        if (name == detail::kCaptureNames[k]) fmt.group[k] = idx;
      }
    }
    fmt.time_format = detail::time_format_of(f.time_format);
    fmt.fast = detail::fast_kind_for(f.id, f.regex);
    fmt.program = detail::PrefixProgram::compile(f.regex);
    if (f.glued) p->impl_->glued.push_back(static_cast<uint16_t>(p->impl_->formats.size()));
    p->impl_->formats.push_back(std::move(fmt));
  }
  for (const auto& g : glue) {
    Impl::Residue r;
    r.re = std::make_unique<RE2>(g.regex, opts);
    r.end = g.end;
    if (!r.re->ok() || r.end.empty()) {
      return make_error(ErrorCode::kInvalidKb,
                        "glue residue " + g.id + (r.end.empty() ? " has no end" : " does not compile: " + r.re->error()),
                        {"formats", g.line, g.id});
    }
    if (p->impl_->glue_bytes.find(r.end[0]) == std::string::npos) p->impl_->glue_bytes.push_back(r.end[0]);
    p->impl_->residues.push_back(std::move(r));
  }
  if (!p->impl_->glued.empty() && p->impl_->glue_bytes.find('[') == std::string::npos)
    p->impl_->glue_bytes.push_back('[');
  // The first-byte table. Every text a format matches lies in [min, max] of
  // PossibleMatchRange, so its first byte lies in [min[0], max[0]]. A format that can
  // match the empty string constrains nothing, unless it consumes (an empty match of a
  // consuming format counts as none).
  auto& table = p->impl_->first_byte;
  for (size_t i = 0; i < p->impl_->formats.size() && i < 64; ++i) {
    const Impl::Format& f = p->impl_->formats[i];
    unsigned lo = 0, hi = 255;
    std::string min, max;
    if (f.re->PossibleMatchRange(&min, &max, 8) && !(min.empty() && !f.spec.consume)) {
      if (!min.empty()) lo = static_cast<unsigned char>(min[0]);
      if (!max.empty()) hi = static_cast<unsigned char>(max[0]);
    }
    for (unsigned b = lo; b <= hi; ++b) table[b] |= uint64_t{1} << i;
    if (f.spec.consume) p->impl_->consuming |= uint64_t{1} << i;
  }
  // Per format, the matcher parse() runs: the hand-written one (kFast), else the program
  // compiled from the regex (kFast, kCompiled), else RE2.
  for (const auto& f : p->impl_->formats) {
    const detail::FastKind fast = matchers == Matchers::kFast ? f.fast : detail::FastKind::kNone;
    const detail::PrefixProgram* program =
        matchers != Matchers::kRegexOnly && fast == detail::FastKind::kNone && f.program ? &*f.program : nullptr;
    p->impl_->hot.push_back({fast, program, f.spec.consume, &f});
  }
  const size_t n = p->impl_->formats.size();
  for (unsigned b = 0; b < 256; ++b) {
    for (size_t i = 0; i < n; ++i) {
      if (i < 64 && ((table[b] >> i) & 1) == 0) continue;
      Impl::Candidate c{static_cast<uint16_t>(i), {}};
      const detail::FastKind kind = p->impl_->hot[i].fast;
      for (unsigned b1 = 0; b1 < 256; ++b1) {
        if (kind == detail::FastKind::kNone ||
            detail::may_start2(kind, static_cast<unsigned char>(b), static_cast<unsigned char>(b1)))
          c.second[b1 >> 6] |= uint64_t{1} << (b1 & 63);
      }
      p->impl_->order[b].push_back(c);
    }
  }
  for (size_t i = 0; i < n; ++i) p->impl_->all_order.push_back(static_cast<uint16_t>(i));
  p->impl_->all_fast =
      p->impl_->use_fast && std::all_of(p->impl_->hot.begin(), p->impl_->hot.end(), [](const Impl::Hot& h) {
        return h.fast != detail::FastKind::kNone || h.program != nullptr;
      });
  // A flat shape (PrefixShape) does not compare a round's first two bytes: it needs the
  // formats a round tries to be the same whichever digit those bytes are. The
  // hand-written filters and the programs (every second byte) are; a first-byte table
  // from a regex that starts with part of the digits ("[1-9]") is not.
  const auto& order = p->impl_->order;
  for (unsigned d = '1'; d <= '9'; ++d) {
    if (order[d].size() != order['0'].size()) p->impl_->all_fast = false;
    for (size_t k = 0; p->impl_->all_fast && k < order[d].size(); ++k) {
      if (order[d][k].format != order['0'][k].format || order[d][k].second != order['0'][k].second)
        p->impl_->all_fast = false;
    }
  }
  for (unsigned b = 0; b < 256 && p->impl_->all_fast; ++b) {
    for (const Impl::Candidate& c : order[b]) {
      for (unsigned d = '1'; d <= '9'; ++d) {
        if (((c.second[d >> 6] >> (d & 63)) & 1) != ((c.second['0' >> 6] >> ('0' & 63)) & 1))
          p->impl_->all_fast = false;
      }
    }
  }
  return p;
}

size_t PrefixParser::format_count() const { return impl_->formats.size(); }
const kb::PrefixFormat& PrefixParser::format(size_t i) const { return impl_->formats.at(i).spec; }
bool PrefixParser::has_fast_matcher(size_t i) const { return impl_->formats.at(i).fast != detail::FastKind::kNone; }
bool PrefixParser::has_program(size_t i) const { return impl_->formats.at(i).program.has_value(); }

PrefixParser::FormatMatch PrefixParser::match_format(size_t i, std::string_view text, Matchers matchers) const {
  FormatMatch m;
  if (!impl_->match(impl_->formats.at(i), text, m, matchers)) m = FormatMatch{};
  return m;
}

void Record::to_origin(Origin& o) const {
  o.rank = rank;
  o.local_rank = local_rank;
  o.pid = pid;
  o.gpu = gpu;
  o.node.assign(node.data(), node.size());
  o.time_us = time_us;
  o.clock = clock;
  o.time_subsecond = time_subsecond;
  o.level = level;
}

std::vector<std::string> PrefixParser::check_samples() const {
  std::vector<std::string> bad;
  for (const auto& f : impl_->formats) {
    for (const auto& s : f.spec.samples) {
      re2::StringPiece input(s);
      if (!RE2::PartialMatch(input, *f.re)) bad.push_back(f.spec.id + ": " + s);
    }
  }
  return bad;
}

}  // namespace ff::record
