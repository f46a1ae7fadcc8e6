// Tests for batched reads: MapNode::GetMany of every MapDataset op and RandomAccessSource::
// GetMany of the native sources. GetMany must return what Get() returns index by index (later
// epochs, repeats and any order included), and on an error append exactly the elements before
// the failing index and throw the exception Get() throws there. The engine's read path must
// call the source's GetMany, never its Get.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "ops/shard.h"
#include "spelt/array_record.h"
#include "spelt/array_record_source.h"
#include "spelt/dataset.h"
#include "spelt/errors.h"
#include "spelt/sampler.h"
#include "spelt/source.h"
#include "spelt/value.h"

namespace spelt {
namespace {

using Elements = std::vector<std::optional<Value>>;
using Indices = std::vector<int64_t>;

class BadRecord : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Records i * 10 (int64); keys in `bad` throw BadRecord. Counts calls of Get and GetMany.
class CountingSource final : public RandomAccessSource {
 public:
  explicit CountingSource(int64_t length, std::set<int64_t> bad = {})
      : length_(length), bad_(std::move(bad)) {}
  int64_t Length() const override { return length_; }
  Value Get(int64_t index) const override {
    ++gets;
    return Read(index);
  }
  void GetMany(std::span<const int64_t> indices, std::vector<Value>* out) const override {
    ++get_manys;
    for (const int64_t i : indices) out->push_back(Read(i));
  }
  std::string Repr() const override { return "CountingSource"; }

  mutable std::atomic<int> gets{0}, get_manys{0};

