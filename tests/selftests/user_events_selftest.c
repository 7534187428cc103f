/* Port of (part of) the kernel user_events selftests (spec §20) onto udiag. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#ifdef SELFTEST_KERNEL_ABI
/* The same tests as an unmodified kernel program: the kernel's header, the
 * data file and tracefs files at their kernel paths (run it under
 * `udiag run`, or on a kernel with CONFIG_USER_EVENTS). */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <linux/user_events.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#define TRACEFS "/sys/kernel/tracing/"
#define udiag_open() open(TRACEFS "user_events_data", O_RDWR)
#define udiag_ioctl ioctl
#define udiag_write write
#define udiag_writev writev
#define udiag_close close
#else
#include <udiag/udiag.h>
#endif

static int passed, failed, num;
static char reason[512];
#define CHECK(c) do { if (!(c)) { snprintf(reason, sizeof reason, "line %d: %s (errno=%d)", __LINE__, #c, errno); return 0; } } while (0)

#ifdef SELFTEST_KERNEL_ABI
/* Takes the next word of `*s`, which may be in single quotes. */
static char *word(char **s) {
	while (**s == ' ') (*s)++;
	if (!**s) return NULL;
	char *w = *s;
	if (*w == '\'') {
		w++;
		char *end = strchr(w, '\'');
		if (!end) return NULL;
		*end = 0;
		*s = end + 1;
		return w;
	}
	char *end = strchr(w, ' ');
	*s = end ? end + 1 : w + strlen(w);
	if (end) *end = 0;
	return w;
}

/* What `udiag cat|ls|write [--append] PATH [TEXT]` does, on tracefs files. */
static int cli(const char *args, char *out, size_t outsz) {
	char buf[1024], path[512];
	snprintf(buf, sizeof buf, "%s", args);
	char *s = buf, *cmd = word(&s), *arg = word(&s);
	int append = arg && !strcmp(arg, "--append");
	if (append) arg = word(&s);
	if (!cmd || !arg) return -1;
	snprintf(path, sizeof path, TRACEFS "%s", arg);
	if (!strcmp(cmd, "write")) {
		char *text = word(&s), line[600];
		int fd = open(path, O_WRONLY | (append ? O_APPEND : O_TRUNC));
		if (fd < 0) return -1;
		int n = snprintf(line, sizeof line, "%s\n", text ? text : "");
		int ok = write(fd, line, n) == n;
		close(fd);
		return ok ? 0 : -1;
	}
	size_t n = 0;
	if (!strcmp(cmd, "ls")) {
		DIR *d = opendir(path);
		if (!d) return -1;
		for (struct dirent *e; (e = readdir(d));) {
			if (e->d_name[0] == '.' || !out) continue;
			n += snprintf(out + n, n < outsz ? outsz - n : 0, "%s%s\n", e->d_name, e->d_type == DT_DIR ? "/" : "");
		}
		closedir(d);
		return 0;
	}
	int fd = open(path, O_RDONLY);
	if (fd < 0) return -1;
	char scratch[4096];
	for (ssize_t r;; n += r) {
		r = out ? read(fd, out + n, outsz - 1 - n) : read(fd, scratch, sizeof scratch);
		if (r <= 0) break;
		if (!out) n = 0;
	}
	if (out) out[n] = 0;
	close(fd);
	return 0;
}
#else
static int cli(const char *args, char *out, size_t outsz) {
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "\"%s/udiag\" %s 2>/dev/null", getenv("UDIAG_BIN_DIR") ? getenv("UDIAG_BIN_DIR") : ".", args);
	FILE *p = popen(cmd, "r");
	if (!p) return -1;
	size_t n = 0;
	if (out) { n = fread(out, 1, outsz - 1, p); out[n] = 0; } else { char b[4096]; while (fread(b, 1, sizeof b, p) > 0) {} }
	int st = pclose(p);
	return (WIFEXITED(st) && WEXITSTATUS(st) == 0) ? 0 : -1;
}
#endif
static int enable(const char *ev, int on) {
	char a[256]; snprintf(a, sizeof a, "write events/user_events/%s/enable %d", ev, on);
	return cli(a, NULL, 0);
}
static int exists(const char *ev) {
	char a[256]; snprintf(a, sizeof a, "cat events/user_events/%s/enable", ev);
	return cli(a, NULL, 0) == 0;
}
static int wait_gone(const char *ev) {
	for (int i = 0; i < 40; i++) { if (!exists(ev)) return 1; usleep(50000); }
	return 0;
}
static long trace_size(void) {
	static char buf[1 << 20];
	if (cli("cat trace", buf, sizeof buf)) return -1;
	return (long)strlen(buf);
}
static int reg(int fd, const char *args, int bit, void *addr, int size, uint16_t flags, uint32_t *idx) {
	struct user_reg r; memset(&r, 0, sizeof r);
	r.size = sizeof r; r.enable_bit = bit; r.enable_size = size; r.flags = flags;
	r.enable_addr = (uint64_t)(uintptr_t)addr; r.name_args = (uint64_t)(uintptr_t)args;
	int rc = udiag_ioctl(fd, DIAG_IOCSREG, &r);
	if (idx) *idx = r.write_index;
	return rc;
}
static int unreg(int fd, int bit, void *addr) {
	struct user_unreg u; memset(&u, 0, sizeof u);
	u.size = sizeof u; u.disable_bit = bit; u.disable_addr = (uint64_t)(uintptr_t)addr;
	return udiag_ioctl(fd, DIAG_IOCSUNREG, &u);
}
static void cleanup(const char *ev) {
	int fd = udiag_open();
	if (fd >= 0) { udiag_ioctl(fd, DIAG_IOCSDEL, (void *)ev); udiag_close(fd); }
	wait_gone(ev);
}
static int wait_word(volatile int *w, int want) {
	for (int i = 0; i < 100; i++) { if (*w == want) return 1; usleep(10000); }
	return *w == want;
}

