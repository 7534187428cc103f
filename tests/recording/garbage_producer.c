/*
 * garbage_producer - well-framed events whose contents are hostile.
 *
 *   garbage_producer COUNT SEED
 *
 * Registers "garbage u32 n; __rel_loc char[] s; __data_loc char[] t; u64 x"
 * and writes COUNT events whose strings are random bytes (any value but NUL,
 * then the NUL the ABI asks for: '%', escapes, invalid UTF-8, huge and empty
 * strings) and whose numbers are random. Every other write also tries a loc
 * word pointing outside the event, which must be refused with EFAULT.
 * Prints "written N refused M": what a recording must hold.
 *
 * Exit status: 0 done; 2 usage; 3 open/register failed; 4 never enabled;
 * 5 a write failed other than as expected.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <udiag/udiag.h>

static unsigned int enabled;

/* Random non-NUL bytes, then a NUL: `len` bytes in all (at least 1). */
static void fill_string(char *out, uint32_t len) {
	for (uint32_t i = 0; i + 1 < len; i++) out[i] = (char)(1 + rand() % 255);
	out[len - 1] = '\0';
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: garbage_producer COUNT SEED\n");
		return 2;
	}
	long count = atol(argv[1]);
	srand((unsigned)atol(argv[2]));
	int fd = udiag_open();
	struct user_reg reg = {0};
	reg.size = sizeof(reg);
	reg.enable_size = sizeof(enabled);
	reg.enable_addr = (uint64_t)(uintptr_t)&enabled;
	reg.name_args = (uint64_t)(uintptr_t)"garbage u32 n; __rel_loc char[] s; __data_loc char[] t; u64 x";
	if (fd < 0 || udiag_ioctl(fd, DIAG_IOCSREG, &reg) < 0) {
		perror("garbage_producer: register");
		return 3;
	}
	for (int i = 0; i < 5000 && !(enabled & 1); i++) nanosleep(&(struct timespec){0, 1000000}, NULL);
	if (!(enabled & 1)) return 4;

	long written = 0, refused = 0;
	static char s[3000], t[3000];
	for (long i = 0; i < count; i++) {
		uint32_t n = (uint32_t)rand();
		uint64_t x = ((uint64_t)rand() << 32) | (uint32_t)rand();
		uint32_t s_len = 1 + (uint32_t)(rand() % (i % 50 == 0 ? 2000 : 40));
		uint32_t t_len = 1 + (uint32_t)(rand() % 40);
		fill_string(s, s_len);
		fill_string(t, t_len);
		/* Payload after the write index: n, s's rel_loc, t's data_loc, x, then s and t. */
		const uint32_t fixed = 4 + 4 + 4 + 8;
		uint32_t s_loc = (s_len << 16) | (fixed - 8); /* from the end of s's loc word */
		uint32_t t_loc = (t_len << 16) | (8 + fixed + s_len); /* from the record's start: 8 header bytes */
		if (i % 2 == 1) {
			uint32_t bad = ((uint32_t)(rand() % 4000 + 60) << 16) | (uint32_t)(rand() % 4000); /* past the end */
			struct iovec iov[] = {{&reg.write_index, 4}, {&n, 4}, {&bad, 4}, {&t_loc, 4}, {&x, 8}, {s, s_len}, {t, t_len}};
			if (udiag_writev(fd, iov, 7) >= 0 || errno != EFAULT) {
				fprintf(stderr, "garbage_producer: a loc word past the event was not refused (%s)\n", strerror(errno));
				return 5;
			}
			++refused;
		}
		struct iovec iov[] = {{&reg.write_index, 4}, {&n, 4}, {&s_loc, 4}, {&t_loc, 4}, {&x, 8}, {s, s_len}, {t, t_len}};
		if (udiag_writev(fd, iov, 7) < 0) {
			fprintf(stderr, "garbage_producer: write %ld: %s\n", i, strerror(errno));
			return 5;
		}
		++written;
	}
	printf("written %ld refused %ld\n", written, refused);
	udiag_close(fd);
	return 0;
}
