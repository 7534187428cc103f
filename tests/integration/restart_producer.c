/*
 * restart_producer - a long-running producer for the daemon-restart tests.
 *
 *   restart_producer NAME THREADS [DELAY_US]
 *
 * Registers "NAME u32 seq" once, then THREADS threads write it whenever its
 * enable bit is set (sleeping DELAY_US microseconds after each write, default
 * 0), until SIGTERM. scripts/soak.sh runs many of them. seq counts the writes that succeeded
 * (process-wide), so a trace shows which ones arrived. The main thread
 * prints "enabled N" / "disabled N" on stdout each time the bit changes
 * (N = writes succeeded so far); on SIGTERM it prints "done OK REFUSED" (the
 * writes that failed with EBADF: the event was disabled, the daemon gone)
 * and exits 0.
 *
 * Exit status: 0 after SIGTERM; 64 + errno when udiag_open fails;
 * 3 register failed; 5 a write failed with anything but EBADF.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <udiag/udiag.h>

#include "seq_event.h"

static unsigned int enabled;
static int data_fd;
static struct user_reg reg;
static volatile sig_atomic_t stop;
static long delay_us;
static unsigned long written, refused; /* __atomic */

static void on_term(int sig) {
	(void)sig;
	stop = 1;
}

static void sleep_us(long us) {
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}

static void *writer(void *arg) {
	(void)arg;
	while (!stop) {
		if (!(__atomic_load_n(&enabled, __ATOMIC_RELAXED) & 1)) {
			sleep_us(5000);
			continue;
		}
		uint32_t seq = (uint32_t)__atomic_load_n(&written, __ATOMIC_RELAXED);
		struct iovec iov[] = {
			{&reg.write_index, sizeof(reg.write_index)},
			{&seq, sizeof(seq)},
		};
		if (udiag_writev(data_fd, iov, 2) >= 0) {
			__atomic_fetch_add(&written, 1, __ATOMIC_RELAXED);
		} else if (errno == EBADF) {
			__atomic_fetch_add(&refused, 1, __ATOMIC_RELAXED);
		} else {
			fprintf(stderr, "restart_producer: write: %s\n", strerror(errno));
			exit(5);
		}
		if (delay_us > 0)
			sleep_us(delay_us);
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: restart_producer NAME THREADS [DELAY_US]\n");
		return 2;
	}
	int threads = atoi(argv[2]);
	delay_us = argc > 3 ? atol(argv[3]) : 0;
	signal(SIGTERM, on_term);
	data_fd = udiag_open();
	if (data_fd < 0) {
		int err = errno;
		fprintf(stderr, "restart_producer: udiag_open: %s\n", strerror(err));
		return 64 + err;
	}
	if (register_seq_event(data_fd, argv[1], &enabled, 0, &reg) < 0) {
		fprintf(stderr, "restart_producer: DIAG_IOCSREG: %s\n", strerror(errno));
		return 3;
	}
	pthread_t tids[64];
	if (threads < 1 || threads > 64)
		threads = 1;
	for (int i = 0; i < threads; i++)
		pthread_create(&tids[i], NULL, writer, NULL);
	unsigned int last = 0;
	printf("registered\n");
	fflush(stdout);
	while (!stop) {
		unsigned int now = __atomic_load_n(&enabled, __ATOMIC_RELAXED) & 1;
		if (now != last) {
			printf("%s %lu\n", now ? "enabled" : "disabled", __atomic_load_n(&written, __ATOMIC_RELAXED));
			fflush(stdout);
			last = now;
		}
		sleep_us(1000);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	printf("done %lu %lu\n", written, refused);
	udiag_close(data_fd);
	return 0;
}