static int t_register_events(void) {
	volatile int check = 0; uint32_t idx = 99;
	int fd = udiag_open(); CHECK(fd >= 0);
	CHECK(reg(fd, "__test_event u32 field1; u32 field2", 31, (void *)&check, 4, 0, &idx) == 0 && idx == 0);
	errno = 0; CHECK(reg(fd, "__test_event u32 field1; u32 field2", 31, (void *)&check, 4, 0, NULL) == -1 && errno == EADDRINUSE);
	CHECK(reg(fd, "__test_event u32 field1; u32 field2", 30, (void *)&check, 4, 0, &idx) == 0 && idx == 0);
	CHECK(reg(fd, "__test_event u32 field1;u32 field2", 29, (void *)&check, 4, 0, &idx) == 0 && idx == 0);
	errno = 0; CHECK(reg(fd, "__test_event u32 field1;", 29, (void *)&check, 4, 0, NULL) == -1 && errno == EADDRINUSE);
	CHECK(enable("__test_event", 1) == 0);
	CHECK(wait_word(&check, (int)0xE0000000));
	CHECK(enable("__test_event", 0) == 0);
	CHECK(wait_word(&check, 0));
	errno = 0; CHECK(udiag_ioctl(fd, DIAG_IOCSDEL, "__test_event") == -1 && errno == EBUSY);
	CHECK(unreg(fd, 31, (void *)&check) == 0);
	CHECK(unreg(fd, 30, (void *)&check) == 0);
	CHECK(unreg(fd, 29, (void *)&check) == 0);
	CHECK(udiag_close(fd) == 0);
	CHECK(wait_gone("__test_event"));
	return 1;
}

