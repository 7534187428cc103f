/*
 * Programs written for the historic user_events ABIs, with only kernel
 * headers: the 5.18-6.3 status page (24-byte struct user_reg, mmap of
 * user_events_status) and the udiag RFC's /dev/udiag. Run under `udiag run`
 * by run_legacy_abi.sh. Exit status 0 on success.
 *
 *   legacy_abi_program v1     the 5.18-6.3 ABI
 *   legacy_abi_program rfc    the RFC
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define TRACEFS "/sys/kernel/tracing"

/* 5.18: naturally aligned, 24 bytes. */
struct user_reg_v1 {
	uint32_t size;
	uint64_t name_args;
	uint32_t status_index;
	uint32_t write_index;
};
#define DIAG_IOCSREG_V1 _IOWR('*', 0, struct user_reg_v1 *)
#define DIAG_IOCSDEL_V1 _IOW('*', 1, char *)

/* The RFC's /dev/udiag. */
#define UDIAG_IOCSREG _IOW('*', 0, char *)
#define UDIAG_IOCSDEL _IOW('*', 1, char *)

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	CHECK(close(fd) == 0);
}

/* Whether the trace shows `needle` within `tries` reads, 20 ms apart. */
static int trace_shows(const char *needle, int tries)
{
	static char buf[1 << 16];
	for (int i = 0; i < tries; i++) {
		int fd = open(TRACEFS "/trace", O_RDONLY);
		CHECK(fd >= 0);
		ssize_t n, len = 0;
		while ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
			len += n;
		close(fd);
		buf[len] = 0;
		if (strstr(buf, needle))
			return 1;
		usleep(20000);
	}
	return 0;
}

static int trace_contains(const char *needle)
{
	if (trace_shows(needle, 100))
		return 1;
	fprintf(stderr, "not in trace after 2 s: %s\n", needle);
	return 0;
}

/* Deletes `name` once the last reference is gone, or sees it auto-deleted
 * (both asynchronous, as in the kernel). */
static void delete_when_free(int fd, unsigned long request, const char *name)
{
	for (int i = 0; i < 100; i++) {
		if (ioctl(fd, request, name) == 0 || errno == ENOENT)
			return;
		CHECK(errno == EBUSY);
		usleep(20000);
	}
	CHECK(!"event still busy after 2 s");
}

static int byte_model(const volatile uint8_t *page, uint32_t n) { return page[n] != 0; }
static int bit_model(const volatile uint8_t *page, uint32_t n) { return (page[n >> 3] & (1 << (n & 7))) != 0; }

static int run_v1(void)
{
	int data = open(TRACEFS "/user_events_data", O_RDWR);
	CHECK(data >= 0);
	int status = open(TRACEFS "/user_events_status", O_RDONLY);
	CHECK(status >= 0);
	long page_size = sysconf(_SC_PAGESIZE);

	/* Exactly one shared, read-only page. */
	CHECK(mmap(NULL, page_size * 2, PROT_READ, MAP_SHARED, status, 0) == MAP_FAILED && errno == EINVAL);
	CHECK(mmap(NULL, page_size, PROT_READ, MAP_PRIVATE, status, 0) == MAP_FAILED && errno == EINVAL);
	CHECK(mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_SHARED, status, 0) == MAP_FAILED && errno == EINVAL);
	const volatile uint8_t *page = mmap(NULL, page_size, PROT_READ, MAP_SHARED, status, 0);
	CHECK(page != MAP_FAILED);

	struct user_reg_v1 reg = {0};
	reg.size = sizeof(reg);
	reg.name_args = (uint64_t)(uintptr_t)"__v1_event u32 count";
	CHECK(ioctl(data, DIAG_IOCSREG_V1, &reg) == 0);
	uint32_t n = reg.status_index;
	CHECK(n != 0 && n < page_size * 8);
	CHECK(!byte_model(page, n) && !bit_model(page, n));

	/* Same event, another file: same status number. */
	int data2 = open(TRACEFS "/user_events_data", O_RDWR);
	CHECK(data2 >= 0);
	struct user_reg_v1 reg2 = reg;
	reg2.status_index = reg2.write_index = 0;
	CHECK(ioctl(data2, DIAG_IOCSREG_V1, &reg2) == 0);
	CHECK(reg2.status_index == n);

	/* A different event gets a different number. */
	struct user_reg_v1 other = reg2;
	other.name_args = (uint64_t)(uintptr_t)"__v1_other u64 x";
	CHECK(ioctl(data2, DIAG_IOCSREG_V1, &other) == 0);
	CHECK(other.status_index != n);

	write_file(TRACEFS "/events/user_events/__v1_event/enable", "1");
	CHECK(byte_model(page, n) && bit_model(page, n));
	CHECK(!byte_model(page, other.status_index) && !bit_model(page, other.status_index));

	uint32_t count = 42;
	struct iovec io[2] = {{&reg.write_index, sizeof(reg.write_index)}, {&count, sizeof(count)}};
	CHECK(writev(data, io, 2) == 8);
	CHECK(trace_contains("__v1_event: count=0x2a (42)"));

	/* A forked child has the page at the same address, kept by its own agent. */
	pid_t child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		if (!byte_model(page, n))
			_exit(2);
		count = 43;
		_exit(writev(data, io, 2) == 8 ? 0 : 3);
	}
	int wstatus;
	CHECK(waitpid(child, &wstatus, 0) == child && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
	CHECK(trace_contains("__v1_event: count=0x2b (43)"));

	write_file(TRACEFS "/events/user_events/__v1_event/enable", "0");
	CHECK(!byte_model(page, n) && !bit_model(page, n));

	/* Closing the files ends the registrations: the events can be deleted. */
	CHECK(close(data) == 0 && close(data2) == 0);
	int del = open(TRACEFS "/user_events_data", O_RDWR);
	CHECK(del >= 0);
	delete_when_free(del, DIAG_IOCSDEL_V1, "__v1_event");
	delete_when_free(del, DIAG_IOCSDEL_V1, "__v1_other");
	CHECK(munmap((void *)page, page_size) == 0);
	close(del);
	close(status);
	return 0;
}

