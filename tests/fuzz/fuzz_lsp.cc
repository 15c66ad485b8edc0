// Fuzz target: the language server's JSON-RPC framing and what it does with a body before
// any handler sees it (issue 31). The bytes are read twice by lsp::MessageReader from a
// file descriptor:
//   - as they are, a client's raw stream: every body returned is a piece of the input, and
//     the nesting check bounds what json::parse is given (a deeper body is never parsed);
//     a body that parses and carries contentChanges is applied to a document by
//     apply_changes, once in place and once under a reader's snapshot, with equal results
//     and the snapshot unchanged;
//   - cut at 0x00 bytes into pieces, each framed with its Content-Length: the reader must
//     give back exactly those pieces, in order.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lsp/lsp.h"
#include "lsp/lsp_internal.h"

namespace {

// The bytes as a file descriptor positioned at its start (a memfd: no file system).
int as_fd(std::string_view bytes) {
  const int fd = memfd_create("fuzz_lsp", 0);
  if (fd < 0) std::abort();
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  if (::lseek(fd, 0, SEEK_SET) != 0) std::abort();
  return fd;
}

std::vector<std::string> read_all(std::string_view bytes, size_t max_body) {
  const int fd = as_fd(bytes);
  ff::app::lsp::MessageReader reader(fd, max_body);
  std::vector<std::string> out;
  while (auto body = reader.next()) out.push_back(std::move(*body));
  ::close(fd);
  return out;
}

void apply(const nlohmann::json& msg) {
  using ff::app::lsp::json;
  const json* changes = nullptr;
  if (msg.contains("params") && msg["params"].is_object() && msg["params"].contains("contentChanges"))
    changes = &msg["params"]["contentChanges"];
  else if (msg.contains("contentChanges"))
    changes = &msg["contentChanges"];
  if (!changes || !changes->is_array()) return;
  const std::string start = "line one\r\nl\xC3\xA9ne two \xF0\x9F\x98\x80\nthree";
  auto alone = std::make_shared<std::string>(start);
  auto shared = std::make_shared<std::string>(start);
  std::shared_ptr<const std::string> snapshot = shared;
  bool ok_alone = true, ok_shared = true;
  try {
    ff::app::lsp::apply_changes(alone, *changes);
  } catch (const json::exception&) {
    ok_alone = false;  // the server answers InvalidParams
  }
  try {
    ff::app::lsp::apply_changes(shared, *changes);
  } catch (const json::exception&) {
    ok_shared = false;
  }
  if (ok_alone != ok_shared) std::abort();
  if (ok_alone && *alone != *shared) std::abort();  // in place or on a copy: the same text
  if (*snapshot != start) std::abort();              // a reader's snapshot never changes
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ff::app::lsp::json;
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // A client's raw stream.
  for (const std::string& body : read_all(input, 1 << 16)) {
    if (input.find(body) == std::string_view::npos) std::abort();
    if (ff::app::lsp::json_deeper_than(body, ff::app::lsp::kMaxJsonDepth)) continue;
    const json msg = json::parse(body, nullptr, false);
    if (!msg.is_discarded() && msg.is_object()) apply(msg);
  }

  // The pieces between 0x00 bytes, framed as a client frames them: read back exactly.
  std::vector<std::string_view> pieces;
  size_t from = 0;
  for (size_t i = 0; i <= input.size(); ++i) {
    if (i == input.size() || input[i] == '\0') {
      pieces.push_back(input.substr(from, i - from));
      from = i + 1;
    }
  }
  std::string framed;
  for (std::string_view p : pieces) {
    framed += "Content-Length: " + std::to_string(p.size()) + "\r\nContent-Type: application/vscode-jsonrpc\r\n\r\n";
    framed.append(p);
  }
  const std::vector<std::string> back = read_all(framed, 1 << 20);
  if (back.size() != pieces.size()) std::abort();
  for (size_t i = 0; i < back.size(); ++i)
    if (back[i] != pieces[i]) std::abort();
  return 0;
}
