// A whole Spelt pipeline from C++, no Python: a C++ source of records, global shuffle,
// a random augmentation, a filter and batching, read ahead on 4 threads; it checkpoints
// half-way, resumes in a fresh iterator from the JSON state, and checks that the resumed
// run yields exactly the batches of an uninterrupted run.
#include <cstdio>
#include <cstring>
#include <vector>

#include "spelt/dataset.h"
#include "spelt/source.h"

namespace {

// Record i: {"features": float32[4] = i, i+1, i+2, i+3, "label": i % 10}.
std::shared_ptr<spelt::InMemorySource> MakeSource(int n) {
  std::vector<spelt::Value> records;
  for (int i = 0; i < n; ++i) {
    spelt::Array features = spelt::Array::Allocate(spelt::DType::kFloat32, {4});
    auto* f = reinterpret_cast<float*>(features.mutable_data());
    for (int j = 0; j < 4; ++j) f[j] = static_cast<float>(i + j);
    records.push_back(spelt::Value::Dict({{"features", features}, {"label", int64_t{i % 10}}}));
  }
  return std::make_shared<spelt::InMemorySource>(std::move(records), "ExampleSource");
}

spelt::Value AddNoise(spelt::Value record, spelt::Philox& rng) {
  const spelt::Array& in = record["features"].AsArray();
  spelt::Array out = spelt::Array::Allocate(in.dtype, in.shape);
  const auto* src = reinterpret_cast<const float*>(in.data);
  auto* dst = reinterpret_cast<float*>(out.mutable_data());
  for (int j = 0; j < 4; ++j) dst[j] = src[j] + static_cast<float>(rng.NextDouble() - 0.5);
  return spelt::Value::Dict({{"features", out}, {"label", record["label"]}});
}

spelt::IterDataset MakePipeline() {
  return spelt::MapDataset::Source(MakeSource(1000))
      .Seed(42)
      .Shuffle()
      .RandomMap(AddNoise)
      .Filter([](const spelt::Value& r) { return r["label"].AsInt() != 3; })
      .ToIter({.num_threads = 4, .prefetch_buffer_size = 64})
      .Batch(32, /*drop_remainder=*/true);
}

std::vector<spelt::Value> Drain(spelt::DatasetIterator& it) {
  std::vector<spelt::Value> out;
  while (std::optional<spelt::Value> batch = it.Next()) out.push_back(std::move(*batch));
  return out;
}

}  // namespace

int main() {
  spelt::IterDataset ds = MakePipeline();

  auto full_it = ds.MakeIterator();
  std::vector<spelt::Value> full = Drain(*full_it);

  auto it = ds.MakeIterator();
  std::vector<spelt::Value> seen;
  for (size_t i = 0; i < full.size() / 2; ++i) seen.push_back(*it->Next());
  std::string state = it->GetState().dump();
  std::printf("checkpoint after %zu batches: %s\n", seen.size(), state.c_str());
  it.reset();  // "preempted"

  auto resumed = MakePipeline().MakeIterator();
  resumed->SetState(spelt::State::parse(state));
  for (spelt::Value& b : Drain(*resumed)) seen.push_back(std::move(b));

  const bool same = seen == full;
  const spelt::Value& first = full.front();
  std::printf("%zu batches of %s; resumed run identical to uninterrupted run: %s\n", full.size(),
              first.Describe().c_str(), same ? "yes" : "NO");
  return same ? 0 : 1;
}
