// Implementation of py_adapters.h.
#include "py_adapters.h"

#include <nanobind/stl/string.h>

#include <climits>
#include <optional>
#include <stdexcept>
#include <string>

#include "gil.h"
#include "py_array_source.h"
#include "py_state.h"

namespace spelt::python {
namespace {

// A Python object shared by copies of a std::function without touching the GIL on copy.
struct Callable {
  PyRef ref;
  nb::handle get() const { return ref.get(); }
};

// A Python result as an element: None stays None (a filtered element on MapDatasets).
Value WrapResult(nb::handle obj) {
  if (obj.is_none()) return Value();
  return Wrap(obj);
}

Callable Hold(nb::handle fn) {
  if (!PyCallable_Check(fn.ptr())) {
    throw nb::type_error(("expected a callable, got " +
                          std::string(Py_TYPE(fn.ptr())->tp_name)).c_str());
  }
  return Callable{MakePyRef(fn)};
}

class PySourceImpl final : public RandomAccessSource {
 public:
  // A source without __len__ (accepted by the DataLoader when its sampler gives the count, as
  // in Grain) has length kInfiniteLength: unknown.
  explicit PySourceImpl(nb::handle source) : source_(MakePyRef(source)) {
    length_ = nb::hasattr(source, "__len__") ? static_cast<int64_t>(nb::len(source))
                                             : kInfiniteLength;
    nb::module_ np = nb::module_::import_("numpy");
    if (nb::isinstance<nb::list>(source) || nb::isinstance<nb::tuple>(source) ||
        nb::isinstance(source, np.attr("ndarray"))) {
      repr_ = nb::cast<std::string>(nb::str(source.type()));
    } else {
      repr_ = nb::cast<std::string>(nb::repr(source));
    }
    // Grain's batched-read protocol (SupportsBatchedReadRandomAccessDataSource), then
    // array-record's and PyTorch's name for it.
    for (const char* name : {"_getitems", "__getitems__"}) {
      if (nb::hasattr(source, name)) {
        getitems_ = MakePyRef(source.attr(name));
        break;
      }
    }
  }
  int64_t Length() const override { return length_; }
  Value Get(int64_t index) const override {
    GilAcquire gil;
    return Read(index);
  }
  // One GIL hold for the whole chunk: one batched call if the source has one, else
  // __getitem__ per index. If the batched call raises an Exception (not a KeyboardInterrupt,
  // SystemExit, ...) or returns the wrong number of records, the records are read again one
  // at a time, so that the error is the one __getitem__ raises for the first bad record (with
  // its note); if none fails, a RuntimeWarning says the batched call is broken.
  void GetMany(std::span<const int64_t> indices, std::vector<Value>* out) const override {
    GilAcquire gil;
    out->reserve(out->size() + indices.size());
    if (getitems_) {
      const size_t before = out->size();
      std::optional<nb::python_error> failed;
      try {
        if (ReadBatched(indices, out)) return;
      } catch (nb::python_error& e) {
        if (!e.matches(PyExc_Exception)) throw;
        failed.emplace(std::move(e));
        out->resize(before);
      }
      for (const int64_t i : indices) out->push_back(Read(i));
      Warn(failed ? Describe(*failed) : std::string("the wrong number of records"));
      return;
    }
    for (const int64_t i : indices) out->push_back(Read(i));
  }
  std::string Repr() const override { return repr_; }
  bool CallsPython() const override { return true; }

 private:
  // Record `index` by __getitem__; an exception gets a note naming the record and the source.
  // REQUIRES: the GIL.
  Value Read(int64_t index) const {
    nb::handle src(source_.get());
    try {
      nb::object record = src[nb::int_(index)];
      return WrapResult(record);
    } catch (nb::python_error& e) {
      std::string note = "spelt: raised while reading record " + std::to_string(index) +
                         " from data source " + repr_;
      nb::handle value = e.value();
      if (nb::hasattr(value, "add_note")) value.attr("add_note")(note);
      throw;
    }
  }
  // The records by one batched call, appended to *out; false (and *out unchanged) if it
  // returned a number of records other than indices.size(). REQUIRES: the GIL.
  bool ReadBatched(std::span<const int64_t> indices, std::vector<Value>* out) const {
    nb::list keys;
    for (const int64_t i : indices) keys.append(nb::int_(i));
    nb::object records = nb::handle(getitems_.get())(keys);
    if (nb::len(records) != indices.size()) return false;
    for (nb::handle record : records) out->push_back(WrapResult(record));
    return true;
  }
  static std::string Describe(nb::python_error& e) {
    return "raised " + std::string(Py_TYPE(e.value().ptr())->tp_name) + ": " +
           nb::cast<std::string>(nb::str(e.value()));
  }
  void Warn(const std::string& what) const {
    const std::string message = "spelt: the batched read (_getitems / __getitems__) of " + repr_ +
                                " " + what + ", but every record read alone; using those";
    if (PyErr_WarnEx(PyExc_RuntimeWarning, message.c_str(), 1) != 0) throw nb::python_error();
  }

