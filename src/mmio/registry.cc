#include "mmio/registry.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>

#include "mmio/alt_stack.h"
#include "mmio/memory_map.h"
#include "mmio/signal_plumbing.h"

namespace udiag::mmio {
namespace {

constinit Quiescence g_reader_sections;
constinit std::atomic<const Snapshot*> g_snapshot{nullptr};
constinit std::atomic<uint64_t> g_disarm_generation{0};
constinit std::atomic<uint32_t> g_disarms_in_progress{0};

bool NeedsAlias(udiag_mmio_mode mode) { return mode != UDIAG_MMIO_SINGLE_STEP; }

// Applies `prot` to each run of consecutive pages with one call.
int ProtectPages(const std::vector<uintptr_t>& pages, int prot) {
  for (size_t i = 0; i < pages.size();) {
    size_t j = i + 1;
    while (j < pages.size() && pages[j] == pages[j - 1] + kPageSize) ++j;
    if (mprotect(reinterpret_cast<void*>(pages[i]), (j - i) * kPageSize, prot) != 0) return errno;
    i = j;
  }
  return 0;
}

}  // namespace

Quiescence& ReaderSections() { return g_reader_sections; }
const Snapshot* CurrentSnapshot() { return g_snapshot.load(std::memory_order_seq_cst); }
uint64_t DisarmGeneration() { return g_disarm_generation.load(); }
bool DisarmInProgress() { return g_disarms_in_progress.load() != 0; }

Registry& Registry::Get() {
  static Registry* registry = new Registry();  // never destroyed: handlers may outlive exit()
  return *registry;
}

int Registry::SetMode(udiag_mmio_mode mode) {
  if (mode < UDIAG_MMIO_EMULATE || mode > UDIAG_MMIO_SINGLE_STEP) return -EINVAL;
  std::lock_guard lock(mutex_);
  if (!probes_.empty()) return -EBUSY;
  mode_.store(mode);
  return 0;
}

int Registry::RegisterRegion(uintptr_t addr, size_t len, int fd, off_t offset) {
  // mmap needs a page-aligned offset; the view is kept at the same page offset as addr.
  if (len == 0 || addr + len < addr || addr % kPageSize != 0 || offset % kPageSize != 0) return -EINVAL;
  std::lock_guard lock(mutex_);
  for (const ViewRecord& record : views_) {
    if (record.declared && addr < record.view->virt() + record.view->len() &&
        record.view->virt() < addr + len) {
      return -EEXIST;
    }
  }
  auto view = MapAliasView(addr, len, fd, offset);
  if (!view.ok()) return -view.error();
  views_.push_back(ViewRecord{std::move(*view), true, 0});
  return 0;
}

int Registry::UnregisterRegion(uintptr_t addr) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(views_.begin(), views_.end(), [addr](const ViewRecord& r) {
    return r.declared && r.view->virt() == addr;
  });
  if (it == views_.end()) return -ENOENT;
  if (it->pages > 0) return -EBUSY;
  views_.erase(it);
  return 0;
}

AliasView* Registry::ViewFor(uintptr_t page, const std::vector<Mapping>& maps) {
  // Declared regions first: the caller knows best.
  for (bool declared : {true, false}) {
    for (const ViewRecord& record : views_) {
      if (record.declared == declared && record.view->Contains(page) &&
          record.view->Contains(page + kPageSize - 1)) {
        return record.view.get();
      }
    }
  }
  const Mapping* mapping = FindMapping(maps, page);
  if (mapping == nullptr) return nullptr;
  auto view = FindAliasView(*mapping);
  if (!view.ok()) return nullptr;
  views_.push_back(ViewRecord{std::move(*view), false, 0});
  return views_.back().view.get();
}

std::vector<Registry::ViewRecord>::iterator Registry::RecordOf(const AliasView* view) {
  return std::find_if(views_.begin(), views_.end(), [view](const ViewRecord& r) { return r.view.get() == view; });
}

void Registry::ReleaseView(AliasView* view) {
  if (view == nullptr) return;
  auto it = RecordOf(view);
  if (--it->pages == 0 && !it->declared) views_.erase(it);
}

