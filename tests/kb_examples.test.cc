// Every KB example must trigger its own entry and win against every other entry (the
// collision check); negatives must not match; prefix samples must parse.
#include <gtest/gtest.h>

#include "app/commands.h"
#include "app/kb_check.h"

namespace ff::app {
namespace {

TEST(KbExamples, EveryExampleTriggersItsEntryAndNoCollisions) {
  Options opt;
  opt.no_cache = true;
  auto loaded = load_everything(opt, true);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  for (const auto& e : loaded->kb_errors) ADD_FAILURE() << e.to_string();
  KbCheckReport rep = check_kb(*loaded->kb, *loaded->engine);
  EXPECT_GE(rep.examples, loaded->kb->entries.size());
  for (const auto& p : rep.problems) ADD_FAILURE() << p;
}

TEST(KbExamples, AllPatternsCompileInVectorscan) {
  Options opt;
  opt.no_cache = true;
  auto loaded = load_everything(opt, true);
  ASSERT_TRUE(loaded.ok());
#ifdef FF_HAVE_VECTORSCAN
  for (const auto& w : loaded->engine->warnings()) ADD_FAILURE() << w.to_string();
#endif
}

}  // namespace
}  // namespace ff::app
