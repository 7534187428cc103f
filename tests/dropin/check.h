/* CHECK() for the kernel-ABI test programs: on failure, says where and what
 * (with errno) on stderr and exits 1. */
#ifndef UDIAG_TESTS_DROPIN_CHECK_H
#define UDIAG_TESTS_DROPIN_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: check failed: %s (errno %d %s)\n", \
				__FILE__, __LINE__, #cond, errno, strerror(errno));  \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

#endif
