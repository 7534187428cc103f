/*
 * A perf consumer of a user event, written against <linux/perf_event.h> and
 * the kernel's user_events ABI only: perf_event_open(PERF_TYPE_TRACEPOINT)
 * through syscall(), enable bit and user_events_status while the fd is open,
 * IOC_ENABLE/DISABLE/RESET/ID, read() of the count, the mmap'ed ring's
 * PERF_RECORD_SAMPLE layout with PERF_SAMPLE_RAW as the kernel lays it out,
 * PERF_RECORD_LOST, poll(). Run under `udiag run` (run_under_udiag_run.sh).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <linux/user_events.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "register_event.h"

#define TRACING "/sys/kernel/tracing/"
#define EVENT_DIR TRACING "events/user_events/perf_probe/"

static volatile int check_word;

static long perf_open(struct perf_event_attr *attr)
{
	return syscall(__NR_perf_event_open, attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static long read_number(const char *path)
{
	char buf[64] = {0};
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK(read(fd, buf, sizeof(buf) - 1) > 0);
	close(fd);
	return strtol(buf, NULL, 10);
}

static int status_says_perf(void)
{
	char buf[4096] = {0};
	int fd = open(TRACING "user_events_status", O_RDONLY);
	CHECK(fd >= 0);
	CHECK(read(fd, buf, sizeof(buf) - 1) >= 0);
	close(fd);
	return strstr(buf, "perf_probe # Used by perf") != NULL;
}

static void emit(int data_fd, uint32_t index, uint32_t a, uint32_t b)
{
	struct iovec io[3] = {{&index, 4}, {&a, 4}, {&b, 4}};
	CHECK(writev(data_fd, io, 3) == 12);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct ring {
	struct perf_event_mmap_page *page;
	uint8_t *data;
	uint64_t size;
};

/* Copies the record at `pos` (which may wrap) into `out`; returns its size. */
static size_t record_at(const struct ring *r, uint64_t pos, uint8_t *out)
{
	struct perf_event_header h;
	for (size_t i = 0; i < sizeof(h); i++)
		((uint8_t *)&h)[i] = r->data[(pos + i) & (r->size - 1)];
	for (size_t i = 0; i < h.size; i++)
		out[i] = r->data[(pos + i) & (r->size - 1)];
	return h.size;
}

