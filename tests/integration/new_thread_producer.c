/*
 * new_thread_producer - a producer whose thread starts writing while the
 * daemon may be stopped: lets a test check that a write never waits for it.
 *
 *   new_thread_producer NAME COUNT
 *
 * Registers "NAME u32 seq", waits (up to 5 s) until a consumer enables it,
 * raises SIGSTOP, and once continued starts a thread that writes seq =
 * 0..COUNT-1 (its first write hands the daemon a new ring).
 *
 * Exit status: 0 all written; 64 + errno when udiag_open fails; 128 + errno
 * when DIAG_IOCSREG fails; 3 never enabled; 5 a write failed.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <time.h>

#include "seq_event.h"

static int fd;
static unsigned int enabled;
static struct user_reg reg;
static unsigned int count;

static void *write_all(void *failed) {
	for (unsigned int seq = 0; seq < count; ++seq) {
		struct iovec io[2] = {{&reg.write_index, sizeof(reg.write_index)}, {&seq, sizeof(seq)}};
		if (udiag_writev(fd, io, 2) < 0) *(int *)failed = errno;
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: new_thread_producer NAME COUNT\n");
		return 2;
	}
	count = (unsigned int)strtoul(argv[2], NULL, 10);
	fd = udiag_open();
	if (fd < 0) return 64 + errno;
	if (register_seq_event(fd, argv[1], &enabled, 0, &reg) < 0) return 128 + errno;
	for (int i = 0; i < 5000 && !__atomic_load_n(&enabled, __ATOMIC_ACQUIRE); ++i) {
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	if (!__atomic_load_n(&enabled, __ATOMIC_ACQUIRE)) return 3;
	raise(SIGSTOP);
	int failed = 0;
	pthread_t writer;
	if (pthread_create(&writer, NULL, write_all, &failed) != 0) return 4;
	pthread_join(writer, NULL);
	if (failed) fprintf(stderr, "new_thread_producer: write: errno %d\n", failed);
	return failed ? 5 : 0;
}
