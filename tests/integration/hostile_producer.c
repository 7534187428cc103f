/*
 * hostile_producer - a producer that corrupts its own ring.
 *
 *   hostile_producer NAME DURATION_MS [pages]
 *
 * Registers "NAME u32 seq", waits until enabled, writes one event (so this
 * thread's ring exists and has been handed to udiagd), pauses 200 ms so
 * that record is drained, then for DURATION_MS
 * repeatedly fills every /memfd:udiag-ring mapping of the process with random
 * bytes, interleaved with more writes. udiagd must survive this.
 *
 * With "pages", it writes plausible ring pages instead (src/ring/
 * ring_layout.h), for the checks a page goes through before a recording
 * keeps it whole: its own event id and others, lying common_pids, times in
 * the future and in the past, time extends, explicit lengths, lengths that
 * run past the page, commits past the room left for a lost count; and
 * moves the ring's head over them, round after round, without writing.
 *
 * Exit status: 0 done; 2 usage; 3 open/register failed; 4 never enabled;
 * 5 first write failed; 6 no ring mapping found.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <udiag/udiag.h>

#include "seq_event.h"

static unsigned int enabled;

static long now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

struct region {
	unsigned char *start;
	size_t size;
};

/* Writable mappings of the ring memfd, from /proc/self/maps. */
static int find_rings(struct region *out, int max) {
	FILE *maps = fopen("/proc/self/maps", "r");
	if (!maps)
		return 0;
	char line[512];
	int n = 0;
	while (n < max && fgets(line, sizeof(line), maps)) {
		if (!strstr(line, "/memfd:udiag-ring"))
			continue;
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[1] != 'w')
			continue;
		out[n].start = (unsigned char *)lo;
		out[n].size = hi - lo;
		n++;
	}
	fclose(maps);
	return n;
}

/* The ring layout (src/ring/ring_layout.h), restated for C. */
enum { kRingHeaderBytes = 4096, kPage = 4096, kPageHeader = 16, kHeadOffset = 64, kTailOffset = 128 };

static uint32_t rand32(void) { return ((uint32_t)rand() << 16) ^ (uint32_t)rand(); }