static int t_write_events(void) {
	volatile int check = 0; uint32_t idx; uint32_t f1 = 0xc001, f2 = 0xc01a;
	int fd = udiag_open(); CHECK(fd >= 0);
	CHECK(reg(fd, "__test_event u32 field1; u32 field2", 31, (void *)&check, 4, 0, &idx) == 0);
	struct iovec io[3] = {{&idx, 4}, {&f1, 4}, {&f2, 4}};
	int bad = 2; struct iovec bio[3] = {{&bad, 4}, {&f1, 4}, {&f2, 4}};
	errno = 0; CHECK(udiag_writev(fd, bio, 3) == -1 && errno == ENOENT);
	errno = 0; CHECK(udiag_writev(fd, io, 3) == -1 && errno == EBADF);
	CHECK(enable("__test_event", 1) == 0);
	CHECK(wait_word(&check, (int)(1u << 31)));
	long before = trace_size(); CHECK(before >= 0);
	CHECK(udiag_writev(fd, io, 3) == 12);
	long after = -1;
	for (int i = 0; i < 40 && (after = trace_size()) <= before; i++) usleep(50000);
	CHECK(after > before);
	bad = -1; errno = 0; CHECK(udiag_writev(fd, bio, 3) == -1 && errno == EINVAL);
	CHECK(enable("__test_event", 0) == 0);
	CHECK(wait_word(&check, 0));
	unreg(fd, 31, (void *)&check); udiag_close(fd);
	CHECK(wait_gone("__test_event"));
	return 1;
}

static int t_write_validator(void) {
	volatile int check = 0; uint32_t idx;
	int fd = udiag_open(); CHECK(fd >= 0);
	CHECK(reg(fd, "__test_event __rel_loc char[] data", 31, (void *)&check, 4, 0, &idx) == 0);
	CHECK(enable("__test_event", 1) == 0);
	CHECK(wait_word(&check, (int)(1u << 31)));
	errno = 0; CHECK(udiag_write(fd, &idx, 4) == -1 && errno == EINVAL);
	char data[] = "Test"; uint32_t loc = DYN_LOC(0, sizeof(data));
	struct iovec io[3] = {{&idx, 4}, {&loc, 4}, {data, sizeof data}};
	long before = trace_size();
	CHECK(udiag_writev(fd, io, 3) > 0);
	long after = -1;
	for (int i = 0; i < 40 && (after = trace_size()) <= before; i++) usleep(50000);
	CHECK(after > before);
	uint32_t bads[4] = {DYN_LOC(1024, sizeof(data)), DYN_LOC(1, sizeof(data)),
			    DYN_LOC(0, sizeof(data) + 1024), DYN_LOC(0, sizeof(data) + 1)};
	for (int i = 0; i < 4; i++) { loc = bads[i]; errno = 0; CHECK(udiag_writev(fd, io, 3) == -1 && errno == EFAULT); }
	data[sizeof(data) - 1] = '!'; loc = DYN_LOC(0, sizeof(data));
	errno = 0; CHECK(udiag_writev(fd, io, 3) == -1 && errno == EFAULT);
	enable("__test_event", 0); unreg(fd, 31, (void *)&check); udiag_close(fd);
	CHECK(wait_gone("__test_event"));
	return 1;
}

static int t_print_fmt(void) {
	static const char *cases[][2] = {
		{"__rel_loc char[] data", "print fmt: \"data=%s\", __get_rel_str(data)"},
		{"__data_loc char[] data", "print fmt: \"data=%s\", __get_str(data)"},
		{"s64 data", "print fmt: \"data=%lld\", REC->data"},
		{"u64 data", "print fmt: \"data=%llu\", REC->data"},
		{"s32 data", "print fmt: \"data=%d\", REC->data"},
		{"u32 data", "print fmt: \"data=%u\", REC->data"},
		{"int data", "print fmt: \"data=%d\", REC->data"},
		{"unsigned int data", "print fmt: \"data=%u\", REC->data"},
		{"s16 data", "print fmt: \"data=%d\", REC->data"},
		{"u16 data", "print fmt: \"data=%u\", REC->data"},
		{"short data", "print fmt: \"data=%d\", REC->data"},
		{"unsigned short data", "print fmt: \"data=%u\", REC->data"},
		{"s8 data", "print fmt: \"data=%d\", REC->data"},
		{"u8 data", "print fmt: \"data=%u\", REC->data"},
		{"char data", "print fmt: \"data=%d\", REC->data"},
		{"unsigned char data", "print fmt: \"data=%u\", REC->data"},
		{"char[4] data", "print fmt: \"data=%s\", REC->data"},
	};
	static char buf[65536];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		volatile int check = 0; char args[128];
		snprintf(args, sizeof args, "__test_event %s", cases[i][0]);
		int fd = udiag_open(); CHECK(fd >= 0);
		CHECK(reg(fd, args, 31, (void *)&check, 4, 0, NULL) == 0);
		int ok = cli("cat events/user_events/__test_event/format", buf, sizeof buf) == 0;
		unreg(fd, 31, (void *)&check); udiag_close(fd);
		cleanup("__test_event");
		CHECK(ok);
		char *line = strstr(buf, "print fmt:");
		if (!line) { snprintf(reason, sizeof reason, "%s: no print fmt line", cases[i][0]); return 0; }
		char *nl = strchr(line, '\n'); if (nl) *nl = 0;
		if (strcmp(line, cases[i][1])) { snprintf(reason, sizeof reason, "%s: got '%s' want '%s'", cases[i][0], line, cases[i][1]); return 0; }
	}
	return 1;
}

