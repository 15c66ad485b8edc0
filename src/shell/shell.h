// shell/shell.h — what makes firstfault behave like an installed system tool: the
// `--version` text (version, git commit, build type, the embedded knowledge base's entry
// count and hash) and shell completions for bash, zsh and fish generated from the CLI11
// command tree itself (the hidden `firstfault completions SHELL`), so they never go
// stale: a new subcommand or flag is completed as soon as main.cc declares it. The build
// runs the subcommand to make the files that `make install` puts in place
// (cmake/FFInstall.cmake), and tools/gen-manpage makes the man page from `--help`.
//
//   app.set_version_flag("--version,-V", [] { return ff::app::version_text(ff::app::build_includes()); });
//   CLI::App* completions = ff::app::add_completions_command(app);
//   ...
//   if (completions->parsed()) return ff::app::run_completions(app);
//
// Not thread-safe (the CLI is set up and parsed on one thread); no function throws.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace ff::app {

// The --version/-V text. The first line is "firstfault X.Y.Z" (scripts parse it); then
// the commit the binary was built from ("unknown" outside a git checkout, "-dirty" when
// tracked files were modified), the build type (and "portable" for FF_PORTABLE builds),
// and the embedded knowledge base: entries that load, and the content hash computed at
// build time (the key of the parsed-KB and pattern caches). Loads the embedded KB without
// the cache, so it reads and writes no file. `includes` says what the build has (the
// matcher, serve, --metrics): app knows it, this module links none of them.
std::string version_text(const std::string& includes);

// The git commit of the build, as the build recorded it (generated build_info.cc).
const char* build_commit();

// The build's kind for --version: the build type, and ", portable (static, needs only
// glibc)" for a portable link. In build_kind.cc alone, compiled into this module with the
// build's own FF_PORTABLE, and compiled again into a portable link of a normal build's
// objects (firstfault-portable, cmake/FFPortable.cmake) with FF_PORTABLE_BUILD=1: that
// object is linked before the archives, so libff_shell.a's copy is never pulled in.
const char* build_kind();

// Adds the hidden subcommand `completions bash|zsh|fish [-o FILE]` (not listed in the help)
// and returns it; run_completions() serves it once parsed.
CLI::App* add_completions_command(CLI::App& app);

// Prints (or writes to -o FILE) the completion script of the shell chosen on the command
// line for the whole tree of `app`. Returns the exit code: 0, or 2 when FILE cannot be
// written.
int run_completions(const CLI::App& app);

// The completion script for `shell` ("bash", "zsh" or "fish") over every subcommand and
// option of `app` that the help lists (hidden ones are left out). Empty for another shell.
std::string completion_script(const CLI::App& app, std::string_view shell);

}  // namespace ff::app
