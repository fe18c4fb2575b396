/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the dmabuf read/write via io_uring selftests: the block
 * device the user named for them, dma-bufs from udmabuf and from the test
 * exporter, CPU access, the test exporter's invalidation and counters,
 * registration of a dma-buf as a fixed buffer, one-shot
 * READ_FIXED/WRITE_FIXED, and a position-dependent data pattern.
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
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/dma-buf.h>
#include <linux/types.h>
#include <linux/udmabuf.h>

#include "kselftest.h"	/* __printf */

/*
 * The block device the tests overwrite: only one the user names in
 * DMABUF_RW_DEV. There is no default: any default is the system disk of
 * some machine.
 */
static inline const char *dmabuf_rw_dev_path(void)
{
	return getenv("DMABUF_RW_DEV");
}

#define DMABUF_RW_DEV_UNSET						\
	"DMABUF_RW_DEV is not set: these tests overwrite the block device they are given; set DMABUF_RW_DEV to an NVMe namespace whose contents may be destroyed (e.g. DMABUF_RW_DEV=/dev/nvme1n1)"

#define DMABUF_RW_WHY_LEN	512

/* Say why in @why, and return @err: never -ENODEV, which means unset. */
__printf(4, 5) static inline int
dmabuf_rw_dev_refuse(char *why, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return err == -ENODEV ? -ENXIO : err;
}

/*
 * Whether the sysfs directory of block device @devt is @disk, or one of
 * @disk's partitions (a subdirectory of it).
 */
static inline bool dmabuf_rw_dev_within(dev_t devt, const char *disk)
{
	char link[64], real[PATH_MAX];
	size_t n = strlen(disk);

	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(devt),
		 minor(devt));
	return realpath(link, real) && !strncmp(real, disk, n) &&
	       (real[n] == '\0' || real[n] == '/');
}

/*
 * Open block device @path, which the user named, for O_DIRECT I/O that
 * overwrites it. Refused when it is not a block device, when it or a
 * partition of it is mounted, when it holds partitions, and when it
 * cannot be opened exclusively (a mount, swap, md, dm or LVM holds it).
 * The exclusive open is only a probe, closed at once: the tests open the
 * device several times.
 *
 * Returns the fd; -ENODEV when @path is NULL or empty (the test skips);
 * another negative errno when @path is refused or cannot be opened. @why
 * says why in both cases.
 */
