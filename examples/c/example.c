/*
 * example_c - a user_events producer in plain C against include/udiag/udiag.h.
 *
 * Registers "example_c u32 count; __rel_loc char[] message", then writes
 * a few events. Each write first tests the enable bit: when nobody traces the
 * event, the cost is one load and a branch.
 *
 *   udiag trace -e example_c -- ./example_c
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <udiag/udiag.h>
#include <unistd.h>

static unsigned int enabled; /* bit 31 follows "someone traces example_c" */

int main(int argc, char **argv) {
	int count = argc > 1 ? atoi(argv[1]) : 5;
	int fd = udiag_open();
	if (fd < 0) {
		fprintf(stderr, "example_c: udiag_open: %s (is udiagd running?)\n", strerror(errno));
		return 1;
	}
	struct user_reg reg = {0};
	reg.size = sizeof(reg);
	reg.enable_bit = 31;
	reg.enable_size = sizeof(enabled);
	reg.enable_addr = (uint64_t)(uintptr_t)&enabled;
	reg.name_args = (uint64_t)(uintptr_t)"example_c u32 count; __rel_loc char[] message";
	if (udiag_ioctl(fd, DIAG_IOCSREG, &reg) < 0) {
		fprintf(stderr, "example_c: DIAG_IOCSREG: %s\n", strerror(errno));
		return 1;
	}
	for (uint32_t i = 0; i < (uint32_t)count; i++) {
		if (!(enabled & (1u << 31)))
			continue;
		char message[32];
		snprintf(message, sizeof(message), "hello #%u", i);
		uint32_t len = strlen(message) + 1;
		/* __rel_loc: offset from the end of the loc word to the data. */
		uint32_t loc = DYN_LOC(0, len);
		struct iovec iov[] = {
			{&reg.write_index, sizeof(reg.write_index)},
			{&i, sizeof(i)},
			{&loc, sizeof(loc)},
			{message, len},
		};
		if (udiag_writev(fd, iov, 4) < 0)
			fprintf(stderr, "example_c: write: %s\n", strerror(errno));
	}
	struct user_unreg unreg = {0};
	unreg.size = sizeof(unreg);
	unreg.disable_bit = 31;
	unreg.disable_addr = (uint64_t)(uintptr_t)&enabled;
	udiag_ioctl(fd, DIAG_IOCSUNREG, &unreg);
	udiag_close(fd);
	return 0;
}
