/*
 * What programs written for the kernel's tracefs expect of the tree, checked
 * as such a program would (kernel ABI only), under `udiag run`:
 *   - README and user_events_data exist (stat, access, open, readdir);
 *   - mounting tracefs on /sys/kernel/tracing (done by programs that find no
 *     README) keeps udiag's view, and so does its umount;
 *   - numeric files take what kstrtoul_from_user takes: write(fd, "1", 2);
 *   - a read of trace or trace_pipe that starts after a write returned sees
 *     that event.
 * run_tracefs_conformance.sh checks that the host's mounts did not change.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <linux/user_events.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "check.h"
#include "register_event.h"

#define TRACING "/sys/kernel/tracing/"
#define ENABLE TRACING "events/user_events/conformance_probe/enable"

static volatile int check_word;

static int in_directory(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;
	CHECK(d != NULL);
	while ((e = readdir(d)) != NULL)
		found |= strcmp(e->d_name, name) == 0;
	closedir(d);
	return found;
}

static void files_exist(void)
{
	struct stat st;
	CHECK(stat(TRACING "README", &st) == 0 && S_ISREG(st.st_mode));
	CHECK(stat(TRACING "user_events_data", &st) == 0 && S_ISREG(st.st_mode));
	CHECK(access(TRACING "user_events_data", R_OK | W_OK) == 0);
	CHECK(in_directory(TRACING, "README") && in_directory(TRACING, "user_events_data"));
	char buf[512] = {0};
	int fd = open(TRACING "README", O_RDONLY);
	CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0);
	CHECK(strstr(buf, "udiag") != NULL);
	close(fd);
}

static void mount_keeps_view(void)
{
	CHECK(mount(NULL, "/sys/kernel/tracing", "tracefs", 0, NULL) == 0);
	files_exist();
	CHECK(umount("/sys/kernel/tracing") == 0);
	files_exist();
}

static int write_text(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY);
	CHECK(fd >= 0);
	ssize_t n = write(fd, text, len);
	int err = errno;
	close(fd);
	errno = err;
	return n == (ssize_t)len ? 0 : -1;
}

static void numbers_as_the_kernel(void)
{
	CHECK(write_text(ENABLE, "1", sizeof("1")) == 0);
	CHECK(check_word == 1);
	CHECK(write_text(ENABLE, "0\n", 2) == 0);
	CHECK(check_word == 0);
	CHECK(write_text(ENABLE, " 1", 2) == -1 && errno == EINVAL);
	CHECK(write_text(ENABLE, "2", 1) == -1 && errno == EINVAL);
	CHECK(write_text(TRACING "tracing_on", "1", sizeof("1")) == 0);
	CHECK(write_text(TRACING "buffer_size_kb", "4096", sizeof("4096")) == 0);
}

static long file_bytes(const char *path)
{
	char buf[4096];
	long total = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	close(fd);
	return total;
}

static void read_after_write(int data_fd, uint32_t index)
{
	CHECK(write_text(ENABLE, "1", 1) == 0);
	/* trace: every read right after a write shows it. */
	for (uint32_t i = 0; i < 200; i++) {
		long before = file_bytes(TRACING "trace");
		struct iovec io[2] = {{&index, 4}, {&i, 4}};
		CHECK(writev(data_fd, io, 2) == 8);
		CHECK(file_bytes(TRACING "trace") > before);
	}
	/* trace_pipe: the event arrives (after the 200 above, which the pipe
	 * still holds) without another write to push it out. */
	int pipe_fd = open(TRACING "trace_pipe", O_RDONLY | O_NONBLOCK);
	CHECK(pipe_fd >= 0);
	uint32_t marker = 0x5eed;
	struct iovec io[2] = {{&index, 4}, {&marker, 4}};
	CHECK(writev(data_fd, io, 2) == 8);
	static char text[1 << 20];
	size_t have = 0;
	while (!strstr(text, "value=0x5eed")) {
		struct pollfd pfd = {pipe_fd, POLLIN, 0};
		CHECK(poll(&pfd, 1, 10000) == 1);
		ssize_t n = read(pipe_fd, text + have, sizeof(text) - 1 - have);
		CHECK(n > 0 || (n < 0 && errno == EAGAIN));
		if (n > 0)
			have += n;
		text[have] = 0;
	}
	close(pipe_fd);
	CHECK(write_text(ENABLE, "0", 1) == 0);
}

int main(void)
{
	files_exist();
	mount_keeps_view();

	int data_fd = open(TRACING "user_events_data", O_RDWR);
	CHECK(data_fd >= 0);
	uint32_t index = register_event(data_fd, "conformance_probe u32 value", 0, &check_word);

	numbers_as_the_kernel();
	read_after_write(data_fd, index);
	close(data_fd);
	printf("tracefs_conformance: ok\n");
	return 0;
}
