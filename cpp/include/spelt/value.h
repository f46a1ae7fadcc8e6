// spelt/value.h: the element type that flows through every Spelt pipeline.
//
// An element is a tree. Its leaves are n-dimensional arrays (dtype, shape, C-contiguous
// buffer with an explicit owner), byte or text strings, and scalars (bool, int64, double);
// its inner nodes are sequences (list or tuple) and string-keyed maps (insertion order kept).
// A leaf may also be an Opaque foreign object (for example a Python object) that the engine
// carries untouched and asks to Unpack() into a tree only when it must look inside (batching).
//
// Values are immutable once built and cheap to copy: arrays and containers are shared, so a
// copy never copies data. Thread-safety: a Value may be read from many threads at once;
// destroying the last reference to an Opaque may call into its foreign runtime.
#ifndef SPELT_VALUE_H_
#define SPELT_VALUE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace spelt {

// Array element types; names and sizes are numpy's.
enum class DType : uint8_t {
  kBool, kInt8, kInt16, kInt32, kInt64, kUint8, kUint16, kUint32, kUint64,
  kFloat16, kFloat32, kFloat64,
};
// Bytes per element of `dtype`.
size_t ItemSize(DType dtype);
// numpy's name of `dtype`, e.g. "uint8", "float32".
std::string_view DTypeName(DType dtype);

// An n-d C-contiguous array. `owner` keeps the bytes at `data` alive; `data` is valid as long
// as any copy of this Array (or of its owner) exists.
struct Array {
  DType dtype = DType::kUint8;
  std::vector<int64_t> shape;          // empty for a 0-d (scalar) array
  std::shared_ptr<const void> owner;   // whatever frees the buffer
  const std::byte* data = nullptr;     // num_elements() * ItemSize(dtype) bytes

  int64_t num_elements() const;
  size_t nbytes() const { return static_cast<size_t>(num_elements()) * ItemSize(dtype); }
  // "uint8[28,28]": used in error messages.
  std::string Describe() const;

  // A new zero-filled array that owns its (64-byte aligned) buffer. Writable through
  // mutable_data() until it is shared. Throws std::invalid_argument on a negative dimension.
  static Array Allocate(DType dtype, std::vector<int64_t> shape);
  // As Allocate(), without zero-filling (for buffers that are fully overwritten).
  static Array AllocateUninitialized(DType dtype, std::vector<int64_t> shape);
  // Only valid on an array made by Allocate() that nobody else has seen yet.
  std::byte* mutable_data() const { return const_cast<std::byte*>(data); }
};

class Value;

// A foreign object carried through the engine untouched (e.g. a Python object).
// Implementations must be safe to destroy from any thread.
class Opaque {
 public:
  virtual ~Opaque() = default;
  // Converts the object into a tree of native values (arrays, scalars, containers), for
  // operations that look inside elements. Throws if it cannot be converted.
  virtual Value Unpack() const = 0;
  // A short description for error messages, e.g. "<Python object of type Foo>".
  virtual std::string Describe() const = 0;
  // Batching (Stack() in spelt/stack.h) of a leaf that stays Opaque after Unpack(): called on
  // element 0's leaf with the same-position leaves of all elements, in element order (the
  // first is this object), e.g. a Python object calls np.stack on them. Returns the output
  // leaf: a native value if it has one, else an Opaque. Throws std::invalid_argument if the
  // leaves cannot be stacked; the default implementation (in stack.cc) always does, naming
  // Describe().
  virtual Value StackLeaves(const std::vector<const Opaque*>& leaves) const;
  // The bytes of the object's data, for the execution summary (spelt/stage_stats.h); 0 when
  // unknown (the default).
  virtual int64_t ByteSize() const { return 0; }
};

// Opaque handle that a foreign face attaches to a container so that it can rebuild the exact
// container type (a namedtuple class, a dict subclass). The engine copies it along, never
// looks inside it.
using ContainerTag = std::shared_ptr<const void>;

// A byte string (Python bytes) or a text string (UTF-8, Python str).
struct String {
  std::string data;
  bool is_text = false;
};

struct Sequence;
struct Mapping;

class Value {
 public:
  struct None {};
  using Variant = std::variant<None, bool, int64_t, double, String, Array,
                               std::shared_ptr<const Sequence>, std::shared_ptr<const Mapping>,
                               std::shared_ptr<const Opaque>>;

  Value() = default;
  Value(bool v) : v_(v) {}                                    // NOLINT
  Value(const char*) = delete;  // use Value::Text or Value::Bytes
  Value(int v) : v_(int64_t{v}) {}                            // NOLINT
  Value(int64_t v) : v_(v) {}                                 // NOLINT
  Value(double v) : v_(v) {}                                  // NOLINT
  Value(String v) : v_(std::move(v)) {}                       // NOLINT
  Value(Array v) : v_(std::move(v)) {}                        // NOLINT
  Value(std::shared_ptr<const Sequence> v) : v_(std::move(v)) {}  // NOLINT
  Value(std::shared_ptr<const Mapping> v) : v_(std::move(v)) {}   // NOLINT
  Value(std::shared_ptr<const Opaque> v) : v_(std::move(v)) {}    // NOLINT

  // Builders for the common containers.
  static Value List(std::vector<Value> items);
  static Value Tuple(std::vector<Value> items);
  static Value Dict(std::vector<std::pair<std::string, Value>> items);
  static Value Bytes(std::string data) { return Value(String{std::move(data), false}); }
  static Value Text(std::string data) { return Value(String{std::move(data), true}); }

  bool is_none() const { return std::holds_alternative<None>(v_); }
  template <typename T> bool is() const { return std::holds_alternative<T>(v_); }
  // REQUIRES: is<T>(); throws std::bad_variant_access otherwise.
  template <typename T> const T& as() const { return std::get<T>(v_); }
  const Variant& variant() const { return v_; }

  // Convenience accessors; each throws std::invalid_argument naming the actual kind.
  int64_t AsInt() const;
  double AsDouble() const;
  const Array& AsArray() const;
  const Sequence& AsSequence() const;
  const Mapping& AsMapping() const;
  // Map lookup by key; throws std::out_of_range naming the key.
  const Value& operator[](std::string_view key) const;
  // Sequence element; throws std::out_of_range.
  const Value& operator[](size_t i) const;

  // If this is an Opaque, its Unpack(); otherwise this value itself.
  Value Unpacked() const;
  // Kind name for messages: "none", "bool", "int", "float", "bytes", "str", "array",
  // "list", "tuple", "dict", "opaque".
  std::string_view KindName() const;
  // A compact description of the structure, shapes and dtypes (not the data), for messages.
  std::string Describe() const;

  // Deep equality: same structure, same leaves (arrays compared by dtype, shape and bytes).
  // Opaque values compare equal only when they are the same object.
  friend bool operator==(const Value& a, const Value& b);

 private:
  Variant v_;
};

struct Sequence {
  enum class Kind : uint8_t { kList, kTuple };
  Kind kind = Kind::kList;
  std::vector<Value> items;
  ContainerTag tag;  // e.g. a namedtuple class; null for plain list/tuple
};

struct Mapping {
  std::vector<std::pair<std::string, Value>> items;  // unique keys, insertion order
  ContainerTag tag;  // e.g. a dict subclass; null for a plain dict
  const Value* Find(std::string_view key) const;
};

}  // namespace spelt

#endif  // SPELT_VALUE_H_