static inline int dmabuf_rw_dev_open(const char *path, char *why, size_t len)
{
	char disk[PATH_MAX], line[PATH_MAX + 64], mnt[PATH_MAX + 64];
	unsigned int maj, min;
	bool mounted = false;
	struct stat st;
	glob_t parts;
	FILE *f;
	int fd;

	if (!path || !*path) {
		snprintf(why, len, "%s", DMABUF_RW_DEV_UNSET);
		return -ENODEV;
	}
	if (stat(path, &st))
		return dmabuf_rw_dev_refuse(why, len, -errno, "%s: %s", path,
					    strerror(errno));
	if (!S_ISBLK(st.st_mode))
		return dmabuf_rw_dev_refuse(why, len, -ENOTBLK,
					    "refusing %s: not a block device",
					    path);
	snprintf(line, sizeof(line), "/sys/dev/block/%u:%u",
		 major(st.st_rdev), minor(st.st_rdev));
	if (!realpath(line, disk))
		return dmabuf_rw_dev_refuse(why, len, -errno,
					    "refusing %s: cannot check its partitions: %s: %s",
					    path, line, strerror(errno));

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return dmabuf_rw_dev_refuse(why, len, -errno,
					    "refusing %s: cannot check its mounts: /proc/self/mountinfo: %s",
					    path, strerror(errno));
	while (!mounted && fgets(line, sizeof(line), f))
		mounted = sscanf(line, "%*d %*d %u:%u %*s %s", &maj, &min,
				 mnt) == 3 &&
			  dmabuf_rw_dev_within(makedev(maj, min), disk);
	fclose(f);
	if (mounted)
		return dmabuf_rw_dev_refuse(why, len, -EBUSY,
					    "refusing %s: it or a partition of it is mounted on %s",
					    path, mnt);

	snprintf(line, sizeof(line), "%s/*/partition", disk);
	if (!glob(line, 0, NULL, &parts)) {
		globfree(&parts);
		return dmabuf_rw_dev_refuse(why, len, -EBUSY,
					    "refusing %s: it holds partitions",
					    path);
	}

	/* Two test runs on one device would overwrite each other's data. */
	fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (fd < 0 && errno == EBUSY)
		return dmabuf_rw_dev_refuse(why, len, -EBUSY,
					    "refusing %s: it cannot be opened exclusively (a mount, swap, md, dm, LVM or another test run holds it)",
					    path);
	if (fd >= 0) {
		close(fd);
		fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	}
	if (fd < 0)
		return dmabuf_rw_dev_refuse(why, len, -errno, "open %s: %s",
					    path, strerror(errno));
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

/* Why a test skips after dmabuf_rw_ring_init() returned @err, or NULL. */
static inline const char *dmabuf_rw_ring_skip(int err)
{
	if (err == -EOPNOTSUPP)
		return "io_uring not available (CONFIG_IO_URING)";
	if (err == -EPERM)
		return "io_uring disabled (kernel.io_uring_disabled)";
	return NULL;
}

/* 09/11 of the series: iov_uaddr, target_fd, dmabuf_fd. */
static_assert(sizeof(struct io_uring_reg_buffer) == 16,
	      "unexpected struct io_uring_reg_buffer layout");

/*
 * The test exporter's uapi, from the tree under test (lib/, like
 * hmm-tests.c takes test_hmm_uapi.h).
 */
#include "../../../../lib/test_dmabuf_exporter_uapi.h"

#define TEST_DMABUF_EXP_DEV	"/dev/test_dmabuf_exporter"

/*
 * Where the dma-buf comes from: udmabuf (pinned pages of a memfd, never
 * invalidated) or the test exporter (lib/test_dmabuf_exporter.c: pages it
 * can invalidate and migrate on request).
 */
enum dmabuf_rw_exporter {
	DMABUF_RW_UDMABUF,
	DMABUF_RW_TEST_EXPORTER,
	DMABUF_RW_NR_EXPORTERS
};

/* Why a test that needs @exp skips when it is missing. */
static inline const char *dmabuf_rw_exporter_missing(enum dmabuf_rw_exporter exp)
{
	return exp == DMABUF_RW_UDMABUF ?
	       "no /dev/udmabuf (CONFIG_UDMABUF)" :
	       "no " TEST_DMABUF_EXP_DEV " (CONFIG_TEST_DMABUF_EXPORTER)";
}

struct dmabuf_rw_buf {
	enum dmabuf_rw_exporter exporter;
	int memfd;	/* udmabuf only: the memfd behind it */
	int fd;		/* the dma-buf */
	void *map;	/* CPU mapping of the dma-buf, size bytes */
	size_t size;
};

/* A buffer that dmabuf_rw_buf_destroy() can be called on. */
static inline void dmabuf_rw_buf_init(struct dmabuf_rw_buf *buf)
{
	buf->memfd = -1;
	buf->fd = -1;
	buf->map = NULL;
	buf->size = 0;
}

static inline void dmabuf_rw_buf_destroy(struct dmabuf_rw_buf *buf)
{
	if (buf->map && buf->map != MAP_FAILED)
		munmap(buf->map, buf->size);
	if (buf->fd >= 0)
		close(buf->fd);
	if (buf->memfd >= 0)
		close(buf->memfd);
	dmabuf_rw_buf_init(buf);
}

/*
 * A udmabuf of @size bytes (a multiple of the page size) backed by a
 * sealed memfd, in @buf->memfd and @buf->fd. Returns 0 or a negative
 * errno; -ENOENT means there is no /dev/udmabuf.
 */
static inline int udmabuf_create(struct dmabuf_rw_buf *buf, size_t size)
{
	struct udmabuf_create create = {
		.flags = UDMABUF_FLAGS_CLOEXEC,
		.offset = 0,
		.size = size,
	};
	int devfd, ret = 0;

	devfd = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (devfd < 0)
		return -errno;

	buf->memfd = memfd_create("dmabuf-rw", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (buf->memfd < 0 || ftruncate(buf->memfd, size) ||
	    /* udmabuf refuses a memfd whose pages could go away under it. */
	    fcntl(buf->memfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		ret = -errno;
	} else {
		create.memfd = buf->memfd;
		buf->fd = ioctl(devfd, UDMABUF_CREATE, &create);
		if (buf->fd < 0)
			ret = -errno;
	}
	close(devfd);
	return ret;
}

/*
 * An ioctl on the test exporter's device. Returns 0 or a negative errno;
 * -ENOENT means there is no test exporter, -EIO that it is wedged (an
 * earlier wait of this boot timed out: that test's failure is the one to
 * read). Its waits are interruptible, and the reservation lock gives
 * -EINTR when the caller has task work pending (io_uring completions):
 * called again then, as drmIoctl() does.
 */
static inline int test_dmabuf_exp_ioctl(unsigned long cmd, void *arg)
{
	int devfd, ret;

	devfd = open(TEST_DMABUF_EXP_DEV, O_RDWR | O_CLOEXEC);
	if (devfd < 0)
		return -errno;
	do {
		ret = ioctl(devfd, cmd, arg) ? -errno : 0;
	} while (ret == -EINTR);
	close(devfd);
	/* ci/check-defects tells a case's own failure by these two lines. */
	if (ret == -ETIMEDOUT)
		ksft_print_msg("the test exporter timed out: it is wedged from now on\n");
	else if (ret == -EIO)
		ksft_print_msg("%s\n",
			       "the test exporter is wedged: an earlier wait of this boot timed out, see the first failure and the kernel log");
	return ret;
}

/*
 * A test-exporter dma-buf of @size bytes, in @layout with @seg_size
 * (TEST_DMABUF_EXP_LAYOUT_*). Returns its fd or -errno.
 */
static inline int test_dmabuf_exp_create_layout(size_t size, __u32 layout,
						__u32 seg_size)
{
	struct test_dmabuf_exp_create create = {
		.size = size,
		.flags = TEST_DMABUF_EXP_CLOEXEC,
		.layout = layout,
		.seg_size = seg_size,
	};
	int ret;

	ret = test_dmabuf_exp_ioctl(TEST_DMABUF_EXP_IOC_CREATE, &create);
	return ret ? ret : create.fd;
}

/* A test-exporter dma-buf of @size bytes, one page a segment. */
static inline int test_dmabuf_exp_create(size_t size)
{
	return test_dmabuf_exp_create_layout(size, TEST_DMABUF_EXP_LAYOUT_PAGES, 0);
}

/*
 * Invalidate every importer's mappings of @dmabuf_fd and wait for their
 * fences; with TEST_DMABUF_EXP_MIGRATE in @flags, also move the contents
 * to new pages. Returns 0 or a negative errno.
 */
static inline int test_dmabuf_exp_move(int dmabuf_fd, __u32 flags)
{
	struct test_dmabuf_exp_move move = {
		.fd = dmabuf_fd,
		.flags = flags,
	};

	return test_dmabuf_exp_ioctl(TEST_DMABUF_EXP_IOC_MOVE, &move);
}

/* The counters of @dmabuf_fd, or of the whole exporter for -1. */
static inline int test_dmabuf_exp_counters(int dmabuf_fd,
					   struct test_dmabuf_exp_counters *c)
{
	memset(c, 0, sizeof(*c));
	c->fd = dmabuf_fd;
	return test_dmabuf_exp_ioctl(TEST_DMABUF_EXP_IOC_COUNTERS, c);
}

/*
 * Wait, up to the exporter's default 10 s, for importers to drop what
 * @flags names (TEST_DMABUF_EXP_UNMAPPED, _DETACHED, _RELEASED): they may
 * do it from a workqueue after the call that ended their use returned.
 * Returns 0 or a negative errno (-ETIMEDOUT: they did not).
 */
static inline int test_dmabuf_exp_wait(int dmabuf_fd, __u32 flags)
{
	struct test_dmabuf_exp_wait wait = {
		.fd = dmabuf_fd,
		.flags = flags,
	};

	return test_dmabuf_exp_ioctl(TEST_DMABUF_EXP_IOC_WAIT, &wait);
}

/*
 * Once nothing uses @dmabuf_fd any more: wait for its importers to unmap
 * and detach, and check its counters in @c. Returns 0 when no mapping,
 * attachment or pin is left and no retired page was written by DMA after
 * its invalidation; -EBUSY when something is left; another negative
 * errno when the exporter could not tell (-ETIMEDOUT: still mapped or
 * attached after 10 s).
 */
static inline int test_dmabuf_exp_settle(int dmabuf_fd,
					 struct test_dmabuf_exp_counters *c)
{
	int ret;

	ret = test_dmabuf_exp_wait(dmabuf_fd, TEST_DMABUF_EXP_UNMAPPED |
				   TEST_DMABUF_EXP_DETACHED);
	if (test_dmabuf_exp_counters(dmabuf_fd, c))
		return ret ? ret : -EIO;
	if (ret)
		return ret;
	if (c->maps != c->unmaps || c->attachments || c->pins || c->stale_dma)
		return -EBUSY;
	return 0;
}

#define DMABUF_RW_COUNTERS_STR	256

/* @c as text in @buf, for a test's log. */
static inline const char *test_dmabuf_exp_str(const struct test_dmabuf_exp_counters *c,
					      char *buf, size_t len)
{
	snprintf(buf, len,
		 "%llu attachments, %llu pins, %llu maps, %llu unmaps, %llu invalidations, %llu migrations, %llu stale DMA pages",
		 (unsigned long long)c->attachments,
		 (unsigned long long)c->pins,
		 (unsigned long long)c->maps, (unsigned long long)c->unmaps,
		 (unsigned long long)c->invalidations,
		 (unsigned long long)c->migrations,
		 (unsigned long long)c->stale_dma);
	return buf;
}

/*
 * Create a dma-buf of @size bytes (a multiple of the page size) from
 * @exporter, in @layout with @seg_size (the test exporter's
 * TEST_DMABUF_EXP_LAYOUT_*; udmabuf has only its pages), and map it for
 * CPU access. Returns 0 or a negative errno; -ENOENT means the exporter
 * is missing (see dmabuf_rw_exporter_missing()).
 */
static inline int dmabuf_rw_buf_create_layout(struct dmabuf_rw_buf *buf,
					      enum dmabuf_rw_exporter exporter,
					      size_t size, __u32 layout,
					      __u32 seg_size)
{
	int ret;

	dmabuf_rw_buf_init(buf);
	buf->exporter = exporter;
	buf->size = size;

	if (exporter == DMABUF_RW_UDMABUF) {
		ret = layout == TEST_DMABUF_EXP_LAYOUT_PAGES ?
		      udmabuf_create(buf, size) : -EINVAL;
	} else {
		buf->fd = test_dmabuf_exp_create_layout(size, layout, seg_size);
		ret = buf->fd < 0 ? buf->fd : 0;
	}
	if (ret)
		goto err;

	buf->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			buf->fd, 0);
	if (buf->map == MAP_FAILED) {
		ret = -errno;
		goto err;
	}
	return 0;
err:
	dmabuf_rw_buf_destroy(buf);
	return ret;
}

/* dmabuf_rw_buf_create_layout(), one page a segment. */
static inline int dmabuf_rw_buf_create(struct dmabuf_rw_buf *buf,
				       enum dmabuf_rw_exporter exporter,
				       size_t size)
{
	return dmabuf_rw_buf_create_layout(buf, exporter, size,
					   TEST_DMABUF_EXP_LAYOUT_PAGES, 0);
}

/*
 * Whether the kernel bounces every DMA mapping (swiotlb=force). udmabuf's
 * begin/end_cpu_access sync a mapping of its own, for its misc device;
 * bounced, that sync copies the bounce buffer's stale bytes over what an
 * importer's device wrote, so CPU checks of a udmabuf's contents cannot
 * work there.
 */
static inline bool dmabuf_rw_swiotlb_forced(void)
{
	char cmdline[4096];
	bool forced = false;
	ssize_t n;
	int fd;

	fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, cmdline, sizeof(cmdline) - 1);
	if (n > 0) {
		cmdline[n] = '\0';
		forced = !!strstr(cmdline, "swiotlb=force");
	}
	close(fd);
	return forced;
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
 * Submit the one SQE that was prepared on @ring and wait for its
 * completion. Returns cqe->res. Errors of the ring itself are returned as
 * a negative errno too; they do not happen on a healthy ring with nothing
 * else in flight.
 */
static inline int dmabuf_rw_submit_one(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	int ret;

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
 * Submit one READ_FIXED (@write false) or WRITE_FIXED of @len bytes between
 * offset @buf_off of registered buffer @buf_index and offset @dev_off of
 * @fd, and wait for its completion. Returns cqe->res, as
 * dmabuf_rw_submit_one().
 */
static inline int dmabuf_rw_fixed_io(struct io_uring *ring, bool write,
				     int fd, int buf_index, __u64 buf_off,
				     unsigned int len, __u64 dev_off)
{
	/* For a dma-buf buffer the address is the offset into it. */
	void *addr = (void *)(uintptr_t)buf_off;
	struct io_uring_sqe *sqe;

	sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	if (write)
		io_uring_prep_write_fixed(sqe, fd, addr, len, dev_off,
					  buf_index);
	else
		io_uring_prep_read_fixed(sqe, fd, addr, len, dev_off,
					 buf_index);
	return dmabuf_rw_submit_one(ring);
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

/*
 * For fixture teardowns (kselftest_harness.h): once nothing uses
 * test-exporter dma-buf @dmabuf_fd any more, expect it settled (see
 * test_dmabuf_exp_settle()); @when says when, for the log.
 */
#define DMABUF_RW_EXPECT_SETTLED(dmabuf_fd, when) do {			\
	struct test_dmabuf_exp_counters __c;				\
	char __why[DMABUF_RW_COUNTERS_STR];				\
	int __ret = test_dmabuf_exp_settle(dmabuf_fd, &__c);		\
									\
	EXPECT_EQ(0, __ret)						\
		TH_LOG("%s, the dma-buf has %s: %s", (when),		\
		       test_dmabuf_exp_str(&__c, __why, sizeof(__why)),	\
		       strerror(-__ret));				\
} while (0)

#endif /* __DMABUF_RW_H */
