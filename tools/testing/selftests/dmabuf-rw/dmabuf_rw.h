/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the dmabuf read/write via io_uring selftests: udmabuf
 * creation and CPU access, registration of a dma-buf as a fixed buffer,
 * one-shot READ_FIXED/WRITE_FIXED, and a position-dependent data pattern.
 *
 * All helpers return a negative errno on failure and never call into the
 * test harness, so that every test decides what is a failure or a skip.
 */
#ifndef __DMABUF_RW_H
#define __DMABUF_RW_H

/*
 * struct io_uring_reg_buffer, IORING_RSRC_F_EXTENDED_UPDATE and
 * io_uring_rsrc_update2.flags exist only in the uapi of the tree under test
 * (KHDR_INCLUDES). liburing.h includes its own older copy of that header,
 * liburing/io_uring.h, under the same include guard (LINUX_IO_URING_H).
 * Including the tree's header first makes liburing skip its copy, so each
 * uapi type has one definition and it is the one being tested. The new
 * flag is an enum constant, so it cannot be detected with #ifdef and a
 * local fallback definition could only clash with the real one.
 */
#ifdef LIB_URING_H
#error "dmabuf_rw.h must be included before liburing.h"
#endif
#include <linux/io_uring.h>
#include <liburing.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/dma-buf.h>
#include <linux/types.h>
#include <linux/udmabuf.h>

#define DMABUF_RW_DEFAULT_DEV	"/dev/nvme0n1"

/* The block device the tests use: $DMABUF_RW_DEV, else /dev/nvme0n1. */
static inline const char *dmabuf_rw_dev_path(void)
{
	const char *path = getenv("DMABUF_RW_DEV");

	return path && *path ? path : DMABUF_RW_DEFAULT_DEV;
}

/*
 * Open the block device at @path for O_DIRECT I/O. Returns the fd;
 * -ENODEV when there is no block device at @path (the test skips);
 * another negative errno when it cannot be opened.
 */
static inline int dmabuf_rw_open_dev(const char *path)
{
	struct stat st;
	int fd, ret;

	fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENXIO || errno == ENODEV ?
		       -ENODEV : -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (!S_ISBLK(st.st_mode)) {
		close(fd);
		return -ENODEV;
	}
	return fd;
}

/*
 * io_uring_queue_init() that tells apart, for the test to skip, a kernel
 * without io_uring (-EOPNOTSUPP: the sysctl exists exactly when io_uring is
 * built in) and io_uring disabled by that sysctl (-EPERM).
 */
static inline int dmabuf_rw_ring_init(struct io_uring *ring,
				      unsigned int entries)
{
	if (access("/proc/sys/kernel/io_uring_disabled", F_OK))
		return -EOPNOTSUPP;
	return io_uring_queue_init(entries, ring, 0);
}

/* 09/11 of the series: iov_uaddr, target_fd, dmabuf_fd. */
static_assert(sizeof(struct io_uring_reg_buffer) == 16,
	      "unexpected struct io_uring_reg_buffer layout");

struct dmabuf_rw_udmabuf {
	int memfd;
	int fd;		/* the dma-buf */
	void *map;	/* CPU mapping of the dma-buf, size bytes */
	size_t size;
};

static inline void udmabuf_destroy(struct dmabuf_rw_udmabuf *ub)
{
	if (ub->map && ub->map != MAP_FAILED)
		munmap(ub->map, ub->size);
	if (ub->fd >= 0)
		close(ub->fd);
	if (ub->memfd >= 0)
		close(ub->memfd);
	ub->map = NULL;
	ub->fd = -1;
	ub->memfd = -1;
}

/*
 * Create a udmabuf of @size bytes (a multiple of the page size) backed by a
 * sealed memfd, and map it for CPU access. Returns 0 or a negative errno;
 * -ENOENT means there is no /dev/udmabuf (CONFIG_UDMABUF).
 */
