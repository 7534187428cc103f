/*
 * mmio.h - memory-access probes (the kernel's kmmio, in user space).
 *
 * A probe covers [addr, addr+len) of this process. The pages it covers are
 * kept PROT_NONE; every access to them raises SIGSEGV, the library finds the
 * probe, calls its pre handler, performs the access, then calls its post
 * handler with the value. See docs/mmio.md for the modes, the alias views and
 * the rules for signal handlers.
 *
 * Exported from libudiag-mmio.so (and the STATIC udiag_mmio). All functions
 * except the handlers' own calls are control-path calls: they may block and
 * allocate, and must not be called from a probe handler.
 */
#ifndef UDIAG_MMIO_H
#define UDIAG_MMIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define UDIAG_MMIO_API __attribute__((visibility("default")))
#else
#define UDIAG_MMIO_API
#endif

enum udiag_mmio_dir { UDIAG_MMIO_READ = 1, UDIAG_MMIO_WRITE = 2 }; /* read-modify-write = both bits */

enum udiag_mmio_mode {
	UDIAG_MMIO_EMULATE = 0,     /* design B (default): decode + emulate through an alias view */
	UDIAG_MMIO_REBASE_STEP = 1, /* design B': rebase the address register onto the alias, single-step, restore */
	UDIAG_MMIO_SINGLE_STEP = 2, /* design A: kmmio-faithful: open the page, single-step, re-arm */
};

/* How an access was performed (udiag_mmio_access.how). */
enum udiag_mmio_how {
	UDIAG_MMIO_HOW_EMULATED = 0, /* B: emulated through the alias view */
	UDIAG_MMIO_HOW_REBASED = 1,  /* B': executed on the alias view with TF */
	UDIAG_MMIO_HOW_STEPPED = 2,  /* A: executed on the opened page with TF */
};

struct udiag_mmio_access {
	uintptr_t addr;    /* effective address of the access (first byte); the fault address when !decoded */
	uintptr_t ip;      /* address of the accessing instruction */
	uint32_t width;    /* bytes accessed; 0 when !decoded */
	uint32_t dir;      /* udiag_mmio_dir bits (from the page-fault error code when !decoded) */
	int32_t tid;       /* thread that accessed */
	int32_t decoded;   /* 0 when the instruction was not decoded (mmiotrace's UNKNOWN) */
	uint8_t insn[16];  /* instruction bytes (insn_len valid; the first 15 bytes at ip when !decoded) */
	uint32_t insn_len;
	uint8_t value[64]; /* post handler: bytes read (READ) or written (WRITE), little-endian, first `width` valid */
	/* Added after the first draft: */
	int32_t value_valid; /* post handler: 1 when value holds the accessed bytes (always in mode B) */
	uint32_t how;        /* udiag_mmio_how */
};

struct udiag_mmio_probe;

/* Handlers run in signal context on the accessing thread: async-signal-safe
 * only (no malloc, no locks, no stdio). They may access probed memory (the
 * access is probed in turn) but must not call udiag_mmio_* functions. */
typedef void (*udiag_mmio_pre_handler)(struct udiag_mmio_probe *probe,
				       const struct udiag_mmio_access *access, void *ucontext);
typedef void (*udiag_mmio_post_handler)(struct udiag_mmio_probe *probe,
					const struct udiag_mmio_access *access);

struct udiag_mmio_probe {
	uintptr_t addr;               /* any alignment */
	size_t len;
	udiag_mmio_pre_handler pre;   /* before the access takes effect; may be NULL */
	udiag_mmio_post_handler post; /* after, with the value; may be NULL */
	void *priv;                   /* caller's */
	void *internal[4];            /* library's */
};

/* 0, or -EBUSY once a probe is registered, -EINVAL for an unknown mode. */
UDIAG_MMIO_API int udiag_mmio_set_mode(enum udiag_mmio_mode mode);
UDIAG_MMIO_API enum udiag_mmio_mode udiag_mmio_get_mode(void);

/* Declares how to make the alias view of [addr, addr+len): a second mmap of
 * `fd` at `offset` (fd may be closed afterwards). Needed for memory the library
 * cannot find a second view of by itself. 0 or -errno (-EINVAL when addr or
 * offset is not page-aligned, -EEXIST when it overlaps a declared region). */
UDIAG_MMIO_API int udiag_mmio_register_region(void *addr, size_t len, int fd, off_t offset);
/* 0, -ENOENT when no region starts at addr, -EBUSY while probes use it. */
UDIAG_MMIO_API int udiag_mmio_unregister_region(void *addr);

/* 0; -EEXIST when it overlaps a registered probe; -EINVAL for len 0 or
 * unmapped memory; -ENOTSUP when the mode needs an alias view and there is
 * none. Several probes per page and probes spanning pages are fine. The probe
 * must stay valid until udiag_mmio_unregister_probe() returns. */
UDIAG_MMIO_API int udiag_mmio_register_probe(struct udiag_mmio_probe *probe);
/* On return no handler of `probe` runs or will run again (other threads
 * included). Unknown probes are ignored. */
UDIAG_MMIO_API void udiag_mmio_unregister_probe(struct udiag_mmio_probe *probe);

/* Gives the calling thread an alternate signal stack (sized from
 * AT_MINSIGSTKSZ) unless it has one, so probe faults are handled even on a
 * nearly full stack. Done automatically for the thread that registers a probe;
 * call it in other threads that touch probed memory. 0 or -errno. */
UDIAG_MMIO_API int udiag_mmio_thread_init(void);

#ifdef __cplusplus
}
#endif

#endif /* UDIAG_MMIO_H */
