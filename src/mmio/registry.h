// The probe registry (control path): probes, armed pages and alias views,
// published to the signal handlers as immutable snapshots. Every public call
// serializes on one mutex and may block for a grace period; none may be made
// from a probe handler.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "mmio/alias_view.h"
#include "mmio/memory_map.h"
#include "mmio/quiescence.h"
#include "mmio/snapshot.h"
#include "udiag/mmio.h"

namespace udiag::mmio {

// What the handlers read: the current snapshot (nullptr when no probe exists)
// and the reader sections guarding it.
Quiescence& ReaderSections();
const Snapshot* CurrentSnapshot();
// Counts the pages whose protection was lifted. A fault taken on a page just
// before it was disarmed can reach the handler after the page left the
// snapshot; the handler retries such a fault once per generation.
uint64_t DisarmGeneration();
// Whether an unregister is between lifting protections and its last restore
// (a design-A step may protect a page again until its grace period ends): a
// fault on a page no longer in the snapshot is retried until it is over.
bool DisarmInProgress();

class Registry {
 public:
  static Registry& Get();

  int SetMode(udiag_mmio_mode mode);
  udiag_mmio_mode mode() const { return mode_.load(); }
  int RegisterRegion(uintptr_t addr, size_t len, int fd, off_t offset);
  int UnregisterRegion(uintptr_t addr);
  int RegisterProbe(udiag_mmio_probe* probe);
  void UnregisterProbe(udiag_mmio_probe* probe);

 private:
  struct PageRecord {
    std::unique_ptr<PageState> state;
    int probes = 0;
    AliasView* view = nullptr;  // the view `state->alias` points into
  };
  struct ViewRecord {
    std::unique_ptr<AliasView> view;
    bool declared = false;  // by udiag_mmio_register_region, kept until unregistered
    int pages = 0;          // armed pages using it
  };

  // Finds or makes the alias view of `page`; nullptr when there is none.
  AliasView* ViewFor(uintptr_t page, const std::vector<Mapping>& maps);
  std::vector<ViewRecord>::iterator RecordOf(const AliasView* view);
  void ReleaseView(AliasView* view);
  // Publishes the current state and frees the previous snapshot after a grace period.
  void Publish();
  void UnregisterLocked(udiag_mmio_probe* probe);

  std::mutex mutex_;
  std::atomic<udiag_mmio_mode> mode_{UDIAG_MMIO_EMULATE};
  std::map<uintptr_t, ProbeSpan> probes_;  // by begin
  std::map<uintptr_t, PageRecord> pages_;  // by page
  std::vector<ViewRecord> views_;
};

}  // namespace udiag::mmio
