/*
 * An unmodified user_events program (kernel ABI only) that outlives its
 * daemon: run under LD_PRELOAD=libudiag-preload.so by run_dropin_restart.sh,
 * which kills udiagd and starts another while this runs.
 *
 * Registers "dropin_restart u32 seq" and, until SIGTERM, writes it every
 * millisecond while its bit is set (seq = writes that succeeded). Prints
 * "enabled N" / "disabled N" each time the bit changes. Exit status 0 after
 * SIGTERM; 1 when a call fails (a write may fail only with EBADF: the event
 * was disabled, the daemon gone).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "register_event.h"

static volatile int enabled;
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(void)
{
	signal(SIGTERM, on_term);
	int fd = open("/sys/kernel/tracing/user_events_data", O_RDWR);
	CHECK(fd >= 0);
	uint32_t index = register_event(fd, "dropin_restart u32 seq", 0, &enabled);
	uint32_t seq = 0;
	int last = 0;
	while (!stop) {
		int now = enabled & 1;
		if (now != last) {
			printf("%s %u\n", now ? "enabled" : "disabled", seq);
			fflush(stdout);
			last = now;
		}
		if (now) {
			struct iovec iov[] = {{&index, sizeof(index)}, {&seq, sizeof(seq)}};
			if (writev(fd, iov, 2) >= 0)
				seq++;
			else
				CHECK(errno == EBADF);
		}
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	return 0;
}
