/*
 * udiag-simdev - a simulated MMIO device backed by a shared-memory file.
 *
 *   udiag-simdev [PATH]     (default /dev/shm/udiag-simdev)
 *
 * Creates PATH (SIMDEV_SIZE bytes, see simdev_regs.h), sets the read-only
 * registers, prints "ready PATH" on stdout, then serves commands written to
 * DOORBELL until SIMDEV_CMD_STOP, SIGINT or SIGTERM, and removes PATH.
 * Trace a driver of it with: udiag mmiotrace --map PATH -- ./mmio_driver PATH
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "simdev_regs.h"

static volatile sig_atomic_t stopping;

static void on_signal(int sig) {
	(void)sig;
	stopping = 1;
}

#define REG32(base, off) (*(volatile uint32_t *)((base) + (off)))

/* Runs one command; the order of the stores is the device's contract:
 * results first, STATUS last. */
static int run_command(volatile uint8_t *dev, uint32_t command) {
	switch (command) {
	case SIMDEV_CMD_CHECKSUM: {
		uint32_t length = REG32(dev, SIMDEV_REG_LENGTH);
		if (length > SIMDEV_BUFFER_SIZE)
			length = SIMDEV_BUFFER_SIZE;
		uint32_t sum = 0;
		for (uint32_t i = 0; i < length; i++)
			sum += dev[SIMDEV_BUFFER + i];
		REG32(dev, SIMDEV_REG_RESULT) = sum;
		break;
	}
	case SIMDEV_CMD_RESET:
		REG32(dev, SIMDEV_REG_COUNTER) = 0;
		break;
	case SIMDEV_CMD_STOP:
		return 0;
	default:
		break; /* unknown commands complete without effect */
	}
	if (command != SIMDEV_CMD_RESET)
		REG32(dev, SIMDEV_REG_COUNTER) += 1;
	__atomic_store_n((uint32_t *)(dev + SIMDEV_REG_STATUS), SIMDEV_STATUS_DONE, __ATOMIC_RELEASE);
	return 1;
}

int main(int argc, char **argv) {
	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fprintf(stderr,
			"usage: udiag-simdev [PATH]   (default /dev/shm/udiag-simdev)\n"
			"A simulated MMIO device: a register file in a shared-memory file that reacts\n"
			"to commands written to its doorbell. Trace a driver of it with\n"
			"  udiag mmiotrace --map PATH -- mmio_driver PATH\n");
		return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
	}
	const char *path = argc > 1 ? argv[1] : "/dev/shm/udiag-simdev";
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, SIMDEV_SIZE) != 0) {
		fprintf(stderr, "udiag-simdev: %s: %s\n", path, strerror(errno));
		return 1;
	}
	uint8_t *dev = mmap(NULL, SIMDEV_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (dev == MAP_FAILED) {
		fprintf(stderr, "udiag-simdev: mmap: %s\n", strerror(errno));
		unlink(path);
		return 1;
	}
	REG32(dev, SIMDEV_REG_ID) = SIMDEV_ID;
	*(volatile uint16_t *)(dev + SIMDEV_REG_VERSION) = SIMDEV_VERSION;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("ready %s\n", path);
	fflush(stdout);
	const struct timespec nap = {0, 20000}; /* the device's reaction time */
	int serving = 1;
	while (serving && !stopping) {
		uint32_t command = __atomic_exchange_n((uint32_t *)(dev + SIMDEV_REG_DOORBELL), 0, __ATOMIC_ACQUIRE);
		if (command != 0)
			serving = run_command(dev, command);
		else
			nanosleep(&nap, NULL);
	}
	munmap(dev, SIMDEV_SIZE);
	unlink(path);
	return 0;
}
