/*
 * mmio_driver - an example "driver" of udiag-simdev (simdev_regs.h): maps
 * the device file and talks to it with register reads and writes of 1, 2, 4
 * and 8 bytes, a memcpy into the buffer page and a polling loop.
 *
 *   mmio_driver PATH [--fork | --threads N]
 *
 * Run it under mmiotrace to see every access:
 *   udiag-simdev /dev/shm/simdev &
 *   udiag mmiotrace --map /dev/shm/simdev -- ./mmio_driver /dev/shm/simdev
 *
 * With --fork a child process also writes SCRATCH (0xc0ffee) and reads ID.
 * With --threads N, N threads each read ID SIMDEV_THREAD_READS times.
 * On stderr it prints the range of its own code and its pid(s), which the
 * tests use to check the logged program counters.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simdev_regs.h"

#define REG8(base, off) (*(volatile uint8_t *)((base) + (off)))
#define REG16(base, off) (*(volatile uint16_t *)((base) + (off)))
#define REG32(base, off) (*(volatile uint32_t *)((base) + (off)))
#define REG64(base, off) (*(volatile uint64_t *)((base) + (off)))

#define SIMDEV_THREAD_READS 100

extern const char __executable_start[], etext[]; /* this program's code, from the linker */

static int fail(const char *what) {
	fprintf(stderr, "mmio_driver: %s\n", what);
	return 1;
}

/* Identification and the scratch register, with every access width. */
static int probe_device(uint8_t *dev) {
	if (REG32(dev, SIMDEV_REG_ID) != SIMDEV_ID)
		return fail("wrong ID");
	if (REG16(dev, SIMDEV_REG_VERSION) != SIMDEV_VERSION)
		return fail("wrong VERSION");
	if (REG8(dev, SIMDEV_REG_ID + 3) != (SIMDEV_ID >> 24))
		return fail("wrong ID byte");
	REG64(dev, SIMDEV_REG_SCRATCH) = 0x1122334455667788ull;
	if (REG64(dev, SIMDEV_REG_SCRATCH) != 0x1122334455667788ull)
		return fail("scratch did not keep its value");
	REG8(dev, SIMDEV_REG_SCRATCH) = 0xaa;
	REG16(dev, SIMDEV_REG_SCRATCH + 2) = 0xbbcc;
	if (REG32(dev, SIMDEV_REG_SCRATCH) != 0xbbcc77aau)
		return fail("scratch bytes");
	return 0;
}

/* Fills the buffer, asks the device for its checksum and polls for it. */
static int checksum_command(uint8_t *dev) {
	uint8_t data[64];
	uint32_t expected = 0;
	for (unsigned i = 0; i < sizeof(data); i++) {
		data[i] = (uint8_t)(i * 7 + 1);
		expected += data[i];
	}
	memcpy(dev + SIMDEV_BUFFER, data, sizeof(data));
	REG32(dev, SIMDEV_REG_STATUS) = 0;
	REG32(dev, SIMDEV_REG_LENGTH) = sizeof(data);
	REG32(dev, SIMDEV_REG_DOORBELL) = SIMDEV_CMD_CHECKSUM;
	unsigned polls = 0;
	while (REG32(dev, SIMDEV_REG_STATUS) != SIMDEV_STATUS_DONE) {
		if (++polls > 10000000)
			return fail("device did not answer");
	}
	if (REG32(dev, SIMDEV_REG_RESULT) != expected)
		return fail("wrong checksum");
	fprintf(stderr, "mmio_driver: checksum 0x%x after %u polls, counter %u\n", expected, polls,
		REG32(dev, SIMDEV_REG_COUNTER));
	return 0;
}

static int forked_access(uint8_t *dev) {
	fflush(NULL);
	pid_t child = fork();
	if (child < 0)
		return fail("fork failed");
	if (child == 0) {
		fprintf(stderr, "mmio_driver: child pid %d\n", (int)getpid());
		REG32(dev, SIMDEV_REG_SCRATCH) = 0xc0ffee;
		exit(REG32(dev, SIMDEV_REG_ID) == SIMDEV_ID ? 0 : 1); /* exit, not _exit: tracers flush */
	}
	int status;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return fail("child failed");
	return 0;
}

static void *read_id_repeatedly(void *dev) {
	for (int i = 0; i < SIMDEV_THREAD_READS; i++) {
		if (REG32((uint8_t *)dev, SIMDEV_REG_ID) != SIMDEV_ID)
			return "wrong ID";
	}
	return NULL;
}

/* Several threads on the device at once: every access must be logged. */
static int threaded_access(uint8_t *dev, int threads) {
	pthread_t ids[64];
	if (threads < 1 || threads > 64)
		return fail("--threads takes 1..64");
	for (int i = 0; i < threads; i++) {
		if (pthread_create(&ids[i], NULL, read_id_repeatedly, dev) != 0)
			return fail("pthread_create failed");
	}
	int err = 0;
	for (int i = 0; i < threads; i++) {
		void *result;
		pthread_join(ids[i], &result);
		if (result)
			err = fail(result);
	}
	return err;
}

int main(int argc, char **argv) {
	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: mmio_driver PATH [--fork | --threads N]\n");
		return 2;
	}
	int with_fork = argc > 2 && strcmp(argv[2], "--fork") == 0;
	int threads = argc > 3 && strcmp(argv[2], "--threads") == 0 ? atoi(argv[3]) : 0;
	fprintf(stderr, "mmio_driver: pid %d text %p-%p\n", (int)getpid(), (const void *)__executable_start,
		(const void *)etext);
	int fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "mmio_driver: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	uint8_t *dev = mmap(NULL, SIMDEV_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (dev == MAP_FAILED)
		return fail("mmap failed");
	fprintf(stderr, "mmio_driver: mapped at %p\n", (void *)dev);
	int err = probe_device(dev);
	if (!err)
		err = checksum_command(dev);
	if (!err && with_fork)
		err = forked_access(dev);
	if (!err && threads)
		err = threaded_access(dev, threads);
	munmap(dev, SIMDEV_SIZE);
	return err;
}