static int t_enablement(void) {
	volatile int check = 0;
	int fd = udiag_open(); CHECK(fd >= 0);
	CHECK(reg(fd, "__abi_event", 0, (void *)&check, 4, 0, NULL) == 0);
	CHECK(enable("__abi_event", 1) == 0); CHECK(wait_word(&check, 1));
	CHECK(enable("__abi_event", 0) == 0); CHECK(wait_word(&check, 0));
	CHECK(enable("__abi_event", 1) == 0); CHECK(wait_word(&check, 1));
	CHECK(unreg(fd, 0, (void *)&check) == 0); CHECK(check == 0);
	CHECK(enable("__abi_event", 0) == 0); CHECK(enable("__abi_event", 1) == 0);
	usleep(200000); CHECK(check == 0);
	enable("__abi_event", 0); udiag_close(fd); cleanup("__abi_event");
	return 1;
}

static int t_bit_sizes(void) {
	volatile long long check = 0;
	int fd = udiag_open(); CHECK(fd >= 0);
	CHECK(reg(fd, "__abi_event", 0, (void *)&check, 4, 0, NULL) == 0);
	CHECK(reg(fd, "__abi_event", 31, (void *)&check, 4, 0, NULL) == 0);
	CHECK(reg(fd, "__abi_event", 32, (void *)&check, 4, 0, NULL) == -1);
	int sizes[] = {1, 2, 3, 5, 6, 7, 9, 128};
	for (int i = 0; i < 8; i++) CHECK(reg(fd, "__abi_event", 1, (void *)&check, sizes[i], 0, NULL) == -1);
	unreg(fd, 0, (void *)&check); unreg(fd, 31, (void *)&check); udiag_close(fd); cleanup("__abi_event");
	return 1;
}

static int t_flags(void) {
	volatile int check = 0;
	int fd = udiag_open(); CHECK(fd >= 0);
	CHECK(reg(fd, "__abi_event", 0, (void *)&check, 4, USER_EVENT_REG_PERSIST, NULL) == 0);
	CHECK(unreg(fd, 0, (void *)&check) == 0); CHECK(udiag_close(fd) == 0);
	usleep(300000); CHECK(exists("__abi_event"));
	fd = udiag_open(); CHECK(fd >= 0);
	CHECK(udiag_ioctl(fd, DIAG_IOCSDEL, "__abi_event") == 0);
	errno = 0; CHECK(reg(fd, "__abi_event", 0, (void *)&check, 4, USER_EVENT_REG_MAX, NULL) == -1);
	udiag_close(fd);
	CHECK(wait_gone("__abi_event"));
	return 1;
}

/* ---- ftrace_test.c: write_empty_events, write_fault ---- */

