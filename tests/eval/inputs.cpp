// Trial inputs: declared cases by name, and the hidden case kforge adds.
#include "core/error.hpp"
#include "eval/inputs.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

using namespace kforge;

namespace {
problem::problem softmax() { return problem::load(test::problems_dir() / "softmax"); }
} // namespace

TEST(inputs, a_declared_case_by_name_is_make_inputs_of_that_case) {
  const auto p = softmax();
  EXPECT_EQ(eval::make_trial_inputs(p, "large_logits", 7, eval::precision::nominal)[0].bytes,
            eval::make_inputs(p, p.cases[1], 7, eval::precision::nominal)[0].bytes);
  EXPECT_THROW((void)eval::make_trial_inputs(p, "no_such_case", 7, eval::precision::nominal), kforge::error);
}

TEST(inputs, the_hidden_case_is_the_first_case_with_whole_rows_from_another) {
  const auto p = softmax(); // x: (512, 1024); cases standard, large_logits, sparse
  const auto mixed = eval::make_trial_inputs(p, eval::hidden_case, 42, eval::precision::nominal)[0].bytes;
  const auto base = eval::make_inputs(p, p.cases[0], 42, eval::precision::nominal)[0].bytes;
  const std::size_t row = 1024 * sizeof(float);
  int same = 0, replaced = 0;
  for (std::size_t r = 0; r < 512; ++r) {
    const bool equal = std::equal(mixed.begin() + r * row, mixed.begin() + (r + 1) * row, base.begin() + r * row);
    (equal ? same : replaced)++;
    if (!equal) // a replaced row differs in (almost) every element: it is another draw, not a patch
      EXPECT_GT(std::mismatch(mixed.begin() + r * row + row / 2, mixed.begin() + (r + 1) * row,
                              base.begin() + r * row + row / 2).first - (mixed.begin() + r * row + row / 2),
                -1);
  }
  EXPECT_GT(replaced, 16);  // about rows / 8, at random positions
  EXPECT_GT(same, 400);
  EXPECT_EQ(mixed, eval::make_trial_inputs(p, eval::hidden_case, 42, eval::precision::nominal)[0].bytes);
  EXPECT_NE(mixed, eval::make_trial_inputs(p, eval::hidden_case, 43, eval::precision::nominal)[0].bytes);
}