 private:
  Value Read(int64_t index) const {
    if (index < 0 || index >= length_) throw std::out_of_range("key " + std::to_string(index));
    if (bad_.count(index)) throw BadRecord("bad record " + std::to_string(index));
    return Value(index * 10);
  }
  int64_t length_;
  std::set<int64_t> bad_;
};

// Throws std::domain_error for the element equal to 50 (record 5); used by the function ops.
int64_t FailAt50(const Value& v) {
  if (v.AsInt() == 50) throw std::domain_error("function failed on 50");
  return v.AsInt();
}

using Pipeline = std::function<MapDataset(const MapDataset&)>;

// Every MapDataset op over `src` (a source of at least 2 records), alone and combined.
std::vector<std::pair<std::string, Pipeline>> Pipelines() {
  return {
      {"source", [](const MapDataset& s) { return s; }},
      {"seed", [](const MapDataset& s) { return s.Seed(3); }},
      {"shuffle", [](const MapDataset& s) { return s.Shuffle(7); }},
      {"slice", [](const MapDataset& s) { return s.Slice(1, std::nullopt, 3); }},
      {"slice_negative_step",
       [](const MapDataset& s) { return s.Slice(std::nullopt, std::nullopt, -2); }},
      {"repeat", [](const MapDataset& s) { return s.Shuffle(1).Repeat(3); }},
      {"repeat_same_epochs", [](const MapDataset& s) { return s.Shuffle(1).Repeat(3, false); }},
      {"repeat_forever", [](const MapDataset& s) { return s.Repeat(); }},
      {"map",
       [](const MapDataset& s) { return s.Map([](Value v) { return Value(v.AsInt() + 1); }); }},
      {"map_to_none",  // None filters the element out
       [](const MapDataset& s) {
         return s.Map([](Value v) { return v.AsInt() % 30 == 0 ? Value() : v; });
       }},
      {"map_throws",
       [](const MapDataset& s) { return s.Map([](Value v) { return Value(FailAt50(v)); }); }},
      {"random_map",
       [](const MapDataset& s) {
         return s.RandomMap(
             [](Value v, Philox& rng) {
               return Value(v.AsInt() * 1000 + static_cast<int64_t>(rng.NextUint64() % 1000));
             },
             5);
       }},
      {"map_with_index",
       [](const MapDataset& s) {
         return s.MapWithIndex([](int64_t i, Value v) { return Value(i * 100000 + v.AsInt()); });
       }},
      {"filter",
       [](const MapDataset& s) {
         return s.Filter([](const Value& v) { return v.AsInt() % 20 == 0; });
       }},
      {"filter_throws",
       [](const MapDataset& s) {
         return s.Filter([](const Value& v) { return FailAt50(v) >= 0; });
       }},
      {"batch", [](const MapDataset& s) { return s.Batch(4); }},
      {"batch_drop_remainder", [](const MapDataset& s) { return s.Shuffle(2).Batch(3, true); }},
      {"batch_of_batches", [](const MapDataset& s) { return s.Batch(2).Batch(3); }},
      {"batch_fn_throws",
       [](const MapDataset& s) {
         return s.Batch(3, false, [](std::vector<Value> items) {
           for (const Value& v : items) FailAt50(v);
           return Value(static_cast<int64_t>(items.size()));
         });
       }},
      {"concatenate",
       [](const MapDataset& s) {
         return MapDataset::Concatenate(
             {s, s.Slice(0, 0), MapDataset::Range(100, 105), s.Shuffle(4)});
       }},
      {"mix",
       [](const MapDataset& s) {
         return MapDataset::Mix({s, MapDataset::Range(100, 107)}, {{1.0, 2.5}});
       }},
      {"mix_uniform", [](const MapDataset& s) { return MapDataset::Mix({s.Shuffle(3), s}); }},
      {"shard",
       [](const MapDataset& s) {
         return MapDataset(internal::MakeShardNode(s.Shuffle(4).node(), ShardOptions{1, 3, false}));
       }},
      {"deep",
       [](const MapDataset& s) {
         return s.Seed(9).Shuffle().Map([](Value v) { return Value(v.AsInt() + 7); })
             .Slice(1, std::nullopt, 2).Repeat(2).Batch(3);
       }},
  };
}

// Indices of three epochs in order, then the same in a scrambled order with repeats.
Indices TestIndices(int64_t length) {
  const int64_t n = length == kInfiniteLength ? 30 : 3 * length;
  Indices out;
  for (int64_t i = 0; i < n; ++i) out.push_back(i);
  for (int64_t i = 0; i < n; ++i) out.push_back((i * 7 + 3) % std::max<int64_t>(n, 1));
  out.push_back(0);
  return out;
}

// What Get() gives index by index: the elements up to the first exception, and that exception.
std::pair<Elements, std::exception_ptr> GetOneByOne(const MapDataset& ds, const Indices& indices) {
  Elements out;
  try {
    for (const int64_t i : indices) out.push_back(ds.Get(i));
  } catch (...) {
    return {std::move(out), std::current_exception()};
  }
  return {std::move(out), nullptr};
}

// The type name and message of an exception.
std::string Describe(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return std::string(typeid(x).name()) + ": " + x.what();
  }
}

// GetMany(indices) appended after a marker element equals Get() index by index, error included.
void ExpectGetManyLikeGet(const MapDataset& ds, const Indices& indices, const std::string& what) {
  const auto [expected, expected_error] = GetOneByOne(ds, indices);
  Elements got{Value::Text("marker")};
  std::exception_ptr error;
  try {
    ds.node()->GetMany(indices, &got);
  } catch (...) {
    error = std::current_exception();
  }
  ASSERT_FALSE(got.empty()) << what;
  EXPECT_EQ(got.front(), Value::Text("marker")) << what;
  got.erase(got.begin());
  EXPECT_EQ(got.size(), expected.size()) << what;
  EXPECT_TRUE(got == expected) << what;
  ASSERT_EQ(error != nullptr, expected_error != nullptr) << what;
  if (error) EXPECT_EQ(Describe(error), Describe(expected_error)) << what;
}

TEST(GetManyTest, EveryOpEqualsGetPerIndexAcrossEpochs) {
  const MapDataset src = MapDataset::Source(std::make_shared<CountingSource>(10));
  for (const auto& [name, make] : Pipelines()) {
    const MapDataset ds = make(src);
    ExpectGetManyLikeGet(ds, TestIndices(ds.Length()), name);
  }
}

TEST(GetManyTest, ErrorsKeepTheExactPrefix) {
  for (const std::set<int64_t>& bad : {std::set<int64_t>{0}, {4}, {3, 8}, {9}}) {
    const MapDataset src = MapDataset::Source(std::make_shared<CountingSource>(10, bad));
    for (const auto& [name, make] : Pipelines()) {
      const MapDataset ds = make(src);
      const Indices all = TestIndices(ds.Length());
      const std::string what = name + ", bad record " + std::to_string(*bad.begin());
      ExpectGetManyLikeGet(ds, all, what);
      // Chunks that start at every offset, as executors ask for them.
      for (size_t begin = 0; begin < 8 && begin < all.size(); ++begin) {
        ExpectGetManyLikeGet(ds, Indices(all.begin() + static_cast<ptrdiff_t>(begin), all.end()),
                             what + ", from " + std::to_string(begin));
      }
    }
  }
}

TEST(GetManyTest, EmptyDatasetsThrowAsGetDoes) {
  const MapDataset src = MapDataset::Source(std::make_shared<CountingSource>(0));
  for (const auto& [name, make] : Pipelines()) {
    if (name == "mix" || name == "mix_uniform") continue;  // mixing empty datasets is refused
    const MapDataset ds = make(src);
    ExpectGetManyLikeGet(ds, {0, 1, 2}, name + " of an empty source");
  }
}

TEST(GetManyTest, EmptyIndexListAppendsNothing) {
  const MapDataset src = MapDataset::Source(std::make_shared<CountingSource>(10));
  for (const auto& [name, make] : Pipelines()) {
    ExpectGetManyLikeGet(make(src), {}, name);
  }
}

TEST(GetManyTest, ChainedFunctionsRunBackToBackPerElement) {
  // As with Get(): all functions of one element, then the next element (the DataLoader's
  // RandomMaps share a generator per record and rely on this order).
  std::vector<std::string> calls;
  auto logged = [&calls](std::string name) {
    return [&calls, name](int64_t i, Value v) {
      calls.push_back(name + std::to_string(i));
      return v;
    };
  };
  const MapDataset ds = MapDataset::Range(10)
                             .MapWithIndex(logged("a"))
                             .Filter([&calls](const Value& v) {
                               calls.push_back("f" + std::to_string(v.AsInt()));
                               return v.AsInt() != 2;
                             })
                             .MapWithIndex(logged("b"));
  Elements out;
  ds.node()->GetMany(Indices{1, 2, 3}, &out);
  EXPECT_EQ(calls, (std::vector<std::string>{"a1", "f1", "b1", "a2", "f2", "a3", "f3", "b3"}));
  EXPECT_EQ(out, (Elements{Value(1), std::nullopt, Value(3)}));
}

TEST(GetManyTest, EnginePathReadsTheSourceInBatches) {
  for (const int64_t threads : {0, 4}) {
    auto source = std::make_shared<CountingSource>(1000);
    const MapDataset ds = MapDataset::Source(source).Shuffle(1).Batch(16);
    auto it = ds.ToIter({.num_threads = threads, .prefetch_buffer_size = 64}).MakeIterator();
    int64_t batches = 0;
    while (it->Next()) ++batches;
    EXPECT_EQ(batches, 63);
    EXPECT_EQ(source->gets.load(), 0) << threads << " threads";
    // Chunks of several batches each: far fewer reads than batches.
    EXPECT_GT(source->get_manys.load(), 0);
    EXPECT_LT(source->get_manys.load(), 30) << threads << " threads";
  }
}

// ---------------------------------------------------------------------------------------------
// Native sources.

// GetMany(indices) appended after a marker record equals Get() one by one, error included.
void ExpectSourceGetManyLikeGet(const RandomAccessSource& source, const Indices& indices) {
  std::vector<Value> expected;
  std::exception_ptr expected_error;
  try {
    for (const int64_t i : indices) expected.push_back(source.Get(i));
  } catch (...) {
    expected_error = std::current_exception();
  }
  std::vector<Value> got{Value::Text("marker")};
  std::exception_ptr error;
  try {
    source.GetMany(indices, &got);
  } catch (...) {
    error = std::current_exception();
  }
  ASSERT_FALSE(got.empty());
  got.erase(got.begin());
  EXPECT_TRUE(got == expected) << source.Repr();
  ASSERT_EQ(error != nullptr, expected_error != nullptr) << source.Repr();
  if (error) EXPECT_EQ(Describe(error), Describe(expected_error));
}

TEST(SourceGetManyTest, RangeAndInMemorySources) {
  const RangeSource range(5, -20, -3);
  InMemorySource memory({Value(1), Value::Text("two"), Value(), Value(4.5)});
  for (const RandomAccessSource* source : {static_cast<const RandomAccessSource*>(&range),
                                           static_cast<const RandomAccessSource*>(&memory)}) {
    ExpectSourceGetManyLikeGet(*source, {3, 0, 1, 1, 2});
    ExpectSourceGetManyLikeGet(*source, {1, 0, 99, 2});  // out of range in the middle
    ExpectSourceGetManyLikeGet(*source, {-1});
  }
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "spelt_get_many_" + std::to_string(::getpid()) + "_" + name;
}

// Records "record <i> ..." padded to a few hundred distinct bytes, written to `path`.
std::vector<std::string> WriteRecords(const std::string& path, int n, const std::string& options) {
  std::vector<std::string> records;
  auto writer = ArrayRecordWriter::Open(path, ArrayRecordWriterOptions::FromString(options));
  for (int i = 0; i < n; ++i) {
    records.push_back("record " + std::to_string(i) + " " + std::string(200 + i, 'a' + i % 26));
    writer->Write(records.back());
  }
  writer->Close();
  return records;
}

TEST(SourceGetManyTest, ArrayRecordEqualsGetAndNamesTheBadRecord) {
  const std::string a = TempPath("a"), b = TempPath("b");
  WriteRecords(a, 20, "group_size:1,uncompressed");
  const std::vector<std::string> b_records = WriteRecords(b, 30, "group_size:1,uncompressed");
  {
    const ArrayRecordSource source({a, b}, {}, "Both");
    ExpectSourceGetManyLikeGet(source, {49, 0, 20, 19, 5, 5, 33});
    ExpectSourceGetManyLikeGet(source, {3, 21, 50, 4});  // out of range in the middle
  }
  // Corrupt record 7 of file b (key 27): data-hash checks catch it.
  std::fstream file(b, std::ios::binary | std::ios::in | std::ios::out);
  const std::string bytes((std::istreambuf_iterator<char>(file)), {});
  const size_t offset = bytes.find(b_records[7]);
  ASSERT_NE(offset, std::string::npos);
  file.seekp(static_cast<std::streamoff>(offset + 10));
  file.put('#');
  file.close();
  const ArrayRecordSource source({a, b}, {}, "Both");
  ExpectSourceGetManyLikeGet(source, {1, 26, 2, 27, 28, 3});
  std::vector<Value> got;
  try {
    source.GetMany(Indices{40, 27, 1}, &got);
    ADD_FAILURE() << "no error";
  } catch (const CorruptFileError& e) {
    EXPECT_NE(std::string(e.what()).find("record key 27 of Both"), std::string::npos) << e.what();
    EXPECT_EQ(e.path(), b);
  }
  EXPECT_EQ(got.size(), 1u);
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

}  // namespace
}  // namespace spelt
