/*
 * Writes COUNT http_request events (or NAME events, of the same fields) for
 * the bpftrace test, once some consumer enables the event (at most 5 s
 * wait): status STATUS, path PATH (a __data_loc string), agent AGENT (a
 * __rel_loc string), method METHOD (a char[8]) and delta = -i for the i-th
 * event (a negative s16).
 * Usage: http_producer STATUS PATH COUNT AGENT METHOD [NAME]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <udiag/udiag.h>

static unsigned int enabled;

int main(int argc, char **argv) {
	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: http_producer STATUS PATH COUNT AGENT METHOD [NAME]\n");
		return 2;
	}
	const char *name = argc == 7 ? argv[6] : "http_request";
	char name_args[256];
	snprintf(name_args, sizeof(name_args),
		 "%s u32 status; __data_loc char[] path; __rel_loc char[] agent; char[8] method; s16 delta", name);
	uint32_t status = (uint32_t)atoi(argv[1]);
	const char *path = argv[2], *agent = argv[4];
	int count = atoi(argv[3]);
	char method[8] = {0}; /* not NUL-terminated when 8 long, as a char[8] may be */
	size_t method_len = strlen(argv[5]);
	memcpy(method, argv[5], method_len < sizeof(method) ? method_len : sizeof(method));
	int fd = udiag_open();
	if (fd < 0) {
		fprintf(stderr, "http_producer: udiag_open: %s\n", strerror(errno));
		return 1;
	}
	struct user_reg reg = {0};
	reg.size = sizeof(reg);
	reg.enable_bit = 0;
	reg.enable_size = sizeof(enabled);
	reg.enable_addr = (uint64_t)(uintptr_t)&enabled;
	reg.name_args = (uint64_t)(uintptr_t)name_args;
	if (udiag_ioctl(fd, DIAG_IOCSREG, &reg) < 0) {
		fprintf(stderr, "http_producer: DIAG_IOCSREG: %s\n", strerror(errno));
		return 1;
	}
	for (int i = 0; i < 5000 && !(enabled & 1); i++)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	if (!(enabled & 1)) {
		fprintf(stderr, "http_producer: nobody enabled %s\n", name);
		return 1;
	}
	/* 8 header + status 4 + path loc 4 + agent loc 4 + method 8 + delta 2 */
	uint32_t path_len = strlen(path) + 1, agent_len = strlen(agent) + 1;
	uint32_t path_loc = DYN_LOC(8 + 22, path_len);
	/* __rel_loc: from the end of its word (at 20), past method, delta and the path. */
	uint32_t agent_loc = DYN_LOC(8 + 2 + path_len, agent_len);
	for (int i = 0; i < count; i++) {
		int16_t delta = (int16_t)-i;
		struct iovec iov[] = {
			{&reg.write_index, sizeof(reg.write_index)},
			{&status, sizeof(status)},
			{&path_loc, sizeof(path_loc)},
			{&agent_loc, sizeof(agent_loc)},
			{method, sizeof(method)},
			{&delta, sizeof(delta)},
			{(void *)path, path_len},
			{(void *)agent, agent_len},
		};
		if (udiag_writev(fd, iov, 8) < 0) {
			fprintf(stderr, "http_producer: write: %s\n", strerror(errno));
			return 1;
		}
	}
	udiag_close(fd);
	return 0;
}
