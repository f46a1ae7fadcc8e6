// Internal: ZipMapDataset and ZipIterDataset (ops/zip.cc). The public handles of
// spelt/dataset.h call these factories.
#ifndef SPELT_SRC_OPS_ZIP_H_
#define SPELT_SRC_OPS_ZIP_H_

#include "core/nodes.h"

namespace spelt::internal {

// Throws std::invalid_argument if `parents` is empty or their lengths differ (Grain's messages).
MapNodePtr MakeZipMapNode(std::vector<MapNodePtr> parents);
// Throws std::invalid_argument if `parents` is empty.
IterNodePtr MakeZipIterNode(std::vector<IterNodePtr> parents, bool strict);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_ZIP_H_