/* Now, in the ring's clock (its header's u32 at 16: 0 for TSC ticks, else ns). */
static uint64_t ring_now(const struct region *ring) {
	uint32_t clock;
	memcpy(&clock, ring->start + 16, sizeof(clock));
	if (clock == 0)
		return __builtin_ia32_rdtsc();
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* A plausible page at `page` whose events are of id `id` or near it. Half
 * of them are well formed, only lying about the thread and the flags: a
 * recording may keep those whole, with the thread put right. */
static void craft_page(unsigned char *page, uint16_t id, uint64_t now) {
	int well_formed = rand() % 2;
	uint64_t timestamp = rand() % 4 == 0 ? UINT64_MAX - rand32() : rand32();
	uint32_t used = 0;
	while (used + 32 <= kPage - kPageHeader - 8) {
		unsigned char *at = page + kPageHeader + used;
		uint32_t words[8];
		uint32_t kind = well_formed ? 4 : rand() % 16, n;
		uint32_t delta = well_formed ? (uint32_t)rand() % 64 : rand32() & ((1u << 27) - 1);
		if (kind == 0) { /* a time extend */
			words[0] = 30 | delta << 5;
			words[1] = rand32();
			n = 2;
		} else if (kind == 1) { /* an explicit length, often a lie */
			words[0] = delta << 5;
			words[1] = rand() % 2 ? 24 : rand32();
			n = 7;
		} else { /* common header and a u32, maybe with a wrong id or a too small length */
			words[0] = (kind == 2 ? 1 : 3) | delta << 5;
			n = 4;
		}
		for (uint32_t i = n == 2 ? 2 : (n == 7 ? 2 : 1); i < n; i++) words[i] = rand32();
		if (n != 2) {
			uint32_t type = kind == 3 ? (uint16_t)(id + 1 + rand() % 4) : id;
			words[n == 7 ? 2 : 1] = type | (rand32() & 0xffff0000u);
		}
		memcpy(at, words, n * 4);
		used += n * 4;
		if (rand() % 8 == 0) break;
	}
	if (well_formed) timestamp = now - 100000 - rand() % 100000; /* a little earlier */
	uint64_t commit = (uint64_t)(rand() % 2) << 32 | used;
	if (!well_formed && rand() % 16 == 0) commit += 8 + rand() % 64; /* past the room, or past the events */
	memcpy(page, &timestamp, 8);
	memcpy(page + 8, &commit, 8);
}

/* Closes the page the ring's head is in, fills the ring's other pages with
 * crafted ones, and moves the head over some of them, as far as the ring
 * holds past its tail. */
static void craft_ring(struct region *ring, uint16_t id) {
	unsigned char *data = ring->start + kRingHeaderBytes;
	size_t data_size = ring->size - kRingHeaderBytes;
	uint64_t head, tail;
	memcpy(&head, ring->start + kHeadOffset, sizeof(head));
	memcpy(&tail, ring->start + kTailOffset, sizeof(tail));
	uint64_t first = head - head % kPage;
	if (head % kPage != 0) {
		uint32_t bytes = head % kPage - kPageHeader;
		memcpy(data + first % data_size + 8, &bytes, sizeof(bytes));
		first += kPage;
	}
	size_t free_pages = first - tail < data_size ? (data_size - (first - tail)) / kPage : 0;
	const uint64_t now = ring_now(ring);
	for (size_t i = 0; i < free_pages; i++) craft_page(data + (first + i * kPage) % data_size, id, now);
	head = first + (rand() % (free_pages + 1)) * kPage;
	/* Inside a page now and then (not past what the ring holds: that breaks it at once). */
	if (rand() % 4 == 0 && head + kPageHeader + 64 - tail <= data_size) head += kPageHeader + 4 * (rand() % 16);
	__atomic_store_n((uint64_t *)(ring->start + kHeadOffset), head, __ATOMIC_RELEASE);
}

static ssize_t write_seq(int fd, uint32_t index, uint32_t seq) {
	struct iovec iov[] = {{&index, sizeof(index)}, {&seq, sizeof(seq)}};
	return udiag_writev(fd, iov, 2);
}

int main(int argc, char **argv) {
	if (argc < 3 || (argc > 3 && strcmp(argv[3], "pages") != 0)) {
		fprintf(stderr, "usage: hostile_producer NAME DURATION_MS [pages]\n");
		return 2;
	}
	long duration_ms = atol(argv[2]);
	int pages = argc > 3;
	int fd = udiag_open();
	if (fd < 0) {
		fprintf(stderr, "hostile_producer: udiag_open: %s\n", strerror(errno));
		return 3;
	}
	struct user_reg reg;
	if (register_seq_event(fd, argv[1], &enabled, 0, &reg) < 0) {
		fprintf(stderr, "hostile_producer: DIAG_IOCSREG: %s\n", strerror(errno));
		return 3;
	}
	long deadline = now_ms() + 10000;
	while (!(__atomic_load_n(&enabled, __ATOMIC_ACQUIRE) & 1)) {
		if (now_ms() > deadline)
			return 4;
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	if (write_seq(fd, reg.write_index, 0) < 0) {
		fprintf(stderr, "hostile_producer: first write: %s\n", strerror(errno));
		return 5;
	}
	/* Give udiagd time to drain the intact first record before the attack. */
	struct timespec pause = {0, 200 * 1000000L};
	nanosleep(&pause, NULL);
	struct region rings[16];
	int nrings = find_rings(rings, 16);
	if (nrings == 0) {
		fprintf(stderr, "hostile_producer: no /memfd:udiag-ring mapping\n");
		return 6;
	}
	uint16_t ids[16]; /* each ring's event id, from the intact first write */
	for (int r = 0; r < nrings; r++)
		memcpy(&ids[r], rings[r].start + kRingHeaderBytes + kPageHeader + 4, sizeof(ids[r]));
	printf("corrupting %d ring mapping(s)\n", nrings);
	fflush(stdout);
	srand((unsigned)now_ms());
	uint32_t seq = 1;
	long end = now_ms() + duration_ms;
	unsigned long rounds = 0;
	while (now_ms() < end) {
		if (pages) {
			/* No writes meanwhile: they would move the head back into its page. */
			for (int r = 0; r < nrings; r++)
				craft_ring(&rings[r], ids[r]);
			struct timespec drain = {0, 10 * 1000000L};
			nanosleep(&drain, NULL);
			rounds++;
			continue;
		}
		for (int r = 0; r < nrings; r++) {
			uint32_t *p = (uint32_t *)rings[r].start;
			for (size_t i = 0; i < rings[r].size / sizeof(uint32_t); i++)
				p[i] = rand32();
		}
		/* Errors are expected: the ring is garbage. */
		for (int i = 0; i < 8; i++)
			write_seq(fd, reg.write_index, seq++);
		rounds++;
	}
	printf("done: %lu rounds\n", rounds);
	return 0;
}
