// base/markdown.h — the inline Markdown of the knowledge base's text fields (kb/README.md,
// "Text fields"): `code`, **strong**, *emphasis* and [text](https://...). Nothing else:
// no headings, lists, HTML or underscores (identifiers such as max_split_size_mb keep
// theirs). One parser, three outputs: HTML for the encyclopedia, plain text for the
// terminal, and a check that the delimiters pair up.
//
//   markdown_html("set `NCCL_DEBUG=INFO` and **rerun**")
//     -> "set <code>NCCL_DEBUG=INFO</code> and <strong>rerun</strong>"
//   markdown_plain("see [the notes](https://pytorch.org/docs)")
//     -> "see the notes (https://pytorch.org/docs)"
//
// The rules agree with `kb check`'s (rule page.markdown): a backtick opens a code span and
// the next one closes it, and nothing inside a code span is markup; `**` pairs with the
// next `**`; a lone `*` with a space on both sides (or at either end of the text with a
// space on its other side) is arithmetic or a bullet and shows as itself, any other lone
// `*` pairs with the next such `*`. A delimiter without its partner shows as itself.
// An unpaired backtick that opens a GNU-style quote, `name' (Slurm's messages), is shown as
// ‘name’ in HTML. `\*`, `` \` ``, `\[` and `\\` are literal characters. Only https:// links become links; a
// link to anything else shows its text and, in brackets, its target.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace ff {

// HTML element content: the text HTML-escaped (escape_html) first, then the markup as
// <code>, <strong>, <em> and <a href="https://..." rel="noopener noreferrer">.
std::string markdown_html(std::string_view text);

// How markdown_plain shows a code span.
enum class PlainCode {
  kBackticks,  // `code` as written: a terminal reader sees where a command starts and ends
  kBare,       // code: for a meta description or an excerpt
};

// The text with the markers removed: strong and emphasis as their text, a link as
// "text (url)", code spans as `code` or code. Not escaped for anything.
std::string markdown_plain(std::string_view text, PlainCode code = PlainCode::kBackticks);

// True when every delimiter has its partner (markdown_html shows no raw marker).
bool markdown_balanced(std::string_view text);

}  // namespace ff
