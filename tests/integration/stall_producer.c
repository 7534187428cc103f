/*
 * stall_producer - opens udiag, stops itself, then registers an event: lets a
 * test stop the daemon between the two calls.
 *
 *   stall_producer NAME
 *
 * After udiag_open succeeds it raises SIGSTOP; once continued it registers
 * "NAME u32 seq" and writes one event.
 *
 * Exit status: 0 all done; 64 + errno when udiag_open fails; 128 + errno
 * when DIAG_IOCSREG fails; 5 a write failed.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <udiag/udiag.h>

static unsigned int enabled;

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: stall_producer NAME\n");
		return 2;
	}
	int fd = udiag_open();
	if (fd < 0) {
		int err = errno;
		fprintf(stderr, "stall_producer: udiag_open: %s\n", strerror(err));
		return 64 + err;
	}
	raise(SIGSTOP);
	char command[256];
	snprintf(command, sizeof(command), "%s u32 seq", argv[1]);
	struct user_reg reg;
	memset(&reg, 0, sizeof(reg));
	reg.size = sizeof(reg);
	reg.enable_size = sizeof(enabled);
	reg.enable_addr = (uint64_t)(uintptr_t)&enabled;
	reg.name_args = (uint64_t)(uintptr_t)command;
	if (udiag_ioctl(fd, DIAG_IOCSREG, &reg) < 0) {
		int err = errno;
		fprintf(stderr, "stall_producer: DIAG_IOCSREG: %s\n", strerror(err));
		return 128 + err;
	}
	unsigned int seq = 0;
	struct iovec io[2] = {{&reg.write_index, sizeof(reg.write_index)}, {&seq, sizeof(seq)}};
	if (udiag_writev(fd, io, 2) < 0 && errno != EBADF) return 5;
	return 0;
}
