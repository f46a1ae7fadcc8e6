#include "marker_as_none.h"

#include <memory>
#include <string>
#include <utility>
#include <variant>

#include "py_value.h"

namespace spelt::python {
namespace {

class MarkerAsNoneNode final : public IterNode {
 public:
  MarkerAsNoneNode(std::shared_ptr<const IterNode> parent, nb::handle marker)
      : IterNode({parent}), parent_(std::move(parent)),
        marker_(std::get<std::shared_ptr<const Opaque>>(Wrap(marker).variant())),
        mapped_(IterDataset(parent_)
                    .Map([marker = marker_](Value v) -> Value {
                      return IsObject(v, static_cast<const PyOpaque&>(*marker).object())
                                 ? Value()
                                 : v;
                    })
                    .node()) {}
  std::string Name() const override { return mapped_->Name(); }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    return mapped_->MakeIterator();
  }
  std::unique_ptr<DatasetIterator> MakeBatchIterator(
      const BatchRequest& request,
      std::function<std::unique_ptr<DatasetIterator>()> elementwise) const override {
    if (request.none_marker) return nullptr;  // a second marker
    BatchRequest below = request;
    below.none_marker = marker_;
    return parent_->MakeBatchIterator(below, std::move(elementwise));
  }

 private:
  std::shared_ptr<const IterNode> parent_;
  std::shared_ptr<const Opaque> marker_;  // a PyOpaque
  std::shared_ptr<const IterNode> mapped_;
};

}  // namespace

IterDataset MarkerAsNone(const IterDataset& parent, nb::handle marker) {
  return IterDataset(std::make_shared<MarkerAsNoneNode>(parent.node(), marker));
}

}  // namespace spelt::python
