// Writes an ArrayRecord file, reads it back through a pipeline (global shuffle, parse, batch,
// read-ahead on 4 threads) and checks that every record arrives exactly once, shuffled, in
// full batches. Built against an installed libspelt (see CMakeLists.txt and the README).
// Usage: array_record_pipeline [path]   (default: array_record_pipeline.array_record in the
// current directory). Exit status 0 when every check passes.
#include <spelt/array_record.h>
#include <spelt/array_record_source.h>
#include <spelt/dataset.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr int kRecords = 1000;
constexpr int kBatch = 32;

void Write(const std::string& path) {
  spelt::ArrayRecordWriterOptions options;  // or ArrayRecordWriterOptions::FromString("...")
  options.group_size = 16;
  options.compression = spelt::ArrayRecordCompression::kZstd;
  auto writer = spelt::ArrayRecordWriter::Open(path, options);
  for (int i = 0; i < kRecords; ++i) writer->Write("record-" + std::to_string(i));
  writer->Close();
}

// b"record-<i>" -> i
spelt::Value Parse(spelt::Value record) {
  const std::string& bytes = record.as<spelt::String>().data;
  return spelt::Value(int64_t{std::stoll(bytes.substr(std::strlen("record-")))});
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "array_record_pipeline.array_record";
  Write(path);

  auto source = std::make_shared<spelt::ArrayRecordSource>(
      std::vector<std::string>{path}, spelt::ArrayRecordReaderOptions{}, "example");
  spelt::IterDataset ds = spelt::MapDataset::Source(source)
                              .Seed(42)
                              .Shuffle()
                              .Map(Parse)
                              .ToIter({.num_threads = 4})
                              .Batch(kBatch, /*drop_remainder=*/false);

  std::vector<int> seen(kRecords, 0);
  int batches = 0, in_order = 0, previous = -1;
  auto it = ds.MakeIterator();
  while (std::optional<spelt::Value> batch = it->Next()) {
    const spelt::Array& ids = batch->AsArray();  // int64[<= kBatch]
    const auto* v = reinterpret_cast<const int64_t*>(ids.data);
    for (int64_t j = 0; j < ids.num_elements(); ++j) {
      ++seen[static_cast<size_t>(v[j])];
      in_order += v[j] == previous + 1;
      previous = static_cast<int>(v[j]);
    }
    ++batches;
  }
  int once = 0;
  for (int count : seen) once += count == 1;
  const bool ok = once == kRecords && batches == (kRecords + kBatch - 1) / kBatch &&
                  in_order < kRecords / 10;
  std::printf("%d records in %d batches, each record once: %s, shuffled: %s; state %s\n",
              kRecords, batches, once == kRecords ? "yes" : "NO",
              in_order < kRecords / 10 ? "yes" : "NO", it->GetState().dump().c_str());
  std::remove(path.c_str());
  return ok ? 0 : 1;
}
