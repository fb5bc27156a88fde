// What a message costs on the wire: whole frames over RDMA's fixed stride,
// its own bytes and each frame's headers on a byte stream (TCP).
#include <gtest/gtest.h>

#include "engine/cards/catalog.hpp"

namespace {

engine::LinkCard card(double frame_bytes, double frame_header_bytes) {
  engine::LinkCard c;
  c.frame_bytes = frame_bytes;
  c.frame_header_bytes = frame_header_bytes;
  return c;
}

TEST(WireBytes, AnRdmaMessageTakesWholeFrames) {
  EXPECT_DOUBLE_EQ(engine::wire_bytes(card(4096, 0), 240), 4096);
  EXPECT_DOUBLE_EQ(engine::wire_bytes(card(4096, 0), 5000), 8192);
  EXPECT_DOUBLE_EQ(engine::wire_bytes(card(4096, 0), 0), 4096);
}

// In goodput terms (a card's bandwidth): a full frame costs its payload, a
// 240-byte message 240 + 66 raw bytes, 1448 of each 1514 being goodput.
TEST(WireBytes, OnAByteStreamAMessageTakesItsBytesAndItsFramesHeaders) {
  const engine::LinkCard tcp = card(1448, 66);
  EXPECT_DOUBLE_EQ(engine::wire_bytes(tcp, 10 * 1448), 10 * 1448);
  EXPECT_DOUBLE_EQ(engine::wire_bytes(tcp, 240), (240 + 66) * 1448.0 / 1514);
  EXPECT_DOUBLE_EQ(engine::wire_bytes(tcp, 1449), (1449 + 2 * 66) * 1448.0 / 1514);
}

}  // namespace
