// spelt.vision's native path (spelt/image_ops.h) in spelt._core: ImageOp objects made from the
// Python transforms (their _spelt_image_op methods in python/spelt/vision/), and the
// MapDataset / IterDataset methods that run a chain of them on the engine's threads without
// the GIL:
//   image_op(kind, field, ..., reference, decode, resize) -> ImageOp
//   MapDataset.image_map(ops) / image_random_map(ops, words) / image_record_map(ops, sampler)
//   IterDataset.image_map(ops) / image_random_map(ops, words)
// The Python callables an ImageOp holds are its fallbacks (spelt/image_ops.h), called with the
// GIL taken only for what the kernels do not take.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings.h"
#include "gil.h"
#include "py_value.h"
#include "spelt/dataset.h"
#include "spelt/errors.h"
#include "spelt/image_ops.h"
#include "spelt/sampler.h"

using namespace nanobind::literals;

namespace spelt::python {
namespace {

using vision::ImageOp;
using vision::ImageOpFallbacks;

// One transform and its Python fallbacks.
struct PyImageOp {
  ImageOp op;
  ImageOpFallbacks fallbacks;
};

// A chain: the ops and their fallbacks side by side, as ApplyImageOps takes them.
struct Chain {
  std::vector<ImageOp> ops;
  std::vector<ImageOpFallbacks> fallbacks;
  bool random = false;

  // The chain on one element. A Python exception (what a fallback raised: the reference's
  // error for a corrupt image, say) gets a note (PEP 678) "spelt: raised by the image ops
  // <names> on <where>", as a source's read errors name their record (py_adapters.cc).
  // `where` is an element's description, called only on error; `rng` as ApplyImageOps'.
  template <typename Where>
  Value operator()(const Value& element, Philox* rng, const Where& where) const {
    return Noted([&] { return vision::ApplyImageOps(ops, fallbacks, element, rng); }, where);
  }

  // The chain on one element, written into `slot` (ApplyImageOpsInto); errors as operator().
  template <typename Where>
  bool Write(const Value& element, Philox* rng, const Array& slot, const Where& where) const {
    return Noted([&] { return vision::ApplyImageOpsInto(ops, fallbacks, element, rng, slot); },
                 where);
  }

  // Whether every op is a flip (its MapInto then works in place).
  bool FlipsOnly() const {
    return std::ranges::all_of(
        ops, [](const ImageOp& op) { return op.kind == ImageOp::Kind::kRandomHorizontalFlip; });
  }

