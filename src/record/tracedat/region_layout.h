// The layout that keeps a trace.dat readable while it is recorded, and after
// the recorder is killed at any moment (docs/recording.md, "Crash safety").
//
// trace.dat wants each cpu's pages in one contiguous run that the header
// locates, and the header first. So the file is made sparse: the header at
// offset 0, and cpu N's pages from (N + 1) * region_bytes on, each cpu
// growing in its own huge, mostly unallocated region. Every checkpoint
// rewrites the header with the pages on disk by then (a copy goes to
// kHeaderBackupOffset first, so a header torn by a kill has a whole twin).
// When the recording ends the gaps are squeezed out (CompactRegions) and the
// file is an ordinary one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "record/tracedat/file_parser.h"

namespace udiag::record::tracedat {

// Where the header's twin lies: [kHeaderBackupMagic, u64 size, padding to
// a page] then the header. Inside the first region, which is never smaller.
inline constexpr uint64_t kHeaderBackupOffset = uint64_t{1} << 30;
inline constexpr char kHeaderBackupMagic[16] = "udiag-header-v1";
// Blocks allocated up front for the header and for its twin.
inline constexpr uint64_t kHeaderReserveBytes = 256 << 10;

struct RegionLayout {
  uint64_t region_bytes = 0;  // a power of two, at least 4 GiB
  uint32_t cpus = 0;          // cpus that have a region
  uint64_t CpuOffset(uint32_t cpu) const { return (uint64_t{cpu} + 1) * region_bytes; }
};

// The largest layout `fd` (an empty regular file) can hold for `cpus`
// regions, within 64 TiB in all (4 TiB a cpu on ext4 with 2 cpus); nullopt where the file system cannot make
// files that large (FAT) or does not keep them sparse. Leaves `fd` empty.
std::optional<RegionLayout> ProbeRegionLayout(int fd, uint32_t cpus);

// Moves the cpus' pages (`table`, offsets and sizes; empty ones anywhere)
// down so that they follow `data_start` (page-aligned) in cpu order with no
// gap, and truncates the file after them. The file system drops the gaps
// where it can (FALLOC_FL_COLLAPSE_RANGE: ext4, XFS); elsewhere each cpu's
// pages are copied down and their old place is freed. After every step
// `publish` is called with the table as it now is, to rewrite the header.
// Returns 0 or an errno; `table` says where the pages are either way.
int CompactRegions(int fd, uint64_t data_start, std::vector<CpuData>* table,
                   const std::function<int(const std::vector<CpuData>&)>& publish, bool allow_collapse = true);

// Writes `bytes` (a header padded to a page) at `offset` through an aligned
// buffer, so direct I/O on `fd` does not matter. The blocks are allocated
// first: on a full disk this fails whole, leaving the old bytes intact.
int WriteHeaderBytes(int fd, std::string_view bytes, uint64_t offset);

}  // namespace udiag::record::tracedat
