/*
 * hostile_producer - a producer that corrupts its own ring.
 *
 *   hostile_producer NAME DURATION_MS
 *
 * Registers "NAME u32 seq", waits until enabled, writes one event (so this
 * thread's ring exists and has been handed to udiagd), pauses 200 ms so
 * that record is drained, then for DURATION_MS
 * repeatedly fills every /memfd:udiag-ring mapping of the process with random
 * bytes, interleaved with more writes. udiagd must survive this.
 *
 * Exit status: 0 done; 2 usage; 3 open/register failed; 4 never enabled;
 * 5 first write failed; 6 no ring mapping found.
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

static long now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

struct region {
	unsigned char *start;
	size_t size;
};

/* Writable mappings of the ring memfd, from /proc/self/maps. */
static int find_rings(struct region *out, int max) {
	FILE *maps = fopen("/proc/self/maps", "r");
	if (!maps)
		return 0;
	char line[512];
	int n = 0;
	while (n < max && fgets(line, sizeof(line), maps)) {
		if (!strstr(line, "/memfd:udiag-ring"))
			continue;
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[1] != 'w')
			continue;
		out[n].start = (unsigned char *)lo;
		out[n].size = hi - lo;
		n++;
	}
	fclose(maps);
	return n;
}

static ssize_t write_seq(int fd, uint32_t index, uint32_t seq) {
	struct iovec iov[] = {{&index, sizeof(index)}, {&seq, sizeof(seq)}};
	return udiag_writev(fd, iov, 2);
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: hostile_producer NAME DURATION_MS\n");
		return 2;
	}
	long duration_ms = atol(argv[2]);
	int fd = udiag_open();
	if (fd < 0) {
		fprintf(stderr, "hostile_producer: udiag_open: %s\n", strerror(errno));
		return 3;
	}
	struct user_reg reg;
	if (register_seq_event(fd, argv[1], &enabled, 0, &reg) < 0) {
		fprintf(stderr, "hostile_producer: DIAG_IOCSREG: %s\n", strerror(errno));
		return 3;
	}
	long deadline = now_ms() + 10000;
	while (!(__atomic_load_n(&enabled, __ATOMIC_ACQUIRE) & 1)) {
		if (now_ms() > deadline)
			return 4;
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	if (write_seq(fd, reg.write_index, 0) < 0) {
		fprintf(stderr, "hostile_producer: first write: %s\n", strerror(errno));
		return 5;
	}
	/* Give udiagd time to drain the intact first record before the attack. */
	struct timespec pause = {0, 200 * 1000000L};
	nanosleep(&pause, NULL);
	struct region rings[16];
	int nrings = find_rings(rings, 16);
	if (nrings == 0) {
		fprintf(stderr, "hostile_producer: no /memfd:udiag-ring mapping\n");
		return 6;
	}
	printf("corrupting %d ring mapping(s)\n", nrings);
	fflush(stdout);
	srand((unsigned)now_ms());
	uint32_t seq = 1;
	long end = now_ms() + duration_ms;
	unsigned long rounds = 0;
	while (now_ms() < end) {
		for (int r = 0; r < nrings; r++) {
			uint32_t *p = (uint32_t *)rings[r].start;
			for (size_t i = 0; i < rings[r].size / sizeof(uint32_t); i++)
				p[i] = ((uint32_t)rand() << 16) ^ (uint32_t)rand();
		}
		/* Errors are expected: the ring is garbage. */
		for (int i = 0; i < 8; i++)
			write_seq(fd, reg.write_index, seq++);
		rounds++;
	}
	printf("done: %lu rounds\n", rounds);
	return 0;
}
