// site/site.text.cc — the text helpers: HTML escaping, KB text's inline Markdown as HTML,
// excerpts and cuts, titles and the display names of categories, phases and frameworks;
// slug and the sources' labels and links (site.h).
#include <map>
#include <string>

#include "base/escape.h"
#include "base/markdown.h"
#include "base/strings.h"
#include "site/site.h"
#include "site/site_internal.h"

namespace ff::site {

namespace internal {

std::string esc(std::string_view s) { return html_escape(s); }

// KB text with its inline Markdown (`code`, **strong**, *em*, [text](https://...)) as
// HTML: base/markdown.h escapes first, then adds the markup.
std::string inline_text(std::string_view s) { return markdown_html(trim(s)); }

// Paragraphs split on blank lines; single line breaks kept. Markdown is rendered over a
// whole paragraph, so a code span may run across a line break.
std::string paras(std::string_view s) {
  std::string out;
  std::string text(trim(s));
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find("\n\n", pos);
    std::string_view p = std::string_view(text).substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (!trim(p).empty()) {
      std::string body;
      for (char c : inline_text(p)) {
        if (c == '\n')
          body += "<br>\n";
        else
          body += c;
      }
      out += "<p>" + body + "</p>\n";
    }
    if (end == std::string::npos) break;
    pos = end + 2;
  }
  return out;
}

// A code block's text: blank lines at either end and trailing spaces removed, the first
// line's indentation kept (Python).
std::string trim_newlines(std::string_view s) {
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n')
      start = i + 1;
    else if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
      break;
  }
  size_t end = s.size();
  while (end > start && (s[end - 1] == '\n' || s[end - 1] == ' ' || s[end - 1] == '\t' || s[end - 1] == '\r')) --end;
  return std::string(s.substr(start, end - start));
}

// At most `max` bytes, cut at a character boundary, with an ellipsis when cut.
std::string truncate_utf8(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(trim(s.substr(0, n))) + "\xE2\x80\xA6";
}

// The first sentence (a ". " at least 20 bytes in, never inside a code span), at most
// `max` bytes.
std::string first_sentence(std::string_view s, size_t max) {
  std::string t(trim(s));
  for (char& c : t)
    if (c == '\n') c = ' ';
  bool code = false;
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i] == '`') code = !code;
    if (!code && i >= 20 && t[i] == '.' && t[i + 1] == ' ')
      return truncate_utf8(std::string_view(t).substr(0, i + 1), max);
  }
  return truncate_utf8(t, max);
}

namespace {

// A cut text (an excerpt, a table cell) as HTML: its Markdown rendered; a cut inside a
// code span closes the span; any other delimiter the cut left without its partner is
// dropped (no raw backtick or star on a page).
std::string clipped_html(const std::string& t) {
  if (markdown_balanced(t)) return markdown_html(t);
  // Cut inside a code span: close it before the ellipsis.
  const std::string_view kEllipsis = "\xE2\x80\xA6";
  if (t.size() >= kEllipsis.size() && t.compare(t.size() - kEllipsis.size(), kEllipsis.size(), kEllipsis) == 0) {
    std::string closed = t.substr(0, t.size() - kEllipsis.size()) + "`" + std::string(kEllipsis);
    if (markdown_balanced(closed)) return markdown_html(closed);
  }
  // Otherwise the text without its markers (a delimiter left alone would show raw).
  std::string plain;
  for (char c : markdown_plain(t, PlainCode::kBare))
    if (c != '`' && c != '*') plain += c;
  return esc(plain);
}

}  // namespace

// The first sentence of a text field, as HTML.
std::string excerpt(std::string_view s, size_t max) { return clipped_html(first_sentence(s, max)); }
// At most `max` bytes of a text field, as HTML.
std::string clipped(std::string_view s, size_t max) { return clipped_html(truncate_utf8(trim(s), max)); }

// An entry's title: its backtick spans as code in a page, without markers where only text
// fits (<title>, the search index, sorting). A title is not checked for Markdown by kb
// check: a lone `*` (a glob such as CUBLAS_STATUS_*) shows as itself.
std::string title_html(const kb::Entry& e) { return inline_text(e.title); }
std::string title_plain(const kb::Entry& e) { return markdown_plain(e.title, PlainCode::kBare); }