int main(void)
{
	long page_size = sysconf(_SC_PAGESIZE);
	int data_fd = open(TRACING "user_events_data", O_RDWR);
	CHECK(data_fd >= 0);
	uint32_t index = register_event(data_fd, "perf_probe u32 a; u32 b", 7, &check_word);
	CHECK(check_word == 0);

	/* Ids stay clear of the kernel's and fit common_type. */
	long id = read_number(EVENT_DIR "id");
	CHECK(id >= 32768 && id <= 65535);

	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.size = sizeof(attr);
	attr.config = id;
	attr.disabled = 1;
	attr.sample_period = 1;
	attr.wakeup_events = 1;
	attr.sample_id_all = 1;
	attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
			   PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW;
	attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_ID;
	int fd = perf_open(&attr);
	CHECK(fd >= 0);
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	/* As the kernel's probe: the event is in use by perf while the fd is open. */
	CHECK(check_word == 1 << 7);
	CHECK(status_says_perf());
	uint64_t perf_id = 0;
	CHECK(ioctl(fd, PERF_EVENT_IOC_ID, &perf_id) == 0 && perf_id != 0);

	struct ring r;
	r.page = mmap(NULL, page_size * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(r.page != MAP_FAILED);
	CHECK(r.page->data_offset == (uint64_t)page_size && r.page->data_size == (uint64_t)page_size);
	r.data = (uint8_t *)r.page + r.page->data_offset;
	r.size = r.page->data_size;
	/* A ring must be 1 + 2^n pages. */
	CHECK(mmap(NULL, page_size * 4, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EINVAL);

	/* Disabled: nothing counted, nothing sampled. */
	emit(data_fd, index, 1, 1);
	uint64_t values[3];
	CHECK(read(fd, values, sizeof(values)) == 24);
	CHECK(values[0] == 0 && values[2] == perf_id);
	CHECK(r.page->data_head == 0);
	struct pollfd pfd = {fd, POLLIN, 0};
	CHECK(poll(&pfd, 1, 0) == 0);

	CHECK(ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) == 0);
	uint64_t before = monotonic_ns();
	for (uint32_t i = 0; i < 3; i++)
		emit(data_fd, index, 100 + i, 0xc0de0000 + i);
	uint64_t after = monotonic_ns();
	CHECK(read(fd, values, sizeof(values)) == 24);
	CHECK(values[0] == 3 && values[1] > 0);
	CHECK(read(fd, values, 8) == -1 && errno == ENOSPC);
	CHECK(poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN));

	/* Three samples, in the kernel's field order. */
	uint64_t head = __atomic_load_n(&r.page->data_head, __ATOMIC_ACQUIRE);
	uint64_t pos = r.page->data_tail;
	uint64_t last_time = before;
	for (uint32_t i = 0; i < 3; i++) {
		uint8_t rec[256];
		CHECK(pos < head);
		size_t n = record_at(&r, pos, rec);
		struct perf_event_header *h = (void *)rec;
		CHECK(h->type == PERF_RECORD_SAMPLE && h->misc == PERF_RECORD_MISC_USER && n % 8 == 0);
		uint8_t *p = rec + sizeof(*h);
		uint64_t u64;
		uint32_t u32[2];
		memcpy(&u64, p, 8); p += 8; CHECK(u64 == perf_id);                 /* IDENTIFIER */
		memcpy(u32, p, 8); p += 8;                                         /* TID */
		CHECK(u32[0] == (uint32_t)getpid() && u32[1] == (uint32_t)gettid());
		memcpy(&u64, p, 8); p += 8;                                        /* TIME */
		CHECK(u64 >= last_time && u64 <= after);
		last_time = u64;
		memcpy(&u64, p, 8); p += 8; CHECK(u64 == perf_id);                 /* ID */
		memcpy(u32, p, 8); p += 8; CHECK(u32[0] < 4096 && u32[1] == 0);    /* CPU */
		memcpy(&u64, p, 8); p += 8; CHECK(u64 == 1);                       /* PERIOD */
		uint32_t raw_size;
		memcpy(&raw_size, p, 4); p += 4;                                   /* RAW */
		/* Common fields (8) + a + b, padded so the u32 size and data end 8-aligned. */
		CHECK(raw_size == 20 && (raw_size + 4) % 8 == 0);
		uint16_t type;
		int32_t common_pid;
		memcpy(&type, p, 2);
		memcpy(&common_pid, p + 4, 4);
		CHECK(type == id && common_pid == gettid());
		memcpy(u32, p + 8, 8);
		CHECK(u32[0] == 100 + i && u32[1] == 0xc0de0000 + i);
		CHECK((size_t)(p + raw_size - rec) == n);
		pos += n;
	}
	CHECK(pos == head);
	__atomic_store_n(&r.page->data_tail, pos, __ATOMIC_RELEASE);


	/* Disable stops counting; reset zeroes the count. */
	CHECK(ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) == 0);
	emit(data_fd, index, 9, 9);
	CHECK(read(fd, values, sizeof(values)) == 24 && values[0] == 3);
	CHECK(ioctl(fd, PERF_EVENT_IOC_RESET, 0) == 0);
	CHECK(read(fd, values, sizeof(values)) == 24 && values[0] == 0);
	CHECK(r.page->data_head == pos);

	/* A full ring: what does not fit is lost, reported by PERF_RECORD_LOST
	 * once there is room again, before the next sample. */
	CHECK(ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) == 0);
	uint32_t written = 0;
	while (__atomic_load_n(&r.page->data_head, __ATOMIC_ACQUIRE) - pos + 64 <= r.size)
		emit(data_fd, index, written++, 0);
	for (uint32_t i = 0; i < 10; i++)
		emit(data_fd, index, written++, 0);
	__atomic_store_n(&r.page->data_tail, __atomic_load_n(&r.page->data_head, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
	pos = r.page->data_tail;
	emit(data_fd, index, 777, 0);
	uint8_t rec[256];
	size_t n = record_at(&r, pos, rec);
	struct perf_event_header *h = (void *)rec;
	CHECK(h->type == PERF_RECORD_LOST);
	uint64_t lost[2];
	memcpy(lost, rec + sizeof(*h), 16);
	CHECK(lost[0] == perf_id && lost[1] >= 10);
	/* sample_id_all: the record ends with the sample_id fields (tid, time, id, cpu, identifier). */
	CHECK(n == sizeof(*h) + 16 + 8 + 8 + 8 + 8 + 8);
	n = record_at(&r, pos + n, rec);
	CHECK(h->type == PERF_RECORD_SAMPLE);

	/* Unknown requests are the kernel's ENOTTY. */
	CHECK(ioctl(fd, _IO('$', 0x7f), 0) == -1 && errno == ENOTTY);

	CHECK(munmap(r.page, page_size * 2) == 0);
	CHECK(close(fd) == 0);
	CHECK(check_word == 0);
	CHECK(!status_says_perf());

	/* A read-only ring is the kernel's overwrite mode: never full. */
	attr.disabled = 0;
	attr.sample_type = PERF_SAMPLE_RAW;
	attr.sample_id_all = 0;
	fd = perf_open(&attr);
	CHECK(fd >= 0);
	r.page = mmap(NULL, page_size * 2, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(r.page != MAP_FAILED);
	for (uint32_t i = 0; i < 1000; i++)
		emit(data_fd, index, i, 0);
	CHECK(r.page->data_head == 1000 * 32);
	CHECK(close(fd) == 0);

	/* wakeup_events 2: poll() is ready after two samples, and a reader that
	 * emptied the ring waits for two more. */
	attr.wakeup_events = 2;
	fd = perf_open(&attr);
	CHECK(fd >= 0);
	r.page = mmap(NULL, page_size * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(r.page != MAP_FAILED);
	struct pollfd wait_fd = {fd, POLLIN, 0};
	emit(data_fd, index, 1, 0);
	CHECK(poll(&wait_fd, 1, 0) == 0);
	emit(data_fd, index, 2, 0);
	CHECK(poll(&wait_fd, 1, 0) == 1);
	__atomic_store_n(&r.page->data_tail, r.page->data_head, __ATOMIC_RELEASE);
	emit(data_fd, index, 3, 0);
	CHECK(poll(&wait_fd, 1, 0) == 0);
	emit(data_fd, index, 4, 0);
	CHECK(poll(&wait_fd, 1, 0) == 1);
	CHECK(close(fd) == 0);

	/* An id the daemon does not know is passed to the kernel, which has no
	 * tracepoint there (udiag's ids avoid the kernel's). */
	attr.config = 65535;
	CHECK(perf_open(&attr) == -1);

	/* Hardware and software events are not ours either. */
	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_SOFTWARE;
	attr.size = sizeof(attr);
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.exclude_kernel = 1;
	fd = perf_open(&attr);
	if (fd >= 0) {
		uint64_t v;
		CHECK(read(fd, &v, sizeof(v)) == 8);  /* the kernel's own fd */
		close(fd);
	}
	close(data_fd);
	printf("perf_consumer: ok\n");
	return 0;
}
