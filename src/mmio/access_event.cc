#include "mmio/access_event.h"

#include <algorithm>
#include <cstring>

#include "mmio/thread_id.h"

namespace udiag::mmio {

void AccessEvent::Describe(const Snapshot& snap, const DecodedInstruction& insn, DecodeStatus status,
                           uintptr_t fault_addr, const ucontext_t& uc) {
  udiag_mmio_access access;
  memset(&access, 0, sizeof(access));
  access.ip = insn.ip;
  access.tid = CurrentThreadId();
  memcpy(access.insn, insn.bytes, sizeof(insn.bytes));
  access.insn_len = insn.length;
  access.decoded = status == DecodeStatus::kOk || status == DecodeStatus::kUnsupported;
  if (access.decoded) {
    access.addr = insn.address;
    access.width = insn.width;
    access.dir = insn.direction;
  } else {
    // Bit 1 of the x86 page-fault error code: the access was a write.
    access.addr = fault_addr;
    access.dir = uc.uc_mcontext.gregs[REG_ERR] & 2 ? UDIAG_MMIO_WRITE : UDIAG_MMIO_READ;
  }
  part_count_ = 0;
  hit_count_ = 0;
  AddPart(snap, access);
  if (access.decoded && insn.second_address != 0) {  // MOVS: the destination is written
    access.addr = insn.second_address;
    access.dir = UDIAG_MMIO_WRITE;
    AddPart(snap, access);
  }
}

void AccessEvent::AddPart(const Snapshot& snap, const udiag_mmio_access& access) {
  const unsigned part = static_cast<unsigned>(part_count_++);
  parts_[part] = access;
  udiag_mmio_probe* found[kMaxHits];
  const size_t count = snap.FindProbes(access.addr, access.width, found, kMaxHits - hit_count_);
  for (size_t i = 0; i < count; ++i) hits_[hit_count_++] = Hit{found[i], part};
}

void AccessEvent::SetHow(udiag_mmio_how how) {
  for (size_t i = 0; i < part_count_; ++i) parts_[i].how = how;
}

void AccessEvent::SetValues(const ExecuteResult& result) {
  for (size_t i = 0; i < part_count_; ++i) {
    udiag_mmio_access& access = parts_[i];
    const uint8_t* value = access.dir & UDIAG_MMIO_WRITE ? result.value_written : result.value_read;
    memcpy(access.value, value, std::min<size_t>(access.width, sizeof(access.value)));
    access.value_valid = 1;
  }
}

void AccessEvent::RunPre(ucontext_t* uc) const {
  for (size_t i = 0; i < hit_count_; ++i) {
    if (hits_[i].probe->pre != nullptr) hits_[i].probe->pre(hits_[i].probe, &parts_[hits_[i].part], uc);
  }
}

void AccessEvent::RunPost() const {
  for (size_t i = 0; i < hit_count_; ++i) {
    if (hits_[i].probe->post != nullptr) hits_[i].probe->post(hits_[i].probe, &parts_[hits_[i].part]);
  }
}

}  // namespace udiag::mmio
