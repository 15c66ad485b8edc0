// serve/serve.host.cc — whether a Host header (or an Origin's host) names the loopback
// address the server listens on: the check against DNS rebinding.
#include <arpa/inet.h>

#include <string>

#include "base/strings.h"
#include "serve/serve.h"

namespace ff::serve {

bool is_loopback_address(std::string_view a) {
  if (a == "localhost" || a == "::1" || a == "[::1]") return true;
  in_addr v4{};
  const std::string s(a);
  return ::inet_pton(AF_INET, s.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

bool host_is_loopback(std::string_view host, int port) {
  std::string_view name = host;
  std::string_view port_text;
  if (starts_with(host, "[")) {  // [::1]:8765
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    name = host.substr(0, close + 1);
    std::string_view rest = host.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return false;
      port_text = rest.substr(1);
    }
  } else if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    name = host.substr(0, colon);
    port_text = host.substr(colon + 1);
  }
  if (!is_loopback_address(name)) return false;
  if (port_text.empty()) return port == 80;
  return port_text == std::to_string(port);
}

}  // namespace ff::serve