static int t_write_empty_events(void) {
	volatile int check = 0; uint32_t idx = 99;
	int fd = udiag_open(); CHECK(fd >= 0);
	CHECK(reg(fd, "__test_event", 31, (void *)&check, 4, 0, &idx) == 0 && idx == 0);
	CHECK(check == 0);
	struct iovec io[1] = {{&idx, 4}};
	CHECK(enable("__test_event", 1) == 0);
	CHECK(wait_word(&check, (int)(1u << 31)));
	long before = trace_size(); CHECK(before >= 0);
	CHECK(udiag_writev(fd, io, 1) == 4);
	long after = -1;
	for (int i = 0; i < 40 && (after = trace_size()) <= before; i++) usleep(50000);
	CHECK(after > before);
	uint32_t neg = (uint32_t)-1; struct iovec nio[1] = {{&neg, 4}};
	errno = 0; CHECK(udiag_writev(fd, nio, 1) == -1 && errno == EINVAL);
	CHECK(enable("__test_event", 0) == 0);
	CHECK(wait_word(&check, 0));
	unreg(fd, 31, (void *)&check); udiag_close(fd);
	CHECK(wait_gone("__test_event"));
	return 1;
}

static int t_write_fault(void) {
	volatile int check = 0; uint32_t idx = 99; size_t l = sizeof(uint64_t);
	void *anon = mmap(NULL, l, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(anon != MAP_FAILED);
	struct iovec io[2] = {{&idx, 4}, {anon, l}};
	int fd = udiag_open(); CHECK(fd >= 0);
	CHECK(reg(fd, "__test_event u64 anon", 31, (void *)&check, 4, 0, &idx) == 0 && idx == 0);
	CHECK(enable("__test_event", 1) == 0);
	CHECK(wait_word(&check, (int)(1u << 31)));
	/* Write should work normally (dead statement in the kernel test, run here). */
	CHECK(udiag_writev(fd, io, 2) == 12);
	/* Faulted data should zero fill and work. */
	CHECK(madvise(anon, l, MADV_DONTNEED) == 0);
	CHECK(udiag_writev(fd, io, 2) == 12);
	CHECK(munmap(anon, l) == 0);
	CHECK(enable("__test_event", 0) == 0);
	unreg(fd, 31, (void *)&check); udiag_close(fd);
	CHECK(wait_gone("__test_event"));
	return 1;
}

/* ---- dyn_test.c ---- */

static volatile int dyn_check;

/* Returns 0 when both paths agree and equal `want_ok`; else fills reason. */
static int parse_both(const char *x, int want_ok) {
	int ioctl_ok, dyn_ok;
	if (strncmp(x, "u:", 2)) { snprintf(reason, sizeof reason, "'%s': no u: prefix", x); return -1; }
	/* (a) ioctl with the u: stripped, bit 31, then unregister, close, wait. */
	int fd = udiag_open();
	if (fd < 0) { snprintf(reason, sizeof reason, "udiag_open: errno=%d", errno); return -1; }
	int rc = reg(fd, x + 2, 31, (void *)&dyn_check, 4, 0, NULL);
	int reg_errno = errno;
	ioctl_ok = rc == 0;
	if (ioctl_ok && unreg(fd, 31, (void *)&dyn_check) != 0) {
		snprintf(reason, sizeof reason, "'%s': unreg failed errno=%d", x, errno); udiag_close(fd); return -1;
	}
	udiag_close(fd);
	if (!wait_gone("__test_event")) { snprintf(reason, sizeof reason, "'%s': ioctl event not deleted", x); return -1; }
	/* (b) append to dynamic_events, then DIAG_IOCSDEL. */
	char a[700]; snprintf(a, sizeof a, "write --append dynamic_events '%s'", x);
	dyn_ok = cli(a, NULL, 0) == 0;
	fd = udiag_open();
	if (fd < 0) { snprintf(reason, sizeof reason, "udiag_open: errno=%d", errno); return -1; }
	errno = 0;
	int del = udiag_ioctl(fd, DIAG_IOCSDEL, "__test_event");
	int del_errno = errno;
	udiag_close(fd);
	if (dyn_ok && del != 0) { snprintf(reason, sizeof reason, "'%s': DEL after dynamic_events failed errno=%d", x, del_errno); return -1; }
	if (!dyn_ok && del == 0) { snprintf(reason, sizeof reason, "'%s': dynamic_events write failed but an event existed", x); return -1; }
	if (!wait_gone("__test_event")) { snprintf(reason, sizeof reason, "'%s': dyn event not deleted", x); return -1; }
	if (ioctl_ok != want_ok || dyn_ok != want_ok) {
		snprintf(reason, sizeof reason, "'%s': want %s, ioctl %s (errno=%d), dynamic_events %s", x,
			 want_ok ? "accept" : "reject", ioctl_ok ? "accepted" : "rejected", ioctl_ok ? 0 : reg_errno,
			 dyn_ok ? "accepted" : "rejected");
		return -1;
	}
	return 0;
}
#define TEST_PARSE(x) do { if (parse_both(x, 1)) return 0; } while (0)
#define TEST_NPARSE(x) do { if (parse_both(x, 0)) return 0; } while (0)

static int t_basic_types(void) {
	/* All should work */
	TEST_PARSE("u:__test_event u64 a");
	TEST_PARSE("u:__test_event u32 a");
	TEST_PARSE("u:__test_event u16 a");
	TEST_PARSE("u:__test_event u8 a");
	TEST_PARSE("u:__test_event char a");
	TEST_PARSE("u:__test_event unsigned char a");
	TEST_PARSE("u:__test_event int a");
	TEST_PARSE("u:__test_event unsigned int a");
	TEST_PARSE("u:__test_event short a");
	TEST_PARSE("u:__test_event unsigned short a");
	TEST_PARSE("u:__test_event char[20] a");
	TEST_PARSE("u:__test_event unsigned char[20] a");
	TEST_PARSE("u:__test_event char[0x14] a");
	TEST_PARSE("u:__test_event unsigned char[0x14] a");
	/* Bad size format should fail */
	TEST_NPARSE("u:__test_event char[aa] a");
	/* Large size should fail */
	TEST_NPARSE("u:__test_event char[9999] a");
	/* Long size string should fail */
	TEST_NPARSE("u:__test_event char[0x0000000000001] a");
	return 1;
}

static int t_loc_types(void) {
	TEST_PARSE("u:__test_event __data_loc char[] a");
	TEST_PARSE("u:__test_event __data_loc unsigned char[] a");
	TEST_PARSE("u:__test_event __rel_loc char[] a");
	TEST_PARSE("u:__test_event __rel_loc unsigned char[] a");
	return 1;
}

static int t_size_types(void) {
	/* Should work */
	TEST_PARSE("u:__test_event struct custom a 20");
	/* Size not specified on struct should fail */
	TEST_NPARSE("u:__test_event struct custom a");
	/* Size specified on non-struct should fail */
	TEST_NPARSE("u:__test_event char a 20");
	return 1;
}

/* 1 = match, 0 = no match, -1 = error (reason filled). */
static int check_match(const char *first, const char *second) {
	int fd = udiag_open(), ret = -1;
	if (fd < 0) { snprintf(reason, sizeof reason, "udiag_open: errno=%d", errno); return -1; }
	if (reg(fd, first, 31, (void *)&dyn_check, 4, 0, NULL) == -1) {
		snprintf(reason, sizeof reason, "'%s': first registration failed errno=%d", first, errno);
	} else if (reg(fd, second, 30, (void *)&dyn_check, 4, 0, NULL) == -1) {
		if (errno == EADDRINUSE) ret = 0;
		else snprintf(reason, sizeof reason, "'%s' after '%s': errno=%d, not EADDRINUSE", second, first, errno);
	} else {
		ret = 1;
	}
	unreg(fd, 31, (void *)&dyn_check);
	unreg(fd, 30, (void *)&dyn_check);
	udiag_close(fd);
	if (!wait_gone("__test_event") && ret >= 0) { snprintf(reason, sizeof reason, "'%s': not deleted", first); ret = -1; }
	return ret;
}
#define TEST_MATCH(x, y) do { int m = check_match(x, y); if (m < 0) return 0; \
	if (m != 1) { snprintf(reason, sizeof reason, "'%s' vs '%s': want match, got EADDRINUSE", x, y); return 0; } } while (0)