static inline int udmabuf_create(struct dmabuf_rw_udmabuf *ub, size_t size)
{
	struct udmabuf_create create = {
		.flags = UDMABUF_FLAGS_CLOEXEC,
		.offset = 0,
		.size = size,
	};
	int devfd, ret;

	ub->memfd = -1;
	ub->fd = -1;
	ub->map = NULL;
	ub->size = size;

	devfd = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (devfd < 0)
		return -errno;

	ub->memfd = memfd_create("dmabuf-rw", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (ub->memfd < 0)
		goto err;
	if (ftruncate(ub->memfd, size))
		goto err;
	/* udmabuf refuses a memfd whose pages could go away under it. */
	if (fcntl(ub->memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		goto err;

	create.memfd = ub->memfd;
	ub->fd = ioctl(devfd, UDMABUF_CREATE, &create);
	if (ub->fd < 0)
		goto err;

	ub->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       ub->fd, 0);
	if (ub->map == MAP_FAILED)
		goto err;

	close(devfd);
	return 0;
err:
	ret = -errno;
	udmabuf_destroy(ub);
	close(devfd);
	return ret;
}

/*
 * CPU access to a dma-buf's mapping must be bracketed by
 * DMA_BUF_IOCTL_SYNC: dmabuf_cpu_begin() before touching it,
 * dmabuf_cpu_end() when done, with the same @dir: DMA_BUF_SYNC_READ,
 * DMA_BUF_SYNC_WRITE or DMA_BUF_SYNC_RW.
 */
static inline int dmabuf_sync(int dmabuf_fd, __u64 flags)
{
	struct dma_buf_sync sync = { .flags = flags };
	int ret;

	do {
		ret = ioctl(dmabuf_fd, DMA_BUF_IOCTL_SYNC, &sync);
	} while (ret && (errno == EINTR || errno == EAGAIN));

	return ret ? -errno : 0;
}

static inline int dmabuf_cpu_begin(int dmabuf_fd, __u64 dir)
{
	return dmabuf_sync(dmabuf_fd, DMA_BUF_SYNC_START | dir);
}

static inline int dmabuf_cpu_end(int dmabuf_fd, __u64 dir)
{
	return dmabuf_sync(dmabuf_fd, DMA_BUF_SYNC_END | dir);
}

/*
 * IORING_REGISTER_BUFFERS_UPDATE with IORING_RSRC_F_EXTENDED_UPDATE: update
 * @nr slots from @slot on with the entries of @rb. liburing has no helper
 * for the extended form. Returns the number of slots updated or a
 * negative errno.
 */
static inline int dmabuf_rw_update_buffers(struct io_uring *ring,
					   unsigned int slot,
					   const struct io_uring_reg_buffer *rb,
					   unsigned int nr)
{
	struct io_uring_rsrc_update2 up = {
		.offset = slot,
		.flags = IORING_RSRC_F_EXTENDED_UPDATE,
		.data = (__u64)(uintptr_t)rb,
		.nr = nr,
	};
	long ret;

	ret = syscall(__NR_io_uring_register, ring->ring_fd,
		      IORING_REGISTER_BUFFERS_UPDATE, &up, sizeof(up));
	return ret < 0 ? -errno : (int)ret;
}

/*
 * Register @dmabuf_fd in @slot of @ring's (sparse) buffer table for I/O on
 * @target_fd, an O_DIRECT block device. A dma-buf entry carries an empty
 * iovec; its length is the dma-buf's size and the "address" a request
 * passes is the offset into the dma-buf. Returns the number of slots
 * updated (1) or a negative errno.
 */
static inline int dmabuf_rw_register_dmabuf(struct io_uring *ring,
					    unsigned int slot, int target_fd,
					    int dmabuf_fd)
{
	struct iovec iov = { .iov_base = NULL, .iov_len = 0 };
	struct io_uring_reg_buffer rb = {
		.iov_uaddr = (__u64)(uintptr_t)&iov,
		.target_fd = target_fd,
		.dmabuf_fd = dmabuf_fd,
	};

	return dmabuf_rw_update_buffers(ring, slot, &rb, 1);
}

/*
 * Submit one READ_FIXED (@write false) or WRITE_FIXED of @len bytes between
 * offset @buf_off of registered buffer @buf_index and offset @dev_off of
 * @fd, and wait for its completion. Returns cqe->res. Errors of the ring
 * itself are returned as a negative errno too; they do not happen on a
 * healthy ring with nothing else in flight.
 */
static inline int dmabuf_rw_fixed_io(struct io_uring *ring, bool write,
				     int fd, int buf_index, __u64 buf_off,
				     unsigned int len, __u64 dev_off)
{
	/* For a dma-buf buffer the address is the offset into it. */
	void *addr = (void *)(uintptr_t)buf_off;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	int ret;

	sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	if (write)
		io_uring_prep_write_fixed(sqe, fd, addr, len, dev_off,
					  buf_index);
	else
		io_uring_prep_read_fixed(sqe, fd, addr, len, dev_off,
					 buf_index);

	ret = io_uring_submit(ring);
	if (ret < 0)
		return ret;
	if (ret != 1)
		return -EAGAIN;

	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

/*
 * Deterministic data that depends on where it lives on the device: each
 * 512-byte sector is an xorshift64 stream seeded by its sector number and
 * @salt, so data that lands on the wrong sector, or the wrong place in a
 * buffer, does not match. @dev_off and @len must be multiples of 512.
 */
#define DMABUF_RW_SECTOR	512

static inline void dmabuf_rw_fill_pattern(void *buf, __u64 dev_off,
					  size_t len, __u64 salt)
{
	__u8 *p = buf;
	size_t done, i;

	for (done = 0; done < len; done += DMABUF_RW_SECTOR) {
		__u64 sector = (dev_off + done) / DMABUF_RW_SECTOR;
		__u64 x = ((sector + 1) * 0x9e3779b97f4a7c15ULL) ^ salt;

		if (!x)
			x = 1;
		for (i = 0; i < DMABUF_RW_SECTOR; i += sizeof(x)) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			memcpy(p + done + i, &x, sizeof(x));
		}
	}
}

/*
 * Compare @len bytes. Returns -1 if they are equal; otherwise the offset
 * of the first difference, and the number of differing bytes in
 * @nr_diff.
 */
static inline ssize_t dmabuf_rw_first_diff(const void *found,
					   const void *expected, size_t len,
					   size_t *nr_diff)
{
	const __u8 *f = found, *e = expected;
	ssize_t first = -1;
	size_t i;

	*nr_diff = 0;
	if (!memcmp(found, expected, len))
		return -1;

	for (i = 0; i < len; i++) {
		if (f[i] == e[i])
			continue;
		if (first < 0)
			first = i;
		(*nr_diff)++;
	}
	return first;
}

#endif /* __DMABUF_RW_H */
