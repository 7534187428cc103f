/* Port of (part of) the kernel user_events selftests (spec §20) onto udiag. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <udiag/udiag.h>

static int passed, failed, num;
static char reason[512];
#define CHECK(c) do { if (!(c)) { snprintf(reason, sizeof reason, "line %d: %s (errno=%d)", __LINE__, #c, errno); return 0; } } while (0)

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

static void run(const char *name, int (*fn)(void)) {
	reason[0] = 0; num++;
	if (fn()) { passed++; printf("ok %d - %s\n", num, name); }
	else { failed++; printf("not ok %d - %s: %s\n", num, name, reason); }
	fflush(stdout);
}

int main(void) {
	run("ftrace.register_events", t_register_events);
	run("ftrace.write_events", t_write_events);
	run("ftrace.write_validator", t_write_validator);
	run("ftrace.print_fmt", t_print_fmt);
	run("abi.enablement", t_enablement);
	run("abi.flags", t_flags);
	run("abi.bit_sizes", t_bit_sizes);
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 && passed > 0 ? 0 : 1;
}