#define TEST_NMATCH(x, y) do { int m = check_match(x, y); if (m < 0) return 0; \
	if (m != 0) { snprintf(reason, sizeof reason, "'%s' vs '%s': want no match, but matched", x, y); return 0; } } while (0)

static int t_matching(void) {
	/* Single name matches */
	TEST_MATCH("__test_event u32 a", "__test_event u32 a");
	/* Multiple names match */
	TEST_MATCH("__test_event u32 a; u32 b", "__test_event u32 a; u32 b");
	/* Multiple names match with dangling ; */
	TEST_MATCH("__test_event u32 a; u32 b", "__test_event u32 a; u32 b;");
	/* Single name doesn't match */
	TEST_NMATCH("__test_event u32 a", "__test_event u32 b");
	/* Multiple names don't match */
	TEST_NMATCH("__test_event u32 a; u32 b", "__test_event u32 b; u32 a");
	/* Types don't match */
	TEST_NMATCH("__test_event u64 a; u64 b", "__test_event u32 a; u32 b");
	/* Struct name and size matches */
	TEST_MATCH("__test_event struct my_struct a 20", "__test_event struct my_struct a 20");
	/* Struct name don't match */
	TEST_NMATCH("__test_event struct my_struct a 20", "__test_event struct my_struct b 20");
	/* Struct size don't match */
	TEST_NMATCH("__test_event struct my_struct a 20", "__test_event struct my_struct a 21");
	return 1;
}

