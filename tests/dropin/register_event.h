/* DIAG_IOCSREG of `command` on `data_fd`, enable bit `bit` of the 32-bit
 * `word`, for the kernel-ABI test programs; returns the write_index. */
#ifndef UDIAG_TESTS_DROPIN_REGISTER_EVENT_H
#define UDIAG_TESTS_DROPIN_REGISTER_EVENT_H

#include <linux/user_events.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "check.h"

static inline uint32_t register_event(int data_fd, const char *command, int bit, volatile int *word)
{
	struct user_reg reg = {0};
	reg.size = sizeof(reg);
	reg.name_args = (uint64_t)(uintptr_t)command;
	reg.enable_bit = bit;
	reg.enable_size = sizeof(*word);
	reg.enable_addr = (uint64_t)(uintptr_t)word;
	CHECK(ioctl(data_fd, DIAG_IOCSREG, &reg) == 0);
	return reg.write_index;
}

#endif
