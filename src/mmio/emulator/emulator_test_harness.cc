#include "mmio/emulator/emulator_test_harness.h"

#include <Zydis/Zydis.h>
#include <cpuid.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>

extern "C" void udiag_emu_test_run(udiag::mmio::testing::Machine* machine, const void* code);
extern "C" void udiag_emu_test_return();

namespace udiag::mmio::testing {
namespace {

Harness* g_harness = nullptr;
FaultRecord* g_record = nullptr;

uint8_t* AliasOf(void* ctx, uintptr_t addr, size_t len) {
  auto* h = static_cast<Harness*>(ctx);
  const auto view = reinterpret_cast<uintptr_t>(h->view());
  const size_t size = Harness::kPages * Harness::kPageSize;
  if (addr + len <= view || addr >= view + size) return reinterpret_cast<uint8_t*>(addr);
  if (addr < view || addr + len > view + size) return nullptr;
  const size_t offset = addr - view;
  // Only page-sized pieces: page-crossing accesses must take the emulator's split path.
  if (offset / Harness::kPageSize != (offset + len - 1) / Harness::kPageSize) return nullptr;
  return h->alias() + offset;
}

void OnSegv(int, siginfo_t* info, void* raw) {
  auto* uc = static_cast<ucontext_t*>(raw);
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  const auto view = reinterpret_cast<uintptr_t>(g_harness ? g_harness->view() : nullptr);
  const size_t size = Harness::kPages * Harness::kPageSize;
  if (g_harness == nullptr || addr < view || addr >= view + size) {
    signal(SIGSEGV, SIG_DFL);  // not ours: crash at the instruction
    return;
  }
  FaultRecord& record = *g_record;
  __atomic_fetch_add(&record.faults, 1, __ATOMIC_RELAXED);
  DecodedInstruction decoded;
  ExecuteResult result{};
  const DecodeStatus status = Decode(*uc, &decoded);
  const bool ok = status == DecodeStatus::kOk && Execute(decoded, uc, AliasOf, g_harness, &result);
  if (record.faults == 1 || !ok) {
    record.status = status;
    record.decoded = decoded;
    record.result = result;
  }
  if (!ok) {
    ++record.failures;
    // Let the instruction run natively so the test reports the failure instead of looping.
    mprotect(g_harness->view(), size, PROT_READ | PROT_WRITE);
  }
}

}  // namespace

bool CpuHasAvx512() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const bool avx512f = (ebx >> 16) & 1, avx512bw = (ebx >> 30) & 1;
  return avx512f && avx512bw;
}

Harness::Harness() {
  const size_t size = kPages * kPageSize;
  fd_ = memfd_create("udiag-emulator-test", 0);
  if (fd_ < 0 || ftruncate(fd_, size) != 0) abort();
  view_ = static_cast<uint8_t*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
  alias_ = static_cast<uint8_t*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
  // The code page goes close to the view so RIP-relative operands can reach it.
  code_ = static_cast<uint8_t*>(mmap(view_ - 64 * kPageSize, kPageSize, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  stack_ = static_cast<uint8_t*>(mmap(nullptr, kStackSize, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (view_ == MAP_FAILED || alias_ == MAP_FAILED || code_ == MAP_FAILED || stack_ == MAP_FAILED) {
    abort();
  }
  signal_stack_.resize(256 * 1024);
  stack_t ss{};
  ss.ss_sp = signal_stack_.data();
  ss.ss_size = signal_stack_.size();
  sigaltstack(&ss, &old_stack_);
  struct sigaction action {};
  action.sa_sigaction = OnSegv;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigaction(SIGSEGV, &action, &old_action_);
  g_harness = this;
}

Harness::~Harness() {
  g_harness = nullptr;
  sigaction(SIGSEGV, &old_action_, nullptr);
  sigaltstack(&old_stack_, nullptr);
  munmap(view_, kPages * kPageSize);
  munmap(alias_, kPages * kPageSize);
  munmap(code_, kPageSize);
  munmap(stack_, kStackSize);
  close(fd_);
}

Harness::Outcome Harness::Run(const std::vector<uint8_t>& code, const Machine& in,
                              const std::vector<uint8_t>& memory, bool emulated,
                              uintptr_t rip_target) {
  const size_t region = kPages * kPageSize;
  memcpy(alias_, memory.data(), region);
  memcpy(stack_, memory.data() + region, kStackSize);

  // code, then "jmp *0(%rip)" to udiag_emu_test_return.
  mprotect(code_, kPageSize, PROT_READ | PROT_WRITE);
  memcpy(code_, code.data(), code.size());
  static constexpr uint8_t kJumpBack[] = {0xFF, 0x25, 0, 0, 0, 0};
  memcpy(code_ + code.size(), kJumpBack, sizeof(kJumpBack));
  const auto back = reinterpret_cast<uintptr_t>(&udiag_emu_test_return);
  memcpy(code_ + code.size() + sizeof(kJumpBack), &back, sizeof(back));
  if (rip_target != 0) {
    ZydisDecoder decoder;
    ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    ZydisDecodedInstruction insn;
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, nullptr, code_, code.size(), &insn))) abort();
    const int64_t disp = static_cast<int64_t>(rip_target) -
                         static_cast<int64_t>(reinterpret_cast<uintptr_t>(code_) + insn.length);
    if (disp != static_cast<int32_t>(disp)) abort();  // code page not within reach
    const int32_t disp32 = static_cast<int32_t>(disp);
    memcpy(code_ + insn.raw.disp.offset, &disp32, sizeof(disp32));
  }
  mprotect(code_, kPageSize, PROT_READ | PROT_EXEC);

  Outcome out{};
  out.machine = in;
  if (emulated) Arm(&out.fault);
  udiag_emu_test_run(&out.machine, code_);
  Disarm();

  out.memory.assign(alias_, alias_ + region);
  out.memory.insert(out.memory.end(), stack_, stack_ + kStackSize);
  return out;
}

size_t Harness::MemoryIndex(uintptr_t addr) const {
  const auto view = reinterpret_cast<uintptr_t>(view_), stack = reinterpret_cast<uintptr_t>(stack_);
  if (addr >= view && addr < view + kPages * kPageSize) return addr - view;
  if (addr >= stack && addr < stack + kStackSize) return kPages * kPageSize + (addr - stack);
  return SIZE_MAX;
}

void Harness::Arm(FaultRecord* record) {
  g_record = record;
  mprotect(view_, kPages * kPageSize, PROT_NONE);
}

void Harness::Disarm() {
  mprotect(view_, kPages * kPageSize, PROT_READ | PROT_WRITE);
  g_record = nullptr;
}

Machine RandomMachine(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Machine m{};
  for (auto& r : m.gpr) r = rng();
  m.rflags = (rng() & 0x8D5) | 0x202;
  for (auto& reg : m.zmm) {
    for (auto& b : reg) b = static_cast<uint8_t>(rng());
  }
  for (auto& k : m.k) k = rng();
  return m;
}

std::vector<uint8_t> RandomBytes(uint64_t seed, size_t len) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> bytes(len);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

}  // namespace udiag::mmio::testing
