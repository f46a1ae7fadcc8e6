// ArrayRecord files in an object store from C++, no Python: Arrow C++'s filesystems registered
// for s3://, gs://, ... (spelt/arrow_file_system.h), then the ordinary reader and writer.
//
//   arrow_remote_example [--filesystem FS_URI] [--write N] URI
//
// URI opens with the filesystems that RegisterArrowFileSystems registers, or, with
// --filesystem, with ArrowFileSystem(FS_URI) (Arrow's options in its query:
// "s3://?endpoint_override=127.0.0.1:9000&scheme=http"). With --write N, first writes N records (record i: "record i " repeated 1 + i % 50 times;
// group size 8, zstd) to URI. Then opens URI, reads every record in one batch (all its ranges
// in flight at once) and prints "records=N bytes=B fnv1a=H" (H: the 64-bit FNV-1a hash of the
// records in order, each preceded by its length as 8 little-endian bytes). Credentials and the
// endpoint come from the environment (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL, ...) unless FS_URI
// says otherwise. On an error, prints it (it names the URI) and exits with 1.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <numeric>
#include <string>
#include <vector>

#include "spelt/array_record.h"
#include "spelt/arrow_file_system.h"

namespace {

std::string Record(uint64_t i) {
  std::string unit = "record " + std::to_string(i) + " ";
  std::string out;
  for (uint64_t k = 0; k <= i % 50; ++k) out += unit;
  return out;
}

void Write(const std::string& uri, uint64_t n, const spelt::FileSystemPtr& fs) {
  auto writer = spelt::ArrayRecordWriter::Open(
      uri, spelt::ArrayRecordWriterOptions::FromString("group_size:8,zstd"), fs);
  for (uint64_t i = 0; i < n; ++i) writer->Write(Record(i));
  writer->Close();  // the object appears in the bucket now
}

uint64_t Fnv1a(uint64_t hash, const void* data, size_t n) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ULL;
  return hash;
}

void Read(const std::string& uri, const spelt::FileSystemPtr& fs) {
  auto reader = spelt::ArrayRecordReader::Open(uri, {}, fs);
  std::vector<uint64_t> all(reader->NumRecords());
  std::iota(all.begin(), all.end(), uint64_t{0});
  uint64_t hash = 0xcbf29ce484222325ULL, bytes = 0;
  for (const std::string& record : reader->ReadRecords(all)) {
    unsigned char length[8];
    for (int b = 0; b < 8; ++b) length[b] = static_cast<unsigned char>(record.size() >> (8 * b));
    hash = Fnv1a(Fnv1a(hash, length, 8), record.data(), record.size());
    bytes += record.size();
  }
  std::printf("records=%zu bytes=%llu fnv1a=%016llx\n", all.size(),
              static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(hash));
}

}  // namespace

int main(int argc, char** argv) {
  std::string filesystem;
  uint64_t write = 0;
  int arg = 1;
  for (; arg + 2 < argc; arg += 2) {
    if (std::strcmp(argv[arg], "--filesystem") == 0) {
      filesystem = argv[arg + 1];
    } else if (std::strcmp(argv[arg], "--write") == 0) {
      write = std::strtoull(argv[arg + 1], nullptr, 10);
    } else {
      break;
    }
  }
  if (arg != argc - 1) {
    std::fprintf(stderr, "usage: %s [--filesystem FS_URI] [--write N] URI\n", argv[0]);
    return 2;
  }
  const std::string uri = argv[arg];
  try {
    spelt::FileSystemPtr fs;  // null: the filesystem registered for URI's scheme
    if (filesystem.empty()) {
      spelt::RegisterArrowFileSystems();
    } else {
      fs = spelt::ArrowFileSystem(filesystem);
    }
    if (write > 0) Write(uri, write, fs);
    Read(uri, fs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
