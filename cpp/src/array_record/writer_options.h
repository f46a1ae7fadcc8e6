// Internal: what the writer needs from ArrayRecordWriterOptions beyond the public header.
#ifndef SPELT_SRC_ARRAY_RECORD_WRITER_OPTIONS_H_
#define SPELT_SRC_ARRAY_RECORD_WRITER_OPTIONS_H_

#include "riegeli/compression.h"
#include "spelt/array_record.h"

namespace spelt::internal::array_record {

// The codec settings of `options`, with unset values replaced by their defaults.
// REQUIRES: options.Validate() passes.
riegeli::CompressionOptions CompressionOf(const ArrayRecordWriterOptions& options);

}  // namespace spelt::internal::array_record

#endif  // SPELT_SRC_ARRAY_RECORD_WRITER_OPTIONS_H_
