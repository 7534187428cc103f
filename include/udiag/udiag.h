/*
 * udiag.h - the user_events ABI, served by udiagd instead of the kernel.
 *
 * A program opens a data file with udiag_open(), registers events on it with
 * udiag_ioctl(fd, DIAG_IOCSREG, &reg), tests its enable bit, and writes
 * [write_index][payload] with udiag_write()/udiag_writev(). Every call has the
 * kernel's semantics and errno values (see docs/api-c.md and docs/compat.md):
 * code written for /sys/kernel/tracing/user_events_data works by replacing
 * open/ioctl/write/writev/close with the udiag_ calls.
 *
 * The structures and constants below are the kernel's uapi ones
 * (<linux/user_events.h>); if that header was included first, its definitions
 * are used and these are skipped, so both can coexist in one translation unit.
 */
#ifndef UDIAG_UDIAG_H
#define UDIAG_UDIAG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifndef _UAPI_LINUX_USER_EVENTS_H
#define _UAPI_LINUX_USER_EVENTS_H

#define USER_EVENTS_SYSTEM "user_events"
#define USER_EVENTS_MULTI_SYSTEM "user_events_multi"
#define USER_EVENTS_PREFIX "u:"

/* A __data_loc/__rel_loc word: low 16 bits offset, high 16 bits size. */
#define DYN_LOC(offset, size) ((size) << 16 | (offset))

/* Flags for user_reg.flags. */
enum user_reg_flag {
	/* The event outlives its last user; only an explicit delete removes it. */
	USER_EVENT_REG_PERSIST = 1U << 0,
	/* Same name with other fields becomes a new version, name.<hex id>. */
	USER_EVENT_REG_MULTI_FORMAT = 1U << 1,
	/* First value that is not a flag; any bit at or above it is EINVAL. */
	USER_EVENT_REG_MAX = 1U << 2,
};

/* Argument of DIAG_IOCSREG. size is sizeof(struct user_reg) as the caller
 * knows it; write_index is filled in on success. */
struct user_reg {
	uint32_t size;
	uint8_t enable_bit;   /* bit kept equal to "event is traced" */
	uint8_t enable_size;  /* 4 or 8: width of the word at enable_addr */
	uint16_t flags;       /* USER_EVENT_REG_* */
	uint64_t enable_addr; /* naturally aligned word in this process */
	uint64_t name_args;   /* "name[ type field[;type field...]]" */
	uint32_t write_index; /* out: prefix for writes on this data file */
} __attribute__((__packed__));

/* Argument of DIAG_IOCSUNREG: stop maintaining (disable_addr, disable_bit). */
struct user_unreg {
	uint32_t size;
	uint8_t disable_bit;
	uint8_t __reserved;
	uint16_t __reserved2;
	uint64_t disable_addr;
} __attribute__((__packed__));

#define DIAG_IOC_MAGIC '*'
#define DIAG_IOCSREG _IOWR(DIAG_IOC_MAGIC, 0, struct user_reg *)
#define DIAG_IOCSDEL _IOW(DIAG_IOC_MAGIC, 1, char *)
#define DIAG_IOCSUNREG _IOW(DIAG_IOC_MAGIC, 2, struct user_unreg *)

#endif /* _UAPI_LINUX_USER_EVENTS_H */

#define UDIAG_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Opens a data file on the daemon found in $UDIAG_DIR (else /run/udiag for
 * root, else $XDG_RUNTIME_DIR/udiag). Returns a file descriptor, or -1 with
 * errno: ENOENT when no daemon runs there, EACCES when the daemon refuses this
 * user as a producer. Like the kernel's, the descriptor is shared with
 * children across fork and stays open across exec unless O_CLOEXEC-marked.
 */
UDIAG_API int udiag_open(void);

/* DIAG_IOCSREG, DIAG_IOCSDEL or DIAG_IOCSUNREG on a data file; 0 or -1/errno.
 * Any other request is ENOTTY; a descriptor that is not a data file, EBADF. */
UDIAG_API int udiag_ioctl(int fd, unsigned long request, void *arg);

/* Writes one event: the first 4 bytes are the write_index, the rest the
 * payload. Returns the bytes consumed (index included) or -1/errno:
 * EFAULT (under 4 bytes, bad __data_loc/__rel_loc), EINVAL (negative index,
 * payload shorter than the static fields), ENOENT (index not registered on
 * this data file), EBADF (event not enabled). No system call is made. */
UDIAG_API ssize_t udiag_write(int fd, const void *buf, size_t count);
UDIAG_API ssize_t udiag_writev(int fd, const struct iovec *iov, int iovcnt);

/* Closes a data file; its write indexes die with the last descriptor. */
UDIAG_API int udiag_close(int fd);

#ifdef __cplusplus
}
#endif

#endif /* UDIAG_UDIAG_H */
