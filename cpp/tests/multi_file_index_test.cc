// MultiFileIndex (spelt/multi_file_index.h): the key space of the file sources.
#include "spelt/multi_file_index.h"

#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

namespace spelt {
namespace {

TEST(MultiFileIndexTest, KeysRunThroughTheFilesInOrder) {
  MultiFileIndex index;
  index.AddFile(3);
  index.AddFile(0);  // an empty file holds no key
  index.AddFile(2);
  EXPECT_EQ(index.NumRecords(), 5);
  EXPECT_EQ(index.NumFiles(), 3u);
  EXPECT_EQ(index.Start(2), 3);
  EXPECT_EQ(index.End(0), 3);
  EXPECT_EQ(index.End(1), 3);
  EXPECT_EQ(index.End(2), 5);
  const int expected[][2] = {{0, 0}, {0, 1}, {0, 2}, {2, 0}, {2, 1}};
  for (int64_t key = 0; key < 5; ++key) {
    const MultiFileIndex::Position p = index.Locate(key, "Source");
    EXPECT_EQ(p.file, static_cast<size_t>(expected[key][0])) << key;
    EXPECT_EQ(p.record, expected[key][1]) << key;
  }
}

TEST(MultiFileIndexTest, AKeyOutsideThrowsNamingTheSource) {
  MultiFileIndex index;
  index.AddFile(2);
  auto message = [&](int64_t key, const char* name) {
    try {
      index.Locate(key, "TFRecordSource", name);
    } catch (const std::out_of_range& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(2, ""), "TFRecordSource: record key 2 out of range [0, 2)");
  EXPECT_EQ(message(-1, "a.tfrecord"),
            "TFRecordSource: record key -1 out of range [0, 2) of a.tfrecord");
}

}  // namespace
}  // namespace spelt