  PyRef source_;
  PyRef getitems_;  // the bound batched-read method, or null
  int64_t length_;
  std::string repr_;
};

// A sampler written in Python (Grain's protocol): __getitem__(g) -> RecordMetadata, whose
// record_key is read; __len__ is optional, as in Grain 0.2.18's _SamplerMapDataset: without
// it the length is the first index whose __getitem__ raises IndexError, found by binary
// search over [0, sys.maxsize) (other exceptions propagate).
class PySamplerImpl final : public Sampler {
 public:
  PySamplerImpl(nb::handle sampler, ShardOptions options)
      : sampler_(MakePyRef(sampler)), options_(options) {
    if (nb::hasattr(sampler, "__len__")) {
      length_ = static_cast<int64_t>(nb::len(sampler));
    } else {
      int64_t lo = 0, hi = INT64_MAX;  // first index that raises IndexError
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (Exists(sampler, mid)) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      length_ = lo;
    }
  }
  int64_t Length() const override { return length_; }
  int64_t RecordKey(int64_t index) const override {
    GilAcquire gil;
    return Key(index);
  }
  // One interpreter-lock hold for all the indices.
  void RecordKeys(std::span<const int64_t> indices, std::vector<int64_t>* keys) const override {
    GilAcquire gil;
    keys->reserve(keys->size() + indices.size());
    for (const int64_t index : indices) keys->push_back(Key(index));
  }
  const ShardOptions& shard_options() const override { return options_; }
  bool CallsPython() const override { return true; }

 private:
  // REQUIRES the GIL.
  int64_t Key(int64_t index) const {
    return nb::cast<int64_t>(nb::handle(sampler_.get())[nb::int_(index)].attr("record_key"));
  }
  static bool Exists(nb::handle sampler, int64_t index) {
    try {
      nb::object item = sampler[nb::int_(index)];  // (an unused accessor would not call it)
      return true;
    } catch (nb::python_error& e) {
      if (e.matches(PyExc_IndexError)) return false;
      throw;
    }
  }
  PyRef sampler_;
  ShardOptions options_;
  int64_t length_;
};

class PyMapNode final : public MapNode {
 public:
  PyMapNode(nb::handle ds, ParentNodes parents)
      : MapNode(std::move(parents), /*calls_python_self=*/true), ds_(MakePyRef(ds)),
        length_(static_cast<int64_t>(nb::len(ds))), name_(Py_TYPE(ds.ptr())->tp_name) {}
  std::string Name() const override { return name_; }
  int64_t Length() const override { return length_; }
  std::optional<Value> Get(int64_t index) const override {
    GilAcquire gil;
    nb::object v = nb::handle(ds_.get())[nb::int_(index)];
    if (v.is_none()) return std::nullopt;
    return Wrap(v);
  }

 private:
  PyRef ds_;
  int64_t length_;
  std::string name_;
};

class PyIterator final : public DatasetIterator {
 public:
  explicit PyIterator(nb::handle it) : it_(MakePyRef(it)) {}
  ~PyIterator() override = default;
  std::optional<Value> Next() override {
    GilAcquire gil;
    PyObject* v = PyIter_Next(it_.get());
    if (v == nullptr) {
      if (PyErr_Occurred()) throw nb::python_error();
      return std::nullopt;
    }
    nb::object obj = nb::steal(v);
    return WrapResult(obj);
  }
  State GetState() const override {
    GilAcquire gil;
    return StateFromPython(nb::handle(it_.get()).attr("get_state")());
  }
  void SetState(const State& state) override {
    GilAcquire gil;
    nb::handle(it_.get()).attr("set_state")(StateToPython(state));
  }