void Registry::Publish() {
  const Snapshot* next = nullptr;
  if (!pages_.empty()) {
    auto* snapshot = new Snapshot();
    snapshot->mode = mode_.load();
    for (const auto& [begin, span] : probes_) snapshot->probes.push_back(span);
    for (const auto& [page, record] : pages_) snapshot->pages.push_back(record.state.get());
    next = snapshot;
  }
  const Snapshot* previous = g_snapshot.exchange(next);
  g_reader_sections.Synchronize();
  delete previous;
}

int Registry::RegisterProbe(udiag_mmio_probe* probe) {
  if (probe == nullptr || probe->len == 0 || probe->addr + probe->len < probe->addr) return -EINVAL;
  const uintptr_t begin = probe->addr, end = probe->addr + probe->len;
  std::lock_guard lock(mutex_);
  auto next = probes_.lower_bound(begin);
  if ((next != probes_.end() && next->second.begin < end) ||
      (next != probes_.begin() && std::prev(next)->second.end > begin)) {
    return -EEXIST;
  }
  for (const auto& [b, span] : probes_) {
    if (span.probe == probe) return -EEXIST;
  }
  auto maps = ReadMemoryMap();
  if (!maps.ok()) return -maps.error();
  std::vector<uintptr_t> covered, fresh;
  for (uintptr_t page = PageOf(begin); page < end; page += kPageSize) {
    if (!pages_.contains(page) && FindMapping(*maps, page) == nullptr) return -EINVAL;
    covered.push_back(page);
  }
  const udiag_mmio_mode mode = mode_.load();
  for (uintptr_t page : covered) {
    if (pages_.contains(page)) continue;
    AliasView* view = NeedsAlias(mode) ? ViewFor(page, *maps) : nullptr;
    if (NeedsAlias(mode) && view == nullptr) {
      for (uintptr_t made : fresh) ReleaseView(pages_.extract(made).mapped().view);
      std::erase_if(views_, [](const ViewRecord& r) { return !r.declared && r.pages == 0; });
      return -ENOTSUP;
    }
    PageRecord& record = pages_[page];
    record.state = std::make_unique<PageState>();
    record.state->page = page;
    record.state->original_prot = FindMapping(*maps, page)->prot;
    record.state->alias = view != nullptr ? view->Translate(page) : nullptr;
    record.view = view;
    if (view != nullptr) ++RecordOf(view)->pages;
    fresh.push_back(page);
  }
  for (uintptr_t page : covered) ++pages_[page].probes;
  probes_[begin] = ProbeSpan{begin, end, probe};
  InstallSignalHandlers();
  EnsureAltStack();
  // Published before arming, so that the first fault already finds its page.
  Publish();
  if (int err = ProtectPages(fresh, PROT_NONE); err != 0) {
    UnregisterLocked(probe);
    return -err;
  }
  return 0;
}

void Registry::UnregisterProbe(udiag_mmio_probe* probe) {
  std::lock_guard lock(mutex_);
  UnregisterLocked(probe);
}

void Registry::UnregisterLocked(udiag_mmio_probe* probe) {
  auto it = std::find_if(probes_.begin(), probes_.end(),
                         [probe](const auto& entry) { return entry.second.probe == probe; });
  if (it == probes_.end()) return;
  const ProbeSpan span = it->second;
  probes_.erase(it);
  g_disarms_in_progress.fetch_add(1);
  std::vector<uintptr_t> dead;
  for (uintptr_t page = PageOf(span.begin); page < span.end; page += kPageSize) {
    PageRecord& record = pages_[page];
    if (--record.probes > 0) continue;
    record.state->armed.store(false);
    mprotect(reinterpret_cast<void*>(page), kPageSize, record.state->original_prot);
    dead.push_back(page);
  }
  if (!dead.empty()) g_disarm_generation.fetch_add(1);
  std::vector<PageRecord> retired;
  for (uintptr_t page : dead) retired.push_back(std::move(pages_.extract(page).mapped()));
  // After the grace period no handler uses the probe, the pages or their views.
  Publish();
  for (PageRecord& record : retired) {
    // A design-A step that was re-arming while we disarmed may have protected it again.
    mprotect(reinterpret_cast<void*>(record.state->page), kPageSize, record.state->original_prot);
    ReleaseView(record.view);
  }
  // A fault seen during the disarm gets one more retry now that it is complete.
  if (!dead.empty()) g_disarm_generation.fetch_add(1);
  g_disarms_in_progress.fetch_sub(1);
}

}  // namespace udiag::mmio
