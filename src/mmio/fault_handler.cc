#include "mmio/fault_handler.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "mmio/access_event.h"
#include "mmio/emulator/emulator.h"
#include "mmio/rebase_check.h"
#include "mmio/registry.h"

namespace udiag::mmio {
namespace {

constexpr greg_t kTrapFlag = 0x100;
constexpr int kMaxOpenPages = 4;

// A single step in flight on this thread (designs B' and A): set up by the
// SIGSEGV handler, finished by the SIGTRAP after the instruction.
struct Step {
  bool active;
  unsigned section;  // reader section held across the step
  uintptr_t ip;
  greg_t saved_trap_flag;
  int rebased_greg;  // B': the register moved onto the alias, or -1
  intptr_t rebase_delta;
  uintptr_t alias_low, alias_high;  // B': restore the register while it points in here
  PageState* opened[kMaxOpenPages];  // A: pages opened for this step
  int opened_count;
  AccessEvent event;
};
__thread Step t_step __attribute__((tls_model("initial-exec")));

// The last protection fault this thread saw on no armed page (see IsStaleFault).
struct UnknownFault {
  uintptr_t ip;
  uintptr_t addr;
  uint64_t generation;
};
__thread UnknownFault t_unknown_fault __attribute__((tls_model("initial-exec")));

// A protection fault on a page that is not (or no longer) armed: while a
// disarm is under way, or if a page was disarmed since this thread last saw
// this very fault, the fault may predate the disarm's last restore and
// retrying the instruction is the answer. A real fault repeats and is then
// given to the program.
bool IsStaleFault(const siginfo_t* info, uintptr_t ip) {
  if (info->si_code != SEGV_ACCERR) return false;
  if (DisarmInProgress()) return true;  // its page may be about to get its protection back
  const uint64_t generation = DisarmGeneration();
  if (generation == 0) return false;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  UnknownFault& last = t_unknown_fault;
  if (last.ip == ip && last.addr == addr && last.generation == generation) return false;
  last = UnknownFault{ip, addr, generation};
  return true;
}

[[noreturn]] void Die(const char* message) {
  ssize_t ignored = write(STDERR_FILENO, message, strlen(message));
  (void)ignored;
  abort();
}

void Protect(const PageState* page, int prot) {
  mprotect(reinterpret_cast<void*>(page->page), kPageSize, prot);
}

// Design A: makes `page` accessible for this thread's step (and, the kmmio
// window, for every other thread until the step ends).
void OpenPage(Step& step, PageState* page) {
  for (int i = 0; i < step.opened_count; ++i) {
    if (step.opened[i] == page) {
      // Another thread's step ended and re-armed the page under us: open it again.
      Protect(page, page->original_prot);
      return;
    }
  }
  if (step.opened_count == kMaxOpenPages) Die("udiag-mmio: an instruction touches too many probed pages\n");
  step.opened[step.opened_count++] = page;
  if (page->open_count.fetch_add(1) == 0) Protect(page, page->original_prot);
}

void ClosePage(PageState* page) {
  if (page->open_count.fetch_sub(1) != 1) return;
  if (!page->armed.load()) return;
  Protect(page, PROT_NONE);
  // The registry disarmed it meanwhile and may have run before our mprotect: undo.
  if (!page->armed.load()) Protect(page, page->original_prot);
}

uint8_t* TranslateForExecute(void* snapshot, uintptr_t addr, size_t len) {
  return static_cast<const Snapshot*>(snapshot)->Translate(addr, len);
}

// Design B': whether the operand's address comes from a register that can be
// moved onto the alias view.
int RebaseRegister(const DecodedInstruction& insn) {
  if (insn.rip_relative || insn.second_address != 0) return -1;
  const int greg = insn.base_greg >= 0 ? insn.base_greg : insn.scale == 1 ? insn.index_greg : -1;
  return greg >= 0 && RebaseIsSafe(insn) ? greg : -1;
}

// Starts a single step of the faulting instruction; the section stays open until the trap.
void BeginStep(ucontext_t* uc, unsigned section, const AccessEvent& event) {
  Step& step = t_step;
  step.section = section;
  step.ip = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  step.saved_trap_flag = uc->uc_mcontext.gregs[REG_EFL] & kTrapFlag;
  step.event = event;
  uc->uc_mcontext.gregs[REG_EFL] |= kTrapFlag;
  step.active = true;
}

bool TryRebase(const Snapshot& snap, const DecodedInstruction& insn, ucontext_t* uc) {
  const int greg = RebaseRegister(insn);
  if (greg < 0) return false;
  uint8_t* alias = snap.Translate(insn.address, insn.width);
  if (alias == nullptr || reinterpret_cast<uintptr_t>(alias) == insn.address) return false;
  Step& step = t_step;
  step.rebased_greg = greg;
  step.rebase_delta = reinterpret_cast<intptr_t>(alias) - static_cast<intptr_t>(insn.address);
  step.alias_low = PageOf(reinterpret_cast<uintptr_t>(alias)) - kPageSize;
  step.alias_high = step.alias_low + 3 * kPageSize;
  uc->uc_mcontext.gregs[greg] += step.rebase_delta;
  return true;
}

}  // namespace

bool HandleAccessFault(siginfo_t* info, ucontext_t* uc) {
  if (info->si_code <= 0) return false;  // sent by kill/raise, not a fault
  const uintptr_t fault_addr = reinterpret_cast<uintptr_t>(info->si_addr);
  Quiescence& sections = ReaderSections();
  const unsigned section = sections.Enter();
  const Snapshot* snap = CurrentSnapshot();
  PageState* page = snap != nullptr ? snap->FindPage(fault_addr) : nullptr;
  const uintptr_t ip = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  if (page == nullptr) {
    sections.Leave(section);
    return IsStaleFault(info, ip);
  }
  if (!page->armed.load()) {
    // Its last probe is leaving; a late re-arm protected it again. Retry unprotected.
    Protect(page, page->original_prot);
    sections.Leave(section);
    return true;
  }
  if (t_step.active && ip == t_step.ip) {
    // The stepped instruction touched another probed page, or one re-armed under us.
    OpenPage(t_step, page);
    sections.Leave(section);
    return true;
  }

  DecodedInstruction insn;
  const DecodeStatus status = Decode(*uc, &insn);
  AccessEvent event;
  event.Describe(*snap, insn, status, fault_addr, *uc);
  event.RunPre(uc);
  if (snap->mode == UDIAG_MMIO_EMULATE && status == DecodeStatus::kOk) {
    ExecuteResult result;
    if (Execute(insn, uc, TranslateForExecute, const_cast<Snapshot*>(snap), &result)) {
      event.SetValues(result);
      event.RunPost();
      sections.Leave(section);
      return true;
    }
  }
  // One step per thread at a time; a signal handler that interrupts a step
  // may touch probed memory only where it can be emulated.
  if (t_step.active) Die("udiag-mmio: a signal handler touched probed memory during a single step\n");
  const bool decoded = status == DecodeStatus::kOk || status == DecodeStatus::kUnsupported;
  t_step.opened_count = 0;
  t_step.rebased_greg = -1;
  if (snap->mode != UDIAG_MMIO_SINGLE_STEP && decoded && TryRebase(*snap, insn, uc)) {
    event.SetHow(UDIAG_MMIO_HOW_REBASED);
  } else {
    event.SetHow(UDIAG_MMIO_HOW_STEPPED);
    OpenPage(t_step, page);
  }
  BeginStep(uc, section, event);
  return true;
}

// A step ends with its single-step trap, TRAP_TRACE. The kernel says
// TRAP_BRKPT for a debug trap whose cause DR6 does not show (as for icebp),
// and a virtual CPU now and then loses the single-step bit there: taken as
// the step's end too while the context still single-steps. An int3 is
// SI_KERNEL, never either.
bool HandleStepTrap(siginfo_t* info, ucontext_t* uc) {
  greg_t* gregs = uc->uc_mcontext.gregs;
  const bool stepping = (gregs[REG_EFL] & kTrapFlag) != 0;
  const bool step_trap = info->si_code == TRAP_TRACE || (info->si_code == TRAP_BRKPT && stepping);
  if (!t_step.active || !step_trap) return false;
  Step& step = t_step;
  if (step.rebased_greg >= 0) {
    const uintptr_t value = static_cast<uintptr_t>(gregs[step.rebased_greg]);
    // Unless the instruction overwrote it (mov rax, [rax]), move it back.
    if (value >= step.alias_low && value < step.alias_high) gregs[step.rebased_greg] -= step.rebase_delta;
  }
  for (int i = 0; i < step.opened_count; ++i) ClosePage(step.opened[i]);
  if (!step.saved_trap_flag) gregs[REG_EFL] &= ~kTrapFlag;
  // Copied out and released first: post may touch probed memory and step again.
  const unsigned section = step.section;
  AccessEvent event = step.event;
  step.active = false;
  event.RunPost();
  ReaderSections().Leave(section);
  return true;
}

}  // namespace udiag::mmio
