// base/strings.h — small string helpers shared by every module. No allocation unless
// the function returns a std::string.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ff {

std::string_view trim(std::string_view s);
std::string_view trim_left(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
std::vector<std::string_view> split(std::string_view s, char sep);
std::string to_lower(std::string_view s);

// Replaces bytes that are not valid UTF-8 with U+FFFD so output (JSON, terminal) is
// always valid; returns the input unchanged when it is already valid.
std::string sanitize_utf8(std::string_view s);

// 64-bit FNV-1a, used to key caches (the compiled pattern database) by content.
uint64_t fnv1a64(std::string_view data, uint64_t seed = 1469598103934665603ull);

// Parses a non-negative decimal integer; false when s is empty or has other characters.
bool parse_int(std::string_view s, long long& out);

}  // namespace ff
