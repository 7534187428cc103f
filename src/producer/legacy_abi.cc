#include "producer/legacy_abi.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "producer/data_files.h"
#include "producer/legacy_status_page.h"
#include "producer/registration.h"
#include "producer/user_memory.h"
#include "schema/event_description.h"
#include "udiag/udiag.h"

namespace udiag::producer::legacy {
namespace {

struct UserRegV1 {
  uint32_t size;
  uint64_t name_args;
  uint32_t status_index;
  uint32_t write_index;
};
static_assert(sizeof(UserRegV1) == kUserRegV1Size);

// The RFC recorded every event as its length and its bytes.
constexpr char kRfcFields[] = " int datalen; __data_loc char[] data";
constexpr uint32_t kRfcDataOffset = schema::kCommonHeaderSize + 8;

// One registration through a historic ABI. Its private scratch enabler gives
// it a write index and an event reference of its own; the status-page bits
// belong to the event's slot, shared by all its registrations.
struct PageRegistration {
  ino_t file;
  uint32_t number;
  uint64_t scratch_addr;
  uint8_t scratch_bit;
};

struct RfcFile {
  uint32_t number = 0;
  uint32_t write_index = 0;
};

std::mutex g_mu;  // guards the tables below; taken before the page's and the client's locks
std::vector<PageRegistration>* g_registrations = new std::vector<PageRegistration>;
std::map<ino_t, RfcFile>* g_rfc_files = new std::map<ino_t, RfcFile>;

int Fail(int err) {
  errno = err;
  return -1;
}

bool FileOf(int fd, ino_t* ino) {
  struct stat st;
  if (fstat(fd, &st) < 0) return false;
  *ino = st.st_ino;
  return true;
}

void UnregisterSlotBits(Client& client, StatusPage& page, uint32_t number) {
  UnregisterEnabler(client, page.ByteModelWord(number), 0);
  UnregisterEnabler(client, page.BitModelWord(number), StatusPage::BitModelBit(number));
}

void Release(Client& client, StatusPage& page, const PageRegistration& reg) {
  UnregisterEnabler(client, reg.scratch_addr, reg.scratch_bit);
  page.ReleaseScratch(reg.scratch_addr, reg.scratch_bit);
  if (page.Release(reg.number)) UnregisterSlotBits(client, page, reg.number);
}

// Registers `command` on `fd` and gives it a status number. Under g_mu.
int RegisterOnPage(Client& client, int fd, const std::string& command, Registration* done, uint32_t* number) {
  ino_t file;
  if (!FileOf(fd, &file)) return EBADF;
  StatusPage* page = StatusPage::Get();
  if (!page) return ENOMEM;
  PageRegistration reg{file, 0, 0, 0};
  if (int err = page->AcquireScratch(&reg.scratch_addr, &reg.scratch_bit)) return err;
  if (int err = RegisterEnabler(client, fd, 0, command, {0, reg.scratch_addr, reg.scratch_bit, 4}, done)) {
    page->ReleaseScratch(reg.scratch_addr, reg.scratch_bit);
    return err;
  }
  bool first = false;
  auto slot = page->Acquire(done->event_id, &first);
  if (!slot.ok()) {
    UnregisterEnabler(client, reg.scratch_addr, reg.scratch_bit);
    page->ReleaseScratch(reg.scratch_addr, reg.scratch_bit);
    return slot.error();
  }
  reg.number = *slot;
  if (first) {
    Registration same;
    LocalEnabler byte_model{0, page->ByteModelWord(reg.number), 0, 4};
    LocalEnabler bit_model{0, page->BitModelWord(reg.number), StatusPage::BitModelBit(reg.number), 4};
    int err = RegisterEnabler(client, fd, 0, command, byte_model, &same);
    if (!err) err = RegisterEnabler(client, fd, 0, command, bit_model, &same);
    if (err) {
      Release(client, *page, reg);
      return err;
    }
  }
  g_registrations->push_back(reg);
  *number = reg.number;
  return 0;
}

bool IsRfcName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (c == ';' || isspace(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

int RfcRegister(Client& client, int fd, uint64_t arg) {
  std::string name;
  if (int err = CopyStringFromUser(arg, kRfcMaxName, &name)) return -err;
  if (!IsRfcName(name)) return -EINVAL;
  ino_t file;
  if (!FileOf(fd, &file)) return -EBADF;
  std::lock_guard lock(g_mu);
  // One event per descriptor.
  if (g_rfc_files->contains(file)) return -EMFILE;
  Registration done;
  uint32_t number = 0;
  if (int err = RegisterOnPage(client, fd, name + kRfcFields, &done, &number)) return -err;
  (*g_rfc_files)[file] = RfcFile{number, done.write_index};
  return static_cast<int>(number);
}

}  // namespace

int RegisterV1(Client& client, int fd, uint64_t arg) {
  UserRegV1 reg;
  if (CopyFromUser(&reg, arg, sizeof(reg))) return EFAULT;
  std::string command;
  if (int err = CopyStringFromUser(reg.name_args, schema::kMaxCommandBytes, &command)) return err;
  std::lock_guard lock(g_mu);
  Registration done;
  uint32_t number = 0;
  if (int err = RegisterOnPage(client, fd, command, &done, &number)) return err;
  CopyToUser(arg + offsetof(UserRegV1, status_index), &number, sizeof(number));
  CopyToUser(arg + offsetof(UserRegV1, write_index), &done.write_index, sizeof(done.write_index));
  return 0;
}

int RfcIoctl(int fd, unsigned long request, void* arg) {
  if (request != kRfcIocsReg && request != kRfcIocsDel) return Fail(ENOTTY);
  Client* client = Client::Get();
  if (!client) return Fail(EBADF);
  auto addr = reinterpret_cast<uint64_t>(arg);
  if (request == kRfcIocsReg) {
    int result = RfcRegister(*client, fd, addr);
    return result < 0 ? Fail(-result) : result;
  }
  std::string name;
  if (int err = CopyStringFromUser(addr, kRfcMaxName, &name)) return Fail(err);
  int err = DeleteEvent(*client, name);
  return err ? Fail(err) : 0;
}

ssize_t RfcWrite(int fd, const void* buf, size_t count) {
  if (count == 0) return Fail(EFAULT);
  ino_t file;
  if (!FileOf(fd, &file)) return Fail(EBADF);
  RfcFile rfc;
  {
    std::lock_guard lock(g_mu);
    auto it = g_rfc_files->find(file);
    if (it == g_rfc_files->end()) return Fail(ENOENT);
    rfc = it->second;
  }
  // As the RFC: a write to an event nobody traces succeeds and goes nowhere.
  if (StatusPage::IfCreated()->ByteAt(rfc.number) == 0) return static_cast<ssize_t>(count);
  int32_t datalen = static_cast<int32_t>(count);
  uint32_t loc = static_cast<uint32_t>((count + 1) << 16) | kRfcDataOffset;
  char nul = 0;
  iovec iov[] = {{&rfc.write_index, sizeof(rfc.write_index)},
                 {&datalen, sizeof(datalen)},
                 {&loc, sizeof(loc)},
                 {const_cast<void*>(buf), count},
                 {&nul, 1}};
  if (udiag_writev(fd, iov, 5) < 0 && errno != EBADF) return -1;
  return static_cast<ssize_t>(count);
}

void* MapStatusPage(void* addr, size_t len, int prot, int flags, off_t offset, bool rfc) {
  bool one_page = len > 0 && len <= kStatusPageSize;
  if (rfc && !one_page) {
    errno = EFAULT;
    return MAP_FAILED;
  }
  if (!rfc && (!one_page || offset != 0 || prot != PROT_READ || (flags & MAP_TYPE) != MAP_SHARED)) {
    errno = EINVAL;
    return MAP_FAILED;
  }
  StatusPage* page = StatusPage::Get();
  if (!page) return MAP_FAILED;
  return page->MapReadOnly(addr, flags);
}

void ForgetStatusViews(void* addr, size_t len) {
  if (StatusPage* page = StatusPage::IfCreated()) page->ForgetViews(reinterpret_cast<uint64_t>(addr), len);
}

void ReleaseOnClose(int fd) {
  std::lock_guard lock(g_mu);
  if (g_registrations->empty()) return;
  ino_t file;
  if (!FileOf(fd, &file)) return;
  for (int other : DataFiles().Descriptors()) {
    ino_t other_file;
    if (other != fd && FileOf(other, &other_file) && other_file == file) return;
  }
  Client* client = Client::Get();
  StatusPage* page = StatusPage::IfCreated();
  if (!client || !page) return;
  std::erase_if(*g_registrations, [&](const PageRegistration& reg) {
    if (reg.file != file) return false;
    Release(*client, *page, reg);
    return true;
  });
  g_rfc_files->erase(file);
}

void DataFileReplaced(ino_t before, ino_t after) {
  std::lock_guard lock(g_mu);
  for (PageRegistration& reg : *g_registrations) {
    if (reg.file == before) reg.file = after;
  }
  if (auto node = g_rfc_files->extract(before)) {
    node.key() = after;
    g_rfc_files->insert(std::move(node));
  }
}

void ForkPrepare() {
  g_mu.lock();
  if (StatusPage* page = StatusPage::IfCreated()) page->ForkPrepare();
}

void ForkParent() {
  if (StatusPage* page = StatusPage::IfCreated()) page->ForkParent();
  g_mu.unlock();
}

void ForkChild() {
  if (StatusPage* page = StatusPage::IfCreated()) page->ForkChild();
  g_mu.unlock();
}

}  // namespace udiag::producer::legacy
