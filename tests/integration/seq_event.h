/*
 * The test producers' one event, "NAME u32 seq", registered on data file
 * `fd` with bit 0 of `*enabled` as its enable bit. Fills `reg` (its
 * write_index is what the writes carry). Returns udiag_ioctl's result.
 */
#ifndef UDIAG_TESTS_SEQ_EVENT_H
#define UDIAG_TESTS_SEQ_EVENT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <udiag/udiag.h>

static inline int register_seq_event(int fd, const char *name, unsigned int *enabled, uint16_t flags,
				     struct user_reg *reg) {
	char command[256];
	snprintf(command, sizeof(command), "%s u32 seq", name);
	memset(reg, 0, sizeof(*reg));
	reg->size = sizeof(*reg);
	reg->flags = flags;
	reg->enable_size = sizeof(*enabled);
	reg->enable_addr = (uint64_t)(uintptr_t)enabled;
	reg->name_args = (uint64_t)(uintptr_t)command;
	return udiag_ioctl(fd, DIAG_IOCSREG, reg);
}

#endif
