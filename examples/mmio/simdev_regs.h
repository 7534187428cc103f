/*
 * simdev_regs.h - register map of udiag-simdev, the simulated device the
 * mmio examples and tests use (this machine has no UIO/VFIO device).
 *
 * The device is a shared-memory file of SIMDEV_SIZE bytes: a register page,
 * then a buffer page. The device process watches DOORBELL; a driver writes
 * LENGTH and then a command to DOORBELL, and polls STATUS until it reads
 * SIMDEV_STATUS_DONE.
 */
#ifndef UDIAG_EXAMPLES_SIMDEV_REGS_H
#define UDIAG_EXAMPLES_SIMDEV_REGS_H

#define SIMDEV_REG_ID 0x00       /* u32, read-only: SIMDEV_ID */
#define SIMDEV_REG_VERSION 0x04  /* u16, read-only: SIMDEV_VERSION */
#define SIMDEV_REG_SCRATCH 0x08  /* u64, read-write, no effect */
#define SIMDEV_REG_DOORBELL 0x10 /* u32: write a SIMDEV_CMD_*; the device clears it */
#define SIMDEV_REG_STATUS 0x14   /* u32: the driver clears it; SIMDEV_STATUS_DONE when done */
#define SIMDEV_REG_COUNTER 0x18  /* u32: commands completed */
#define SIMDEV_REG_RESULT 0x1c   /* u32: SIMDEV_CMD_CHECKSUM's result */
#define SIMDEV_REG_LENGTH 0x20   /* u32: bytes of the buffer SIMDEV_CMD_CHECKSUM reads */

#define SIMDEV_BUFFER 0x1000 /* the buffer page */
#define SIMDEV_BUFFER_SIZE 0x1000
#define SIMDEV_SIZE 0x2000

#define SIMDEV_ID 0x5d1e0001u
#define SIMDEV_VERSION 0x0102u
#define SIMDEV_STATUS_DONE 1u

#define SIMDEV_CMD_CHECKSUM 1u /* RESULT = sum of buffer bytes [0, LENGTH) */
#define SIMDEV_CMD_RESET 2u    /* COUNTER = 0 */
#define SIMDEV_CMD_STOP 3u     /* the device process exits */

#endif