/* ---- abi_test.c: multi_format, forks, clones ---- */

/* Like the kernel's helpers: each opens and closes its own data fd. */
static int abi_reg(volatile void *check, int size, int bit, uint16_t flags, const char *args) {
	int fd = udiag_open();
	if (fd < 0) return -1;
	int rc = reg(fd, args, bit, (void *)check, size, flags, NULL);
	int e = errno;
	udiag_close(fd);
	errno = e;
	return rc;
}
static int abi_unreg(volatile void *check, int bit) {
	int fd = udiag_open();
	if (fd < 0) return -1;
	int rc = unreg(fd, bit, (void *)check);
	int e = errno;
	udiag_close(fd);
	errno = e;
	return rc;
}
static int path_exists(const char *dir) {
	char a[512]; snprintf(a, sizeof a, "ls '%s'", dir);
	return cli(a, NULL, 0) == 0;
}
static int wait_path_gone(const char *dir) {
	for (int i = 0; i < 200; i++) { if (!path_exists(dir)) return 1; usleep(50000); } /* <= 10 s */
	return 0;
}
/* Finds events/user_events_multi/__abi_event.* whose format contains `field`. */
static int find_multi_event_dir(const char *field, char *out, size_t outsz) {
	static char list[65536], fmt[65536];
	if (cli("ls events/user_events_multi", list, sizeof list)) return -1;
	int found = -1;
	for (char *save = NULL, *e = strtok_r(list, "\n", &save); e; e = strtok_r(NULL, "\n", &save)) {
		size_t n = strlen(e);
		if (n && e[n - 1] == '/') e[--n] = 0;
		if (strncmp(e, "__abi_event.", 12)) continue;
		char a[512]; snprintf(a, sizeof a, "cat 'events/user_events_multi/%s/format'", e);
		if (cli(a, fmt, sizeof fmt)) continue;
		if (!strstr(fmt, field)) continue;
		if (found == 0) return -1; /* more than one */
		snprintf(out, outsz, "events/user_events_multi/%s", e);
		found = 0;
	}
	return found;
}