std::string title_case_words(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c == '-' || c == '_') c = ' ';
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out;
}

std::string category_name(std::string_view c) {
  static const std::map<std::string, std::string, std::less<>> kNames = {
      {"gpu-memory", "GPU memory"},
      {"host-memory", "Host memory"},
      {"numerical", "Numerical"},
      {"communication", "Communication"},
      {"hardware", "Hardware"},
      {"cuda-runtime", "CUDA runtime"},
      {"checkpoint", "Checkpoint"},
      {"configuration", "Configuration"},
      {"data-pipeline", "Data pipeline"},
      {"launcher", "Launcher"},
      {"storage", "Storage"},
      {"compilation", "Compilation"},
      {"model-code", "Model code"},
      {"hang", "Hang"},
  };
  auto it = kNames.find(c);
  return it != kNames.end() ? it->second : title_case_words(c);
}

std::string phase_name(std::string_view p) {
  if (p == "any") return "Any phase";
  return title_case_words(p);
}

std::string framework_name(std::string_view f) {
  static const std::map<std::string, std::string, std::less<>> kNames = {
      {"pytorch", "PyTorch"},
      {"deepspeed", "DeepSpeed"},
      {"nccl", "NCCL"},
      {"nvidia-driver", "NVIDIA driver"},
      {"cuda", "CUDA"},
      {"slurm", "Slurm"},
      {"python", "Python"},
      {"megatron", "Megatron-LM"},
      {"vllm", "vLLM"},
      {"transformers", "Hugging Face Transformers"},
      {"accelerate", "Hugging Face Accelerate"},
      {"lightning", "PyTorch Lightning"},
      {"kubernetes", "Kubernetes"},
      {"gloo", "Gloo"},
      {"numpy", "NumPy"},
      {"horovod", "Horovod"},
      {"linux", "Linux"},
      {"generic", "Any framework"},
      {"jax", "JAX"},
      {"ray", "Ray"},
      {"nvidia", "NVIDIA"},
      {"fsdp", "FSDP"},
      {"triton", "Triton"},
      {"xla", "XLA"},
      {"tensorflow", "TensorFlow"},
  };
  auto it = kNames.find(f);
  return it != kNames.end() ? it->second : std::string(f);
}

std::string transience_text(std::string_view t) {
  if (t == "terminal") return "Terminal: the run cannot recover by itself; fix the cause and restart.";
  if (t == "transient") return "Transient: the software recovers by itself; act only when it keeps recurring.";
  if (t == "depends") return "Depends on the situation: see What happens.";
  return std::string(t);
}

bool is_web_url(std::string_view u) { return starts_with(u, "https://") || starts_with(u, "http://"); }

}  // namespace internal

std::string html_escape(std::string_view text) { return escape_html(text); }

std::string source_label(const kb::Source& src) {
  if (!src.url.empty()) return src.url;
  return src.repo + " " + src.path + (src.line > 0 ? ":" + std::to_string(src.line) : "") + " @ " + src.ref;
}

std::string source_versions(const kb::Source& src) {
  return (src.since.empty() ? "" : ", since " + src.since) + (src.until.empty() ? "" : ", until " + src.until);
}

std::string source_href(const kb::Source& src) {
  if (!src.url.empty()) return src.url;
  return "https://github.com/" + src.repo + "/blob/" + src.ref + "/" + src.path +
         (src.line > 0 ? "#L" + std::to_string(src.line) : "");
}

std::string slug(std::string_view name) {
  std::string out;
  bool dash = false;
  for (unsigned char c : name) {
    char l = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '.' || l == '_' || l == '-';
    if (ok && l != '-') {
      if (dash && !out.empty()) out.push_back('-');
      dash = false;
      out.push_back(l);
    } else {
      dash = true;
    }
  }
  while (!out.empty() && (out.back() == '.' || out.back() == '-')) out.pop_back();
  size_t lead = 0;
  while (lead < out.size() && (out[lead] == '.' || out[lead] == '-')) ++lead;
  out.erase(0, lead);
  return out.empty() ? "x" : out;
}

}  // namespace ff::site
