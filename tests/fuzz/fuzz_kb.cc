// Fuzz target: the KB loader. The bytes are loaded once as an entry file and once as a
// formats file (kb::load, the path decides), and the prefix formats that load are compiled
// by the record stage's PrefixParser and run on their own samples. A bad file must come
// back as located errors, never as a crash or an escaped exception.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kb/kb.h"
#include "record/record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string content(reinterpret_cast<const char*>(data), size);
  {
    ff::kb::LoadResult r = ff::kb::load({ff::kb::File{"fuzz/entry.yaml", content, false}});
    for (const auto& e : r.kb.entries) {
      if (r.kb.find(e.id) == nullptr) __builtin_trap();
    }
    for (const auto& e : r.errors) (void)e.to_string();
  }
  {
    ff::kb::LoadResult r = ff::kb::load({ff::kb::File{"formats/fuzz.yaml", content, false}});
    for (const auto& e : r.errors) (void)e.to_string();
    auto parser = ff::record::PrefixParser::create(r.kb.prefixes);
    if (parser.ok()) {
      (void)parser.value()->check_samples();
      ff::record::Record rec;
      for (const auto& f : r.kb.prefixes) {
        for (const auto& s : f.samples) parser.value()->parse(s, rec);
      }
    }
  }
  return 0;
}