 private:
  template <typename F, typename Where>
  auto Noted(F f, const Where& where) const {
    try {
      return f();
    } catch (nb::python_error& e) {
      std::string names;
      for (const ImageOp& op : ops) names += (names.empty() ? "" : ", ") + std::string(op.name());
      GilAcquire gil;
      nb::handle value = e.value();
      const std::string note = "spelt: raised by the image ops " + names + " on " + where();
      if (nb::hasattr(value, "add_note")) value.attr("add_note")(note);
      throw;
    }
  }
};

// Where a dataset's image map is applied: element `index` of the dataset it maps (a
// MapDataset's index, a position in an IterDataset's stream).
auto ElementAt(int64_t index, bool map_dataset) {
  return [=] {
    return "element " + std::to_string(index) + (map_dataset ? " of the MapDataset it maps"
                                                             : " of the IterDataset it maps");
  };
}

Chain ChainOf(const std::vector<const PyImageOp*>& ops) {
  if (ops.empty()) throw std::invalid_argument("image ops: an empty chain");
  Chain chain;
  for (const PyImageOp* op : ops) {
    chain.ops.push_back(op->op);
    chain.fallbacks.push_back(op->fallbacks);
    chain.random = chain.random || op->op.random();
  }
  return chain;
}

// The kind whose ImageOp::name() is `kind` (the Python class name).
ImageOp::Kind KindOf(const std::string& kind) {
  for (int k = 0; k <= static_cast<int>(ImageOp::Kind::kNormalize); ++k) {
    ImageOp op;
    op.kind = static_cast<ImageOp::Kind>(k);
    if (op.name() == kind) return op.kind;
  }
  throw std::invalid_argument("image_op: unknown kind '" + kind + "'");
}

// The fallbacks over Python callables (None: no fallback). Each takes the GIL.
ImageOpFallbacks FallbacksOf(nb::object reference, nb::object decode, nb::object resize) {
  ImageOpFallbacks f;
  if (!reference.is_none()) {
    f.op = [ref = MakePyRef(reference)](const Value& leaf) {
      GilAcquire gil;
      return ToValue(nb::handle(ref.get())(ToPython(leaf)));
    };
  }
  if (!decode.is_none()) {
    // None from it (DecodeImage(on_error="skip")'s decoder) means undecodable bytes.
    f.decode = [ref = MakePyRef(decode)](std::span<const uint8_t> data) {
      GilAcquire gil;
      nb::bytes bytes(reinterpret_cast<const char*>(data.data()), data.size());
      nb::object image = nb::handle(ref.get())(bytes);
      if (image.is_none()) {
        throw CorruptImageError("image", data.size(), "the reference decoder refused it");
      }
      return ToValue(image).AsArray();
    };
  }
  if (!resize.is_none()) {
    f.resize = [ref = MakePyRef(resize)](const Array& image, int height, int width) {
      GilAcquire gil;
      return ToValue(nb::handle(ref.get())(ToPython(Value(image)), height, width)).AsArray();
    };
  }
  return f;
}

// An error's note names the element where the index is known: a random map's index is its
// Philox counter's last word at the start (Grain's per-element stream, counter [0, 0, 0,
// index]: spelt/dataset.h); a MapDataset's plain map is an engine MapWithIndex node for the
// index (str() and the execution summary still show the Python op, a MapMapDataset as
// Grain's); an IterDataset's plain map is given none (a MapWithIndex there would add a counter
// to its state).
template <typename D>
void BindImageMaps(nb::handle cls) {
  constexpr bool kMap = std::is_same_v<D, MapDataset>;
  nb::setattr(cls, "image_map", nb::cpp_function([](const D& d, std::vector<const PyImageOp*> ops) {
    Chain chain = ChainOf(ops);
    if (chain.random) throw std::invalid_argument("image_map: a random op needs image_random_map");
    if constexpr (kMap) {
      MapInto into{[chain](int64_t index, const Value& v, Philox*, const Array& slot) {
                     return chain.Write(v, nullptr, slot, ElementAt(index, true));
                   },
                   chain.FlipsOnly()};
      MapWithIndexFn fn = [chain = std::move(chain)](int64_t index, Value v) {
        return chain(v, nullptr, ElementAt(index, /*map_dataset=*/true));
      };
      return d.MapWithIndex(std::move(fn), /*calls_python=*/false, std::move(into));
    } else {
      MapFn fn = [chain = std::move(chain)](Value v) {
        return chain(v, nullptr, [] { return std::string("an element of the IterDataset"); });
      };
      return d.Map(std::move(fn));
    }
  }, nb::scope(cls), nb::name("image_map"), nb::is_method(), "ops"_a,
     "Map by native image ops (spelt/image_ops.h), called concurrently without the GIL."));
  nb::setattr(cls, "image_random_map", nb::cpp_function(
      [](const D& d, std::vector<const PyImageOp*> ops, std::vector<uint32_t> words) {
    Chain chain = ChainOf(ops);
    MapInto into{[chain](int64_t index, const Value& v, Philox* rng, const Array& slot) {
                   return chain.Write(v, rng, slot, ElementAt(index, true));
                 },
                 chain.FlipsOnly()};
    RandomMapFn fn = [chain = std::move(chain)](Value v, Philox& rng) {
      const auto index = static_cast<int64_t>(rng.counter()[3]);
      return chain(v, &rng, ElementAt(index, kMap));
    };
    if constexpr (kMap) {
      return d.RandomMap(std::move(fn), AnySeed(std::move(words)), false, std::move(into));
    } else {
      return d.RandomMap(std::move(fn), AnySeed(std::move(words)));
    }
  }, nb::scope(cls), nb::name("image_random_map"), nb::is_method(), "ops"_a, "words"_a,
     "random_map by native image ops, drawing from random_map's Philox stream."));
}

}  // namespace

void RegisterVision(nb::module_& m) {
  nb::class_<PyImageOp>(m, "ImageOp", "One spelt.vision transform for the native path.")
      .def_prop_ro("name", [](const PyImageOp& o) { return std::string(o.op.name()); })
      .def_prop_ro("random", [](const PyImageOp& o) { return o.op.random(); });

  m.def("image_op", [](const std::string& kind, std::optional<std::string> field, int height,
                       int width, int shorter_side, bool nearest, std::pair<double, double> scale,
                       std::pair<double, double> ratio, double p, std::vector<float> mean,
                       std::vector<float> std, bool per_channel, bool chw, bool bfloat16,
                       bool defer_decode, bool exif_orientation, bool skip_corrupt,
                       nb::object reference,
                       nb::object decode, nb::object resize) {
    PyImageOp o;
    o.op.kind = KindOf(kind);
    o.op.field = std::move(field);
    o.op.height = height;
    o.op.width = width;
    o.op.shorter_side = shorter_side;
    o.op.nearest = nearest;
    o.op.scale = scale;
    o.op.ratio = ratio;
    o.op.p = p;
    o.op.mean = std::move(mean);
    o.op.std = std::move(std);
    o.op.per_channel = per_channel;
    o.op.chw = chw;
    o.op.bfloat16 = bfloat16;
    o.op.defer_decode = defer_decode;
    o.op.exif_orientation = exif_orientation;
    o.op.skip_corrupt = skip_corrupt;
    if (o.op.kind == ImageOp::Kind::kNormalize && (o.op.mean.empty() || o.op.std.empty())) {
      throw std::invalid_argument("image_op: Normalize needs mean and std");
    }
    o.fallbacks = FallbacksOf(std::move(reference), std::move(decode), std::move(resize));
    return o;
  }, "kind"_a, "field"_a.none(), "height"_a = 0, "width"_a = 0, "shorter_side"_a = 0,
     "nearest"_a = false,
     "scale"_a = std::pair(0.08, 1.0), "ratio"_a = std::pair(3.0 / 4.0, 4.0 / 3.0),
     "p"_a = 0.5, "mean"_a = std::vector<float>{}, "std"_a = std::vector<float>{},
     "per_channel"_a = false, "chw"_a = false, "bfloat16"_a = false, "defer_decode"_a = false,
     "exif_orientation"_a = false, "skip_corrupt"_a = false, "reference"_a.none() = nb::none(),
     "decode"_a.none() = nb::none(),
     "resize"_a.none() = nb::none(),
     "An ImageOp (spelt/image_ops.h); reference(leaf), decode(bytes) and resize(image, h, w) "
     "are the Python fallbacks.");

  BindImageMaps<MapDataset>(nb::type<MapDataset>());
  BindImageMaps<IterDataset>(nb::type<IterDataset>());

  // A DataLoader's per-record operations when all are image ops: element k of this shard is
  // record g = shard.global_index(k), and the chain's random ops share the record's generator,
  // numpy's Generator(Philox(key=sampler.rng_key(g))) (Grain's metadata.rng).
  nb::handle map_dataset = nb::type<MapDataset>();
  nb::setattr(map_dataset, "image_record_map", nb::cpp_function(
      [](const MapDataset& d, std::vector<const PyImageOp*> ops,
         std::shared_ptr<const Sampler> sampler, const ShardOptions& shard) {
    Chain chain = ChainOf(ops);
    sampler = OwnedByPyRef(std::move(sampler));
    // Calls f(the record's generator or nullptr, the record's description) for element
    // `local`.
    auto with_record = [random = chain.random, sampler, shard](int64_t local, auto f) {
      const int64_t g = shard.GlobalIndex(local);
      const auto where = [&] {
        return "record " + std::to_string(sampler->RecordKey(g)) +
               " of the data source (the sampler's index " + std::to_string(g) + ")";
      };
      if (!random) return f(nullptr, where);
      const std::optional<uint64_t> key = sampler->RngKey(g);
      if (!key) throw std::invalid_argument("image_record_map: the sampler has no seed");
      Philox rng({*key, 0}, {0, 0, 0, 0});
      return f(&rng, where);
    };
    MapInto into{[chain, with_record](int64_t local, const Value& v, Philox*, const Array& slot) {
                   return with_record(local, [&](Philox* rng, const auto& where) {
                     return chain.Write(v, rng, slot, where);
                   });
                 },
                 chain.FlipsOnly()};
    MapWithIndexFn fn = [chain = std::move(chain), with_record](int64_t local, Value v) {
      return with_record(local, [&](Philox* rng, const auto& where) {
        return chain(v, rng, where);
      });
    };
    return d.MapWithIndex(std::move(fn), /*calls_python=*/false, std::move(into));
  }, nb::scope(map_dataset), nb::name("image_record_map"), nb::is_method(), "ops"_a,
     "sampler"_a, "shard_options"_a,
     "A DataLoader's per-record image ops (see bind_vision.cc), run without the GIL."));
}

}  // namespace spelt::python