static int t_multi_format(void) {
	volatile int check = 0; char first_dir[256], second_dir[256];
	/* Multiple formats for the same name should work */
	CHECK(abi_reg(&check, 4, 0, USER_EVENT_REG_MULTI_FORMAT, "__abi_event u32 multi_first") == 0);
	CHECK(abi_reg(&check, 4, 1, USER_EVENT_REG_MULTI_FORMAT, "__abi_event u64 multi_second") == 0);
	/* Same name with same format should also work */
	CHECK(abi_reg(&check, 4, 2, USER_EVENT_REG_MULTI_FORMAT, "__abi_event u64 multi_second") == 0);
	CHECK(find_multi_event_dir("u32 multi_first", first_dir, sizeof first_dir) == 0);
	CHECK(find_multi_event_dir("u64 multi_second", second_dir, sizeof second_dir) == 0);
	/* Should not be found in the same dir */
	CHECK(strcmp(first_dir, second_dir) != 0);
	/* First dir should still exist */
	CHECK(path_exists(first_dir));
	/* Disabling first register should remove first dir */
	CHECK(abi_unreg(&check, 0) == 0);
	CHECK(wait_path_gone(first_dir));
	/* Second dir should still exist */
	CHECK(path_exists(second_dir));
	/* Disabling second register should not remove second dir */
	CHECK(abi_unreg(&check, 1) == 0);
	usleep(300000);
	CHECK(path_exists(second_dir));
	/* Disabling third register should remove second dir */
	CHECK(abi_unreg(&check, 2) == 0);
	CHECK(wait_path_gone(second_dir));
	return 1;
}

static int t_forks(void) {
	static volatile int check;
	int st;
	check = 0;
	/* Ensure COW pages get updated after fork */
	CHECK(abi_reg(&check, 4, 0, 0, "__abi_event") == 0);
	CHECK(check == 0);
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid != -1);
	if (pid == 0) {
		/* Force COW */
		check = 0;
		/* Up to 1 sec for enablement */
		for (int i = 0; i < 10; ++i) {
			usleep(100000);
			if (check) exit(0);
		}
		exit(1);
	}
	/* Allow generous time for COW, then enable */
	usleep(100000);
	CHECK(enable("__abi_event", 1) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* Ensure child doesn't disable parent */
	fflush(stdout);
	pid = fork();
	CHECK(pid != -1);
	if (pid == 0) exit(abi_unreg(&check, 0) == 0 ? 0 : (errno & 0x7f) | 0x80);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	usleep(100000);
	CHECK(check == 1);
	CHECK(enable("__abi_event", 0) == 0);
	CHECK(wait_word(&check, 0));
	abi_unreg(&check, 0);
	CHECK(wait_gone("__abi_event"));
	return 1;
}

static int clone_check(void *arg) {
	volatile int *check = arg;
	for (int i = 0; i < 10; ++i) {
		usleep(100000);
		if (*check) return 0;
	}
	return 1;
}

static int t_clones(void) {
	static volatile int check;
	int st; size_t stack_size = 64 * 1024;
	check = 0;
	char *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	CHECK(stack != MAP_FAILED);
	CHECK(abi_reg(&check, 4, 0, 0, "__abi_event") == 0);
	CHECK(check == 0);
	/* Shared VM should see enablements */
	fflush(stdout);
	pid_t pid = clone(clone_check, stack + stack_size, CLONE_VM | SIGCHLD, (void *)&check);
	CHECK(pid != -1);
	CHECK(enable("__abi_event", 1) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	munmap(stack, stack_size);
	CHECK(enable("__abi_event", 0) == 0);
	CHECK(wait_word(&check, 0));
	abi_unreg(&check, 0);
	CHECK(wait_gone("__abi_event"));
	return 1;
}

static void run(const char *name, int (*fn)(void)) {
	reason[0] = 0; num++;
	if (fn()) { passed++; printf("ok %d - %s\n", num, name); }
	else { failed++; printf("not ok %d - %s: %s\n", num, name, reason); }
	fflush(stdout);
}

int main(void) {
	run("ftrace.register_events", t_register_events);
	run("ftrace.write_events", t_write_events);
	run("ftrace.write_empty_events", t_write_empty_events);
	run("ftrace.write_fault", t_write_fault);
	run("ftrace.write_validator", t_write_validator);
	run("ftrace.print_fmt", t_print_fmt);
	run("dyn.basic_types", t_basic_types);
	run("dyn.loc_types", t_loc_types);
	run("dyn.size_types", t_size_types);
	run("dyn.matching", t_matching);
	run("abi.enablement", t_enablement);
	run("abi.flags", t_flags);
	run("abi.bit_sizes", t_bit_sizes);
	run("abi.multi_format", t_multi_format);
	run("abi.forks", t_forks);
	run("abi.clones", t_clones);
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 && passed > 0 ? 0 : 1;
}
