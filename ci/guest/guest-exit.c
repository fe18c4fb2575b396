// SPDX-License-Identifier: GPL-2.0
/*
 * guest-exit STATUS: end the QEMU guest, carrying STATUS (0..127) out as
 * QEMU's own exit status through the isa-debug-exit device at port 0xf4.
 * QEMU then exits with (STATUS << 1) | 1, so a guest that powers off or
 * panics (QEMU exit 0) can never be mistaken for a pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/io.h>

#define DEBUG_EXIT_PORT 0xf4

int main(int argc, char **argv)
{
	long status;

	if (argc != 2) {
		fprintf(stderr, "usage: guest-exit STATUS\n");
		return 2;
	}
	status = strtol(argv[1], NULL, 0);
	if (status < 0 || status > 127)
		status = 127;
	if (ioperm(DEBUG_EXIT_PORT, 1, 1)) {
		perror("guest-exit: ioperm");
		return 1;
	}
	outb((unsigned char)status, DEBUG_EXIT_PORT);
	/* Not reached when the device is present. */
	fprintf(stderr, "guest-exit: no isa-debug-exit device\n");
	return 1;
}
