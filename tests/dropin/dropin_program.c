/*
 * An unmodified user_events program: only the kernel ABI, no udiag header.
 * Run under LD_PRELOAD=libudiag-preload.so against a private daemon by
 * run_dropin.sh, which then checks the trace. Exit status 0 on success.
 *
 *   dropin_program            the main test
 *   dropin_program child FD INDEX
 *                             after exec: writes on an inherited data file
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/user_events.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static volatile uint32_t enabled;

static ssize_t emit(int fd, uint32_t index, uint32_t count)
{
	struct iovec io[2] = {{&index, sizeof(index)}, {&count, sizeof(count)}};
	return writev(fd, io, 2);
}

static int run_child(int fd, uint32_t index)
{
	/* The inherited descriptor, unknown to this image until used. */
	CHECK(emit(fd, index, 106) == 8);
	/* Registering on it works too. */
	struct user_reg reg = {0};
	static volatile uint32_t child_enabled;
	reg.size = sizeof(reg);
	reg.enable_bit = 0;
	reg.enable_size = 4;
	reg.enable_addr = (uint64_t)(uintptr_t)&child_enabled;
	reg.name_args = (uint64_t)(uintptr_t)"dropin_test u32 count";
	CHECK(ioctl(fd, DIAG_IOCSREG, &reg) == 0);
	CHECK(reg.write_index == index);
	CHECK(emit(fd, index, 107) == 8);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "child") == 0)
		return run_child(atoi(argv[2]), (uint32_t)atoi(argv[3]));

	/* Programs stat() the data file to learn that user_events exists; it
	 * does even where the kernel has none. */
	struct stat st;
	CHECK(stat("/sys/kernel/tracing/user_events_data", &st) == 0 && S_ISREG(st.st_mode));
	CHECK(access("/sys/kernel/tracing/user_events_data", R_OK | W_OK) == 0);

	int fd = open("/sys/kernel/tracing/user_events_data", O_RDWR);
	CHECK(fd >= 0);

	struct user_reg reg = {0};
	reg.size = sizeof(reg);
	reg.enable_bit = 31;
	reg.enable_size = sizeof(enabled);
	reg.enable_addr = (uint64_t)(uintptr_t)&enabled;
	reg.name_args = (uint64_t)(uintptr_t)"dropin_test u32 count";
	CHECK(ioctl(fd, DIAG_IOCSREG, &reg) == 0);

	/* A request the data file does not know. */
	errno = 0;
	CHECK(ioctl(fd, _IO(DIAG_IOC_MAGIC, 9), 0) == -1 && errno == ENOTTY);

	/* Not enabled yet: EBADF, as the kernel. */
	errno = 0;
	CHECK(emit(fd, reg.write_index, 1) == -1 && errno == EBADF);

	/* Enable it with the CLI (without the preload) and wait for the bit. */
	char cmd[4096];
	snprintf(cmd, sizeof cmd,
		 "env -u LD_PRELOAD \"%s/udiag\" write events/user_events/dropin_test/enable 1",
		 getenv("UDIAG_BIN_DIR"));
	CHECK(system(cmd) == 0);
	for (int i = 0; i < 500 && !(enabled & (1U << 31)); ++i)
		usleep(10000);
	CHECK(enabled & (1U << 31));

	CHECK(emit(fd, reg.write_index, 101) == 8);

	/* write and pwrite: [index][payload] in one buffer. */
	uint32_t buf[2] = {reg.write_index, 102};
	CHECK(write(fd, buf, sizeof buf) == 8);
	buf[1] = 103;
	CHECK(pwrite(fd, buf, sizeof buf, 12345) == 8);

	/* Duplicates of the data file work. */
	int d1 = dup(fd);
	CHECK(d1 >= 0);
	CHECK(emit(d1, reg.write_index, 104) == 8);
	int d2 = fcntl(fd, F_DUPFD_CLOEXEC, 200);
	CHECK(d2 >= 200);
	int d3 = dup2(fd, 300);
	CHECK(d3 == 300);
	CHECK(emit(d2, reg.write_index, 105) == 8);
	CHECK(emit(d3, reg.write_index, 108) == 8);
	/* Bad request on a dup: still the data file's answer. */
	errno = 0;
	CHECK(ioctl(d1, _IO(DIAG_IOC_MAGIC, 9), 0) == -1 && errno == ENOTTY);
	CHECK(close(d1) == 0);
	CHECK(close(d2) == 0);
	/* dup2 over a data-file number: it becomes a pipe. */
	int p[2];
	CHECK(pipe(p) == 0);
	CHECK(dup2(p[1], d3) == d3);
	CHECK(write(d3, "xy", 2) == 2);
	char got[4] = {0};
	CHECK(read(p[0], got, 2) == 2 && memcmp(got, "xy", 2) == 0);
	CHECK(close(d3) == 0);

	/* Unrelated I/O passes through. */
	CHECK(write(p[1], "hello", 5) == 5);
	CHECK(read(p[0], got, 4) == 4 && memcmp(got, "hell", 4) == 0);
	close(p[0]);
	close(p[1]);
	errno = 0;
	CHECK(ioctl(fd, 0x5401 /* TCGETS */, got) == -1 && errno == ENOTTY);

	/* An unknown index on the data file: ENOENT. */
	errno = 0;
	CHECK(emit(fd, 4242, 1) == -1 && errno == ENOENT);

	/* fork + exec: the child image finds the inherited data file. */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char sfd[16], sidx[16];
		snprintf(sfd, sizeof sfd, "%d", fd);
		snprintf(sidx, sizeof sidx, "%u", reg.write_index);
		execl("/proc/self/exe", argv[0], "child", sfd, sidx, (char *)NULL);
		_exit(127);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* The debugfs path and openat work too. */
	int fd2 = openat(AT_FDCWD, "/sys/kernel/debug/tracing/user_events_data", O_RDWR | O_CLOEXEC);
	CHECK(fd2 >= 0);
	CHECK((fcntl(fd2, F_GETFD) & FD_CLOEXEC) != 0);
	CHECK(close(fd2) == 0);

	/* Other paths are untouched. */
	errno = 0;
	CHECK(open("/nonexistent/user_events_data", O_RDWR) == -1 && errno == ENOENT);

	CHECK(close(fd) == 0);
	/* Closed: the number is not a data file any more. */
	errno = 0;
	CHECK(write(fd, buf, sizeof buf) == -1 && errno == EBADF);
	printf("dropin_program: ok\n");
	return 0;
}