 private:
  PyRef it_;
};

class PyIterNode final : public IterNode {
 public:
  PyIterNode(nb::handle ds, ParentNodes parents)
      : IterNode(std::move(parents), /*calls_python_self=*/true),
        ds_(MakePyRef(ds)),
        name_(Py_TYPE(ds.ptr())->tp_name) {}
  std::string Name() const override { return name_; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    GilAcquire gil;
    nb::object it = nb::handle(ds_.get()).attr("__iter__")();
    return std::make_unique<PyIterator>(it);
  }

 private:
  PyRef ds_;
  std::string name_;
};

}  // namespace

MapFn PyMapFn(nb::handle fn) {
  return [f = Hold(fn)](Value v) {
    GilAcquire gil;
    return WrapResult(f.get()(ToPython(v)));
  };
}

// The numpy Generator in the state of `rng` (spelt._callables.philox_generator: the one place
// where Spelt's Philox streams become numpy Generators). REQUIRES: the GIL.
nb::object ToNumpyGenerator(const Philox& rng) {
  static PyObject* const philox_generator =
      nb::object(nb::module_::import_("spelt._callables").attr("philox_generator")).release().ptr();
  const auto& k = rng.key();
  nb::object hi = nb::steal(PyLong_FromUnsignedLongLong(k[1]));
  nb::object shift = nb::int_(64);
  nb::object hi_shifted = nb::steal(PyNumber_Lshift(hi.ptr(), shift.ptr()));
  nb::object lo = nb::steal(PyLong_FromUnsignedLongLong(k[0]));
  nb::object key = nb::steal(PyNumber_Or(hi_shifted.ptr(), lo.ptr()));
  const auto& c = rng.counter();
  return nb::handle(philox_generator)(key, nb::make_tuple(c[0], c[1], c[2], c[3]));
}

RandomMapFn PyRandomMapFn(nb::handle fn) {
  return [f = Hold(fn)](Value v, Philox& rng) {
    GilAcquire gil;
    return WrapResult(f.get()(ToPython(v), ToNumpyGenerator(rng)));
  };
}

MapWithIndexFn PyMapWithIndexFn(nb::handle fn) {
  return [f = Hold(fn)](int64_t index, Value v) {
    GilAcquire gil;
    return WrapResult(f.get()(nb::int_(index), ToPython(v)));
  };
}

FilterFn PyFilterFn(nb::handle fn) {
  return [f = Hold(fn)](const Value& v) {
    GilAcquire gil;
    nb::object r = f.get()(ToPython(v));
    const int truth = PyObject_IsTrue(r.ptr());
    if (truth < 0) throw nb::python_error();
    return truth == 1;
  };
}

FlatMapFn PyFlatMapFn(nb::handle fn) {
  return [f = Hold(fn)](Value v) {
    GilAcquire gil;
    std::vector<Value> out;
    for (nb::handle item : f.get()(ToPython(v))) out.push_back(WrapResult(item));
    return out;
  };
}

BatchFn PyBatchFn(nb::handle fn) {
  return [f = Hold(fn)](std::vector<Value> elements) {
    GilAcquire gil;
    nb::list items;
    for (const Value& v : elements) items.append(ToPython(v));
    return WrapResult(f.get()(items));
  };
}

std::function<void(const std::string&)> PyWarnFn(nb::handle fn) {
  return [f = Hold(fn)](const std::string& message) {
    GilAcquire gil;
    f.get()(message);
  };
}

std::shared_ptr<const RandomAccessSource> PySource(nb::handle source) {
  if (auto native = NumpyArraySource(source)) return native;
  return std::make_shared<PySourceImpl>(source);
}

std::shared_ptr<const Sampler> PySampler(nb::handle sampler, ShardOptions shard_options) {
  return std::make_shared<PySamplerImpl>(sampler, shard_options);
}

std::unique_ptr<DatasetIterator> PyDatasetIterator(nb::handle it) {
  return std::make_unique<PyIterator>(it);
}

MapDataset PyMapDataset(nb::handle dataset, ParentNodes parents) {
  return MapDataset(std::make_shared<PyMapNode>(dataset, std::move(parents)));
}

IterDataset PyIterDataset(nb::handle dataset, ParentNodes parents) {
  return IterDataset(std::make_shared<PyIterNode>(dataset, std::move(parents)));
}

}  // namespace spelt::python
