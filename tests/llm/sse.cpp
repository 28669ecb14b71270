#include "llm/sse.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using namespace kforge::llm;

namespace {

std::vector<sse_event> parse_in_pieces(std::string_view text, const std::vector<std::size_t>& cuts) {
  std::vector<sse_event> out;
  sse_parser p;
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    p.feed(text.substr(from, cut - from), [&](const sse_event& e) { out.push_back(e); });
    from = cut;
  }
  p.feed(text.substr(from), [&](const sse_event& e) { out.push_back(e); });
  return out;
}

// Anthropic-style stream with every awkward feature: comments, \r\n and \r line ends,
// multi-line data, a field without a space, an event with no data.
constexpr std::string_view k_stream =
    ": OPENROUTER PROCESSING\r\n\r\n"
    "event: message_start\r\ndata: {\"type\":\"message_start\"}\r\n\r\n"
    "event: ping\rdata:{\"type\": \"ping\"}\r\r"
    "data: line one\ndata: line two\n\n"
    "event: lonely\n\n"
    "id: 7\ndata: [DONE]\n\n"
    "data: never finished";

void expect_standard(const std::vector<sse_event>& ev) {
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].event, "message_start");
  EXPECT_EQ(ev[0].data, "{\"type\":\"message_start\"}");
  EXPECT_EQ(ev[1].event, "ping");
  EXPECT_EQ(ev[1].data, "{\"type\": \"ping\"}");
  EXPECT_EQ(ev[2].event, "");
  EXPECT_EQ(ev[2].data, "line one\nline two");
  EXPECT_EQ(ev[3].data, "[DONE]");
  EXPECT_EQ(ev[3].id, "7");
}

} // namespace

TEST(sse, whole_stream) { expect_standard(parse_in_pieces(k_stream, {})); }

TEST(sse, every_single_split_point) {
  for (std::size_t cut = 0; cut <= k_stream.size(); ++cut) {
    SCOPED_TRACE(cut);
    expect_standard(parse_in_pieces(k_stream, {cut}));
  }
}

TEST(sse, byte_by_byte_and_random_splits) {
  std::vector<std::size_t> every;
  for (std::size_t i = 1; i < k_stream.size(); ++i) every.push_back(i);
  expect_standard(parse_in_pieces(k_stream, every));
  std::mt19937 rng(42);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<std::size_t> cuts;
    for (std::size_t i = 1; i < k_stream.size(); ++i)
      if (rng() % 5 == 0) cuts.push_back(i);
    expect_standard(parse_in_pieces(k_stream, cuts));
  }
}

TEST(sse, crlf_split_across_chunks_ends_one_line) {
  // "data: a\r" | "\n\r\n": the \n after \r belongs to the same line end; then a blank line.
  auto ev = parse_in_pieces("data: a\r\n\r\n", {8});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "a");
}

TEST(sse, empty_data_line_is_an_event) {
  auto ev = parse_in_pieces("data\n\ndata:\ndata:\n\n", {});
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].data, "");
  EXPECT_EQ(ev[1].data, "\n");
}
