/*
 * hammer_producer - a well-behaved producer for the integration tests.
 *
 *   hammer_producer NAME COUNT [DELAY_US] [persist]
 *
 * Registers "NAME u32 seq", waits (up to 10 s) until the event is enabled,
 * then writes COUNT events carrying seq = 0, 1, ..., COUNT-1, sleeping
 * DELAY_US microseconds between writes. Prints "enabled" on stdout once the
 * event is enabled.
 *
 * Exit status: 0 all written; 64 + errno when udiag_open fails (so a test can
 * tell EACCES from ENOENT); 3 register failed; 4 never enabled; 5 a write
 * failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <udiag/udiag.h>

#include "seq_event.h"

static unsigned int enabled;

static void sleep_us(long us) {
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
	}
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: hammer_producer NAME COUNT [DELAY_US] [persist]\n");
		return 2;
	}
	const char *name = argv[1];
	long count = atol(argv[2]);
	long delay_us = argc > 3 ? atol(argv[3]) : 0;
	int persist = argc > 4 && strcmp(argv[4], "persist") == 0;

	int fd = udiag_open();
	if (fd < 0) {
		int err = errno;
		fprintf(stderr, "hammer_producer: udiag_open: %s\n", strerror(err));
		return 64 + err;
	}
	struct user_reg reg;
	if (register_seq_event(fd, name, &enabled, persist ? USER_EVENT_REG_PERSIST : 0, &reg) < 0) {
		fprintf(stderr, "hammer_producer: DIAG_IOCSREG: %s\n", strerror(errno));
		return 3;
	}
	for (int waited_ms = 0; !(__atomic_load_n(&enabled, __ATOMIC_ACQUIRE) & 1); waited_ms++) {
		if (waited_ms >= 10000) {
			fprintf(stderr, "hammer_producer: %s never enabled\n", name);
			return 4;
		}
		sleep_us(1000);
	}
	printf("enabled\n");
	fflush(stdout);
	for (uint32_t seq = 0; seq < (uint32_t)count; seq++) {
		struct iovec iov[] = {
			{&reg.write_index, sizeof(reg.write_index)},
			{&seq, sizeof(seq)},
		};
		if (udiag_writev(fd, iov, 2) < 0) {
			fprintf(stderr, "hammer_producer: write #%u: %s\n", seq, strerror(errno));
			return 5;
		}
		if (delay_us > 0)
			sleep_us(delay_us);
	}
	udiag_close(fd);
	return 0;
}