static int run_rfc(void)
{
	int fd = open("/dev/udiag", O_RDWR);
	CHECK(fd >= 0);
	long page_size = sysconf(_SC_PAGESIZE);
	CHECK(mmap(NULL, page_size * 2, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EFAULT);
	const volatile uint8_t *page = mmap(NULL, page_size, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(page != MAP_FAILED);

	CHECK(write(fd, "x", 1) == -1 && errno == ENOENT);

	char long_name[128];
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	CHECK(ioctl(fd, UDIAG_IOCSREG, long_name) == -1 && errno == EINVAL);

	int index = ioctl(fd, UDIAG_IOCSREG, "__rfc_event");
	CHECK(index > 0 && index < page_size);
	/* One event per descriptor. */
	CHECK(ioctl(fd, UDIAG_IOCSREG, "__rfc_other") == -1 && errno == EMFILE);
	CHECK(write(fd, "", 0) == -1 && errno == EFAULT);

	/* Not traced: the write succeeds and goes nowhere. */
	CHECK(page[index] == 0);
	CHECK(write(fd, "quiet", 5) == 5);

	write_file(TRACEFS "/events/user_events/__rfc_event/enable", "1");
	CHECK(page[index] != 0);
	CHECK(write(fd, "hello", 5) == 5);
	struct iovec io[2] = {{"ab", 2}, {"cde", 3}};
	CHECK(writev(fd, io, 2) == 5);
	CHECK(trace_contains("__rfc_event: datalen=0x5 (5) data=hello"));
	CHECK(trace_contains("__rfc_event: datalen=0x2 (2) data=ab"));
	CHECK(trace_contains("__rfc_event: datalen=0x3 (3) data=cde"));
	CHECK(!trace_shows("data=quiet", 1));

	/* In use: cannot be deleted until its descriptor is closed. */
	int other = open("/dev/udiag", O_RDWR);
	CHECK(other >= 0);
	write_file(TRACEFS "/events/user_events/__rfc_event/enable", "0");
	CHECK(page[index] == 0);
	CHECK(ioctl(other, UDIAG_IOCSDEL, "__rfc_event") == -1 && errno == EBUSY);
	CHECK(close(fd) == 0);
	delete_when_free(other, UDIAG_IOCSDEL, "__rfc_event");
	CHECK(ioctl(other, UDIAG_IOCSDEL, "__rfc_event") == -1 && errno == ENOENT);
	close(other);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "v1") == 0)
		return run_v1();
	if (argc == 2 && strcmp(argv[1], "rfc") == 0)
		return run_rfc();
	fprintf(stderr, "usage: %s v1|rfc\n", argv[0]);
	return 2;
}
