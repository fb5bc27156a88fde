// The safetensors reader and writer: a round trip, 16-bit dtypes converted as
// torch does, and a clear refusal (file, tensor, reason) of every bad file.
#include "engine/checkpoint/safetensors.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "support/cli_runner.hpp"

namespace {

using engine::InputError;
using engine::SafetensorsFile;

// A file of one header and raw data bytes, as another writer might produce it.
std::string raw_file(const std::string& name, const std::string& header, const std::vector<unsigned char>& data,
                     std::uint64_t declared_length = 0) {
  const std::string path = testsupport::fresh_dir("safetensors-" + name) + "/model.safetensors";
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t length = declared_length ? declared_length : header.size();
  out.write(reinterpret_cast<const char*>(&length), 8);
  out << header;
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  return path;
}

// The InputError `make` throws; fails the test when it throws none.
template <class F>
InputError refusal(F make) {
  try {
    make();
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no InputError";
  return InputError("", "", "");
}

TEST(Safetensors, RoundTripKeepsNamesShapesValuesAndMetadata) {
  const std::string path = testsupport::fresh_dir("safetensors-roundtrip") + "/model.safetensors";
  engine::write_safetensors(path, {{"a.weight", {2, 3}, {1, 2, 3, 4, 5, 6}}, {"b", {4}, {-1.5f, 0, 1e-8f, 3e30f}}},
                            {{"format", "pt"}});
  const SafetensorsFile f(path);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.info("a.weight").shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(f.read("a.weight", {2, 3}), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(f.read("b", {4}), (std::vector<float>{-1.5f, 0, 1e-8f, 3e30f}));
  // Only the block asked for: rows 0-1, columns 1-2.
  EXPECT_EQ(f.read_block("a.weight", {2, 3}, 0, 2, 1, 2), (std::vector<float>{2, 3, 5, 6}));
  // The data section starts 8-byte aligned, as Hugging Face's writer keeps it.
  std::uint64_t header = 0;
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(&header), 8);
  EXPECT_EQ(header % 8, 0u);
}

TEST(Safetensors, ReadsBf16AndF16AsFloat) {
  // 1.0, -2.5 and 65504 (F16's largest) and a subnormal 2^-24; bf16 1.0 and -3.0.
  const std::vector<unsigned char> data = {0x00, 0x3c, 0x00, 0xc1, 0xff, 0x7b, 0x01, 0x00, 0x80, 0x3f, 0x40, 0xc0};
  const std::string path = raw_file("f16",
                                    R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},)"
                                    R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]}})",
                                    data);
  const SafetensorsFile f(path);
  EXPECT_EQ(f.read("h", {4}), (std::vector<float>{1.0f, -2.5f, 65504.0f, 0x1p-24f}));
  EXPECT_EQ(f.read("b", {2}), (std::vector<float>{1.0f, -3.0f}));
}

TEST(Safetensors, TruncatedFileIsRefusedWithItsName) {
  const std::string path = testsupport::fresh_dir("safetensors-short") + "/short.safetensors";
  std::ofstream(path) << "abc";
  const InputError e = refusal([&] { SafetensorsFile f(path); });
  EXPECT_EQ(e.file(), path);
  EXPECT_NE(e.reason().find("truncated"), std::string::npos) << e.what();
}

TEST(Safetensors, HeaderLongerThanTheFileIsRefused) {
  const std::string path = raw_file("long-header", "{}", {}, 4096);
  EXPECT_NE(refusal([&] { SafetensorsFile f(path); }).reason().find("header of 4096 bytes"), std::string::npos);
}

TEST(Safetensors, DataCutShortNamesTheTensorAndItsOffsets) {
  const std::string path = raw_file("cut", R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", {0, 0, 0, 0});
  const InputError e = refusal([&] { SafetensorsFile f(path); });
  EXPECT_EQ(e.json_path(), "/w/data_offsets");
  EXPECT_NE(e.reason().find("outside the 4 bytes"), std::string::npos) << e.what();
}

TEST(Safetensors, OffsetsThatDoNotMatchTheShapeAreRefused) {
  const std::string path =
      raw_file("mismatch", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::vector<unsigned char>(8));
  const InputError e = refusal([&] { SafetensorsFile f(path); });
  EXPECT_EQ(e.json_path(), "/w/data_offsets");
  EXPECT_NE(e.reason().find("do not hold shape [3]"), std::string::npos) << e.what();
}

TEST(Safetensors, UnsupportedDtypeIsRefused) {
  const std::string path =
      raw_file("dtype", R"({"w":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})", std::vector<unsigned char>(2));
  const InputError e = refusal([&] { SafetensorsFile f(path); });
  EXPECT_EQ(e.json_path(), "/w/dtype");
  EXPECT_NE(e.reason().find("I8"), std::string::npos);
}

TEST(Safetensors, MissingTensorAndWrongShapeNameTheTensor) {
  const std::string path = testsupport::fresh_dir("safetensors-shape") + "/model.safetensors";
  engine::write_safetensors(path, {{"w", {2, 2}, {1, 2, 3, 4}}});
  const SafetensorsFile f(path);
  const InputError missing = refusal([&] { f.read("lm_head.weight", {2, 2}); });
  EXPECT_EQ(missing.json_path(), "/lm_head.weight");
  EXPECT_EQ(missing.reason(), "missing tensor");
  const InputError shape = refusal([&] { f.read("w", {4, 1}); });
  EXPECT_EQ(shape.json_path(), "/w/shape");
  EXPECT_NE(shape.reason().find("is [2, 2], the config needs [4, 1]"), std::string::npos) << shape.what();
}

TEST(Safetensors, HeaderThatIsNotJsonIsRefused) {
  const std::string path = raw_file("notjson", "{\"w\": [", {});
  EXPECT_NE(refusal([&] { SafetensorsFile f(path); }).reason().find("not JSON"), std::string::npos);
}

}  // namespace

namespace {

// MLX writes no padding, so a U32 tensor can start at any offset; its bytes
// are reachable in place, and reading it as floats is refused.
TEST(Safetensors, UnpaddedRawTensorsKeepTheirBytesAndPackedOnesAreNotFloats) {
  const std::string path = testsupport::fresh_dir("safetensors-raw") + "/model.safetensors";
  const std::vector<unsigned char> words = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, half = {0x80, 0x3f};
  engine::write_safetensors(path, {{"q", "U32", {2}, words}, {"s", "BF16", {1}, half}}, {{"format", "mlx"}}, false);
  const SafetensorsFile f(path);
  const auto& q = f.info("q");
  EXPECT_EQ(std::vector<unsigned char>(f.bytes(q), f.bytes(q) + 8), words);
  EXPECT_EQ(f.read("s", {1}), std::vector<float>{1.0f});
  std::uint64_t header = 0;
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(&header), 8);
  EXPECT_EQ(f.file_offset(q), 8 + header + q.begin);
  EXPECT_EQ(refusal([&] { f.read("q", {2}); }).json_path(), "/q/dtype");
}

}  // namespace
