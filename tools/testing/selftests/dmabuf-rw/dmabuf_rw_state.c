// SPDX-License-Identifier: GPL-2.0
/*
 * What a user can still change after registering a dma-buf as a fixed
 * buffer for a block device: the target fd's status flags, the fd a
 * request is submitted on, the dma-buf's own fd, the ring (a forked child
 * submitting on it, its buffer table cloned to another ring, a polled
 * ring), the slot (updated while a request from it is in flight), the
 * pages behind the dma-buf; and a partition of the device as the target.
 * After each change a READ_FIXED or WRITE_FIXED through the dma-buf
 * must either fail with an errno and move nothing, or move the right bytes
 * to the right place: never complete with success for data that did not
 * move. Where the same request from a plain registered buffer fails, the
 * dma-buf's must fail too: a dma-buf does not bypass a check.
 *
 * The device is checked through a separate O_DIRECT fd, the dma-buf
 * through its CPU mapping; both are poisoned first, with guards around the
 * transfer. The block device is the one named in DMABUF_RW_DEV; without
 * it the test skips.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <linux/blkpg.h>
#include <linux/falloc.h>

#include "dmabuf_rw.h"
#include "kselftest_harness.h"

#define DMABUF_SIZE	(64 * 1024)
#define NR_SLOTS	4
#define SLOT		1	/* the dma-buf */
#define PLAIN_SLOT	2	/* a plain buffer: the same request without one */
#define BUF_OFF		4096	/* where in either buffer the transfer is */
#define IO_LEN		8192
#define GUARD		4096	/* device bytes checked on each side */
#define DEV_OFF		(1 << 20)
#define SPAN_OFF	(DEV_OFF - GUARD)
#define SPAN_LEN	(GUARD + IO_LEN + GUARD)
/* Where dmabuf_fd_closed copies the transfer to, through the dma-buf. */
#define DEV_OFF2	(2 << 20)
#define POISON		0x5a
/* The partition the partition test adds, in memory only (BLKPG). */
#define PART_NO		15
#define PART_START	(8 << 20)
#define PART_LEN	(4 << 20)

enum outcome {
	MUST_WORK,	/* the right data */
	MAY_FAIL,	/* the right data, or an errno and nothing moved */
	MUST_FAIL,	/* an errno and nothing moved */
};

/* What a check needs: the buffers, the variant, the independent path. */
struct state_io {
	struct dmabuf_rw_buf *dbuf;
	void *plain;		/* registered at PLAIN_SLOT */
	int check_fd;		/* O_DIRECT, not the registered file */
	off_t dev_base;		/* where the target starts, on check_fd */
	bool write;
	__u64 round;		/* a new pattern each request */
	void *span;		/* SPAN_LEN, aligned for O_DIRECT */
	void *expect;		/* SPAN_LEN or DMABUF_SIZE */
	void *found;		/* DMABUF_SIZE */
};

FIXTURE(state) {
	const char *dev_path;
	int dev_fd;
	struct io_uring ring;
	bool ring_ready;
	bool buffers_registered;
	struct io_uring ring2;	/* a second ring, for the tests that need it */
	bool ring2_ready;
	int part_fd;		/* the partition test's target */
	bool part_added;
	struct dmabuf_rw_buf dbuf;
	struct state_io io;
};

FIXTURE_VARIANT(state) {
	enum dmabuf_rw_exporter exporter;
	bool write;
};

FIXTURE_VARIANT_ADD(state, udmabuf_read) {
	.exporter = DMABUF_RW_UDMABUF,
};

FIXTURE_VARIANT_ADD(state, udmabuf_write) {
	.exporter = DMABUF_RW_UDMABUF,
	.write = true,
};

FIXTURE_VARIANT_ADD(state, texp_read) {
	.exporter = DMABUF_RW_TEST_EXPORTER,
};

FIXTURE_VARIANT_ADD(state, texp_write) {
	.exporter = DMABUF_RW_TEST_EXPORTER,
	.write = true,
};

static void *alloc_aligned(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Register a plain buffer at PLAIN_SLOT of @ring's sparse table. */
static int register_plain(struct io_uring *ring, void *plain)
{
	struct iovec iov = { .iov_base = plain, .iov_len = DMABUF_SIZE };
	__u64 tag = 0;

	return io_uring_register_buffers_update_tag(ring, PLAIN_SLOT, &iov,
						    &tag, 1);
}

/* A sparse table with the dma-buf at SLOT for @fd, the plain buffer too. */
static int register_both(struct io_uring *ring, int fd,
			 const struct state_io *io)
{
	int ret;

	ret = io_uring_register_buffers_sparse(ring, NR_SLOTS);
	if (ret)
		return ret;
	ret = dmabuf_rw_register_dmabuf(ring, SLOT, fd, io->dbuf->fd);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	ret = register_plain(ring, io->plain);
	return ret == 1 ? 0 : (ret < 0 ? ret : -EIO);
}

/* Add, resize or delete partition @pno of the disk open on @disk_fd. */
static int blkpg(int disk_fd, int op, int pno, long long start,
		 long long length)
{
	struct blkpg_partition part = {
		.start = start,
		.length = length,
		.pno = pno,
	};
	struct blkpg_ioctl_arg arg = {
		.op = op,
		.datalen = sizeof(part),
		.data = &part,
	};

	return ioctl(disk_fd, BLKPG, &arg) ? -errno : 0;
}

FIXTURE_SETUP(state)
{
	char why[DMABUF_RW_WHY_LEN];
	int ret;

	self->dev_fd = -1;
	self->part_fd = -1;
	self->io.check_fd = -1;
	dmabuf_rw_buf_init(&self->dbuf);
	self->io.dbuf = &self->dbuf;
	self->io.write = variant->write;

	self->dev_path = dmabuf_rw_dev_path();
	self->dev_fd = dmabuf_rw_dev_open(self->dev_path, why, sizeof(why));
	if (self->dev_fd == -ENODEV)
		SKIP(return, "%s", why);
	ASSERT_LE(0, self->dev_fd) TH_LOG("%s", why);
	self->io.check_fd = open(self->dev_path, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, self->io.check_fd)
		TH_LOG("open %s: %s", self->dev_path, strerror(errno));

	if (variant->exporter == DMABUF_RW_UDMABUF &&
	    dmabuf_rw_swiotlb_forced())
		SKIP(return, "swiotlb=force bounces udmabuf's own CPU-access syncs");

	self->io.plain = alloc_aligned(DMABUF_SIZE);
	self->io.span = alloc_aligned(SPAN_LEN);
	self->io.expect = alloc_aligned(DMABUF_SIZE);
	self->io.found = alloc_aligned(DMABUF_SIZE);
	ASSERT_TRUE(self->io.plain && self->io.span && self->io.expect &&
		    self->io.found);
	/* Not zeroes: what the plain buffer's writes leave is recognisable. */
	dmabuf_rw_fill_pattern(self->io.plain, 0, DMABUF_SIZE, 0x5eed);

	ret = dmabuf_rw_ring_init(&self->ring, 8);
	if (dmabuf_rw_ring_skip(ret))
		SKIP(return, "%s", dmabuf_rw_ring_skip(ret));
	ASSERT_EQ(0, ret) TH_LOG("io_uring_queue_init: %s", strerror(-ret));
	self->ring_ready = true;

	ret = dmabuf_rw_buf_create(&self->dbuf, variant->exporter, DMABUF_SIZE);
	if (ret == -ENOENT)
		SKIP(return, "%s", dmabuf_rw_exporter_missing(variant->exporter));
	ASSERT_EQ(0, ret) TH_LOG("creating the dma-buf: %s", strerror(-ret));

	ret = register_both(&self->ring, self->dev_fd, &self->io);
	self->buffers_registered = true;
	ASSERT_EQ(0, ret) TH_LOG("registering the buffers: %s", strerror(-ret));
}

FIXTURE_TEARDOWN(state)
{
	if (self->buffers_registered)
		EXPECT_EQ(0, io_uring_unregister_buffers(&self->ring));
	if (self->ring_ready)
		io_uring_queue_exit(&self->ring);
	if (self->ring2_ready)
		io_uring_queue_exit(&self->ring2);
	if (self->dbuf.fd >= 0 &&
	    self->dbuf.exporter == DMABUF_RW_TEST_EXPORTER)
		DMABUF_RW_EXPECT_SETTLED(self->dbuf.fd, "after unregistering");
	dmabuf_rw_buf_destroy(&self->dbuf);
	if (self->io.check_fd >= 0)
		close(self->io.check_fd);
	if (self->part_fd >= 0)
		close(self->part_fd);
	if (self->part_added)
		EXPECT_EQ(0, blkpg(self->dev_fd, BLKPG_DEL_PARTITION, PART_NO,
				   0, 0));
	if (self->dev_fd >= 0)
		close(self->dev_fd);
	if (self->io.plain)
		munmap(self->io.plain, DMABUF_SIZE);
	if (self->io.span)
		munmap(self->io.span, SPAN_LEN);
	if (self->io.expect)
		munmap(self->io.expect, DMABUF_SIZE);
	if (self->io.found)
		munmap(self->io.found, DMABUF_SIZE);
}

static int full_pio(bool write, int fd, void *buf, size_t len, off_t off)
{
	ssize_t n = write ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* The dma-buf through its CPU mapping, bracketed by the sync ioctls. */
static int dbuf_access(const struct dmabuf_rw_buf *dbuf, bool write,
		       void *buf)
{
	__u64 dir = write ? DMA_BUF_SYNC_WRITE : DMA_BUF_SYNC_READ;
	int ret;

	ret = dmabuf_cpu_begin(dbuf->fd, dir);
	if (ret)
		return ret;
	if (write)
		memcpy(dbuf->map, buf, DMABUF_SIZE);
	else
		memcpy(buf, dbuf->map, DMABUF_SIZE);
	return dmabuf_cpu_end(dbuf->fd, dir);
}

/* The request of the variant, from @slot of @ring, on @fd. */
static void prep_request(struct io_uring_sqe *sqe, const struct state_io *io,
			 int fd, int slot)
{
	void *addr = slot == SLOT ? (void *)(uintptr_t)BUF_OFF :
		     (__u8 *)io->plain + BUF_OFF;

	if (io->write)
		io_uring_prep_write_fixed(sqe, fd, addr, IO_LEN, DEV_OFF, slot);
	else
		io_uring_prep_read_fixed(sqe, fd, addr, IO_LEN, DEV_OFF, slot);
}

static int submit_request(struct io_uring *ring, const struct state_io *io,
			  int fd, int slot)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return -EBUSY;
	prep_request(sqe, io, fd, slot);
	return dmabuf_rw_submit_one(ring);
}

/*
 * Before the dma-buf's request: the device span holds this round's "old"
 * pattern, the dma-buf POISON but, for a write, the "new" pattern where
 * the transfer comes from.
 */
static int prime(struct state_io *io)
{
	int ret;

	io->round++;
	dmabuf_rw_fill_pattern(io->span, SPAN_OFF, SPAN_LEN, io->round << 1);
	ret = full_pio(true, io->check_fd, io->span, SPAN_LEN,
		       io->dev_base + SPAN_OFF);
	if (ret)
		return ret;
	memset(io->expect, POISON, DMABUF_SIZE);
	if (io->write)
		dmabuf_rw_fill_pattern((__u8 *)io->expect + BUF_OFF, DEV_OFF,
				       IO_LEN, io->round << 1 | 1);
	return io->dbuf->map ? dbuf_access(io->dbuf, true, io->expect) : 0;
}

/*
 * After the dma-buf's request with result @res: the first @res bytes of
 * the transfer must be in place and nothing else touched; with an errno
 * nothing may have moved. Checks the device span (both directions: a read
 * must not write it) and, for a read, the dma-buf.
 */
static void check_moved(struct __test_metadata *_metadata,
			struct state_io *io, int res, const char *what)
{
	__u8 *expect = io->expect, *found = io->found;
	size_t moved = res > 0 && res <= IO_LEN ? res : 0;
	size_t nr_diff;
	ssize_t first;
	int ret;

	/* The device span as it must be now. */
	dmabuf_rw_fill_pattern(expect, SPAN_OFF, SPAN_LEN, io->round << 1);
	if (io->write)
		dmabuf_rw_fill_pattern(expect + GUARD, DEV_OFF, moved,
				       io->round << 1 | 1);
	memset(found, POISON ^ 0xff, SPAN_LEN);
	ret = full_pio(false, io->check_fd, found, SPAN_LEN,
		       io->dev_base + SPAN_OFF);
	ASSERT_EQ(0, ret) TH_LOG("reading the device back: %s", strerror(-ret));
	first = dmabuf_rw_first_diff(found, expect, SPAN_LEN, &nr_diff);
	EXPECT_EQ(-1, first)
		TH_LOG("%s: %s, and the device differs at byte %zd of the span (%zu bytes; the transfer is bytes %d to %d)",
		       what, res >= 0 ? "it completed" : strerror(-res), first,
		       nr_diff, GUARD, GUARD + IO_LEN);

	if (io->write || !io->dbuf->map)
		return;
	memset(expect, POISON, DMABUF_SIZE);
	dmabuf_rw_fill_pattern(expect + BUF_OFF, DEV_OFF, moved,
			       io->round << 1);
	memset(found, POISON ^ 0xff, DMABUF_SIZE);
	ret = dbuf_access(io->dbuf, false, found);
	ASSERT_EQ(0, ret) TH_LOG("reading the dma-buf: %s", strerror(-ret));
	first = dmabuf_rw_first_diff(found, expect, DMABUF_SIZE, &nr_diff);
	EXPECT_EQ(-1, first)
		TH_LOG("%s: %s, and the dma-buf differs at byte %zd (%zu bytes; the transfer is bytes %d to %d)",
		       what, res >= 0 ? "it completed" : strerror(-res), first,
		       nr_diff, BUF_OFF, BUF_OFF + IO_LEN);
}

/* Judge @res, the dma-buf request's result, against @want and @plain. */
static void check_result(struct __test_metadata *_metadata, int res,
			 int plain, enum outcome want, const char *what)
{
	if (res >= 0 && res != IO_LEN)
		TH_LOG("%s: %d bytes of %d: a short transfer", what, res,
		       IO_LEN);
	EXPECT_TRUE(res == IO_LEN || res < 0);
	if (want == MUST_WORK)
		EXPECT_EQ(IO_LEN, res)
			TH_LOG("%s: %s", what, strerror(-res));
	if (want == MUST_FAIL)
		EXPECT_GT(0, res) TH_LOG("%s: it completed", what);
	if (plain < 0)
		EXPECT_GT(0, res)
			TH_LOG("%s: it completed, where a plain buffer's request fails with %s",
			       what, strerror(-plain));
	if (res < 0)
		TH_LOG("%s: %s (from a plain buffer: %s)", what, strerror(-res),
		       plain < 0 ? strerror(-plain) : "it completes");
}

/*
 * The variant's request on @fd of @ring: from the plain buffer first (its
 * result only), then from the dma-buf, which must give @want and move
 * the right bytes or none.
 */
static void check_request(struct __test_metadata *_metadata,
			  struct state_io *io, struct io_uring *ring, int fd,
			  enum outcome want, const char *what)
{
	int plain, res, ret;

	plain = submit_request(ring, io, fd, PLAIN_SLOT);
	ret = prime(io);
	ASSERT_EQ(0, ret) TH_LOG("priming: %s", strerror(-ret));
	res = submit_request(ring, io, fd, SLOT);
	check_result(_metadata, res, plain, want, what);
	check_moved(_metadata, io, res, what);
}

/* Nothing changed: the request works (the checks themselves work). */
TEST_F(state, unchanged)
{
	check_request(_metadata, &self->io, &self->ring, self->dev_fd,
		      MUST_WORK, "nothing changed");
}

static void set_fl(struct __test_metadata *_metadata, int fd, int set,
		   int clear)
{
	int fl = fcntl(fd, F_GETFL);

	ASSERT_LE(0, fl) TH_LOG("F_GETFL: %s", strerror(errno));
	ASSERT_EQ(0, fcntl(fd, F_SETFL, (fl | set) & ~clear))
		TH_LOG("F_SETFL: %s", strerror(errno));
}

/*
 * Buffered I/O cannot copy to or from a dma-buf it has no pages of: the
 * request fails, as registration would have (EINVAL), or moves the data.
 */
TEST_F(state, o_direct_cleared)
{
	set_fl(_metadata, self->dev_fd, 0, O_DIRECT);
	check_request(_metadata, &self->io, &self->ring, self->dev_fd,
		      MAY_FAIL, "O_DIRECT cleared with F_SETFL");
}

TEST_F(state, o_nonblock_set)
{
	set_fl(_metadata, self->dev_fd, O_NONBLOCK, 0);
	check_request(_metadata, &self->io, &self->ring, self->dev_fd,
		      MAY_FAIL, "O_NONBLOCK set with F_SETFL");
}

/* A block device has no end to append at: O_APPEND changes nothing. */
TEST_F(state, o_append_set)
{
	set_fl(_metadata, self->dev_fd, O_APPEND, 0);
	check_request(_metadata, &self->io, &self->ring, self->dev_fd,
		      MUST_WORK, "O_APPEND set with F_SETFL");
}

/* A dup() is the same open file: the registration's. */
TEST_F(state, dup_of_target)
{
	int fd = dup(self->dev_fd);

	ASSERT_LE(0, fd) TH_LOG("dup: %s", strerror(errno));
	check_request(_metadata, &self->io, &self->ring, fd, MUST_WORK,
		      "on a dup() of the target fd");
	close(fd);
}

TEST_F(state, another_open_direct)
{
	int fd = open(self->dev_path, O_RDWR | O_DIRECT | O_CLOEXEC);

	ASSERT_LE(0, fd) TH_LOG("open: %s", strerror(errno));
	check_request(_metadata, &self->io, &self->ring, fd, MAY_FAIL,
		      "on another O_DIRECT open of the device");
	close(fd);
}

TEST_F(state, another_open_buffered)
{
	int fd = open(self->dev_path, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd) TH_LOG("open: %s", strerror(errno));
	check_request(_metadata, &self->io, &self->ring, fd, MAY_FAIL,
		      "on another, buffered, open of the device");
	close(fd);
}

/*
 * The target fd closed and its number taken by a regular file: the
 * request on that number must reach neither the file nor the device.
 * The plain buffer's request (zeroes) is what the file must still hold.
 */
TEST_F(state, target_fd_reused)
{
	__u8 *file = self->io.found;
	size_t nr_diff;
	ssize_t first;
	int memfd;

	memfd = memfd_create("dmabuf_rw_state", MFD_CLOEXEC);
	ASSERT_LE(0, memfd) TH_LOG("memfd_create: %s", strerror(errno));
	ASSERT_EQ(self->dev_fd, dup2(memfd, self->dev_fd))
		TH_LOG("dup2: %s", strerror(errno));
	close(memfd);

	check_request(_metadata, &self->io, &self->ring, self->dev_fd,
		      MUST_FAIL, "on the target's fd number, now a memfd");
	if (!self->io.write)
		return;
	memset(file, POISON, IO_LEN);
	ASSERT_EQ(IO_LEN, pread(self->dev_fd, file, IO_LEN, DEV_OFF));
	first = dmabuf_rw_first_diff(file, (__u8 *)self->io.plain + BUF_OFF,
				     IO_LEN, &nr_diff);
	EXPECT_EQ(-1, first)
		TH_LOG("the memfd now on the target's number was written: byte %zd, %zu bytes",
		       first, nr_diff);
}

/*
 * The registration holds the dma-buf: with its fd closed and its CPU
 * mapping gone, data still goes through it. Read: device to dma-buf, then
 * dma-buf to elsewhere on the device. Write: what the CPU put in the
 * dma-buf before its fd was closed, to the device.
 */
TEST_F(state, dmabuf_fd_closed)
{
	struct test_dmabuf_exp_counters c;
	struct state_io *io = &self->io;
	struct test_dmabuf_exp_wait wait = {
		.fd = -1,
		.flags = TEST_DMABUF_EXP_RELEASED,
	};
	bool texp = self->dbuf.exporter == DMABUF_RW_TEST_EXPORTER;
	size_t nr_diff;
	ssize_t first;
	int ret;

	/* Where the transfer ends up, poisoned. */
	memset(io->found, POISON, IO_LEN);
	ASSERT_EQ(0, full_pio(true, io->check_fd, io->found, IO_LEN, DEV_OFF2));
	ASSERT_EQ(0, prime(io));
	if (texp)
		ASSERT_EQ(0, test_dmabuf_exp_counters(-1, &c));

	/* A wait on the exporter's totals replaces the teardown's. */
	munmap(self->dbuf.map, DMABUF_SIZE);
	self->dbuf.map = NULL;
	close(self->dbuf.fd);
	self->dbuf.fd = -1;

	if (!io->write) {
		ret = submit_request(&self->ring, io, self->dev_fd, SLOT);
		EXPECT_EQ(IO_LEN, ret)
			TH_LOG("READ_FIXED with the dma-buf's fd closed: %s",
			       ret < 0 ? strerror(-ret) : "short");
	}
	ret = dmabuf_rw_fixed_io(&self->ring, true, self->dev_fd, SLOT,
				 BUF_OFF, IO_LEN, DEV_OFF2);
	EXPECT_EQ(IO_LEN, ret)
		TH_LOG("WRITE_FIXED with the dma-buf's fd closed: %s",
		       ret < 0 ? strerror(-ret) : "short");

	/* The device's pattern for a read, the CPU's for a write. */
	dmabuf_rw_fill_pattern(io->expect, DEV_OFF, IO_LEN,
			       io->round << 1 | io->write);
	memset(io->span, POISON ^ 0xff, IO_LEN);
	ASSERT_EQ(0, full_pio(false, io->check_fd, io->span, IO_LEN,
			      DEV_OFF2));
	first = dmabuf_rw_first_diff(io->span, io->expect, IO_LEN, &nr_diff);
	EXPECT_EQ(-1, first)
		TH_LOG("what went through the dma-buf differs at %zd (%zu bytes)",
		       first, nr_diff);

	if (!texp)
		return;
	EXPECT_EQ(0, io_uring_unregister_buffers(&self->ring));
	self->buffers_registered = false;
	/* Ours is gone; buffers other programs left are not this test's. */
	wait.buffers = c.buffers - 1;
	ret = test_dmabuf_exp_ioctl(TEST_DMABUF_EXP_IOC_WAIT, &wait);
	EXPECT_EQ(0, ret)
		TH_LOG("the dma-buf whose fd was closed is not released after unregistering: %s",
		       strerror(-ret));
}

/*
 * A child after fork() submits on the parent's ring: the dma-buf has no
 * user pages, so nothing depends on whose memory map the request sees.
 */
TEST_F(state, fork_child_submits)
{
	int pipefd[2], res = -EIO, plain, status;
	pid_t pid;

	plain = submit_request(&self->ring, &self->io, self->dev_fd,
			       PLAIN_SLOT);
	ASSERT_EQ(0, prime(&self->io));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid) TH_LOG("fork: %s", strerror(errno));
	if (!pid) {
		/*
		 * The ring's SQ and CQ are shared, liburing's view of them
		 * is not: after this the parent's io_uring struct is stale,
		 * and the parent submits nothing more on it.
		 */
		res = submit_request(&self->ring, &self->io, self->dev_fd,
				     SLOT);
		_exit(write(pipefd[1], &res, sizeof(res)) == sizeof(res) ?
		      0 : 1);
	}
	close(pipefd[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	ASSERT_EQ(sizeof(res), read(pipefd[0], &res, sizeof(res)));
	close(pipefd[0]);
	check_result(_metadata, res, plain, MUST_WORK,
		     "submitted by a forked child on the parent's ring");
	check_moved(_metadata, &self->io, res,
		    "submitted by a forked child on the parent's ring");
}

/* struct io_uring_clone_buffers is in the uapi of the tree under test. */
static int clone_buffers(struct io_uring *dst, struct io_uring *src)
{
	struct io_uring_clone_buffers arg = { .src_fd = src->ring_fd };
	long ret;

	ret = syscall(__NR_io_uring_register, dst->ring_fd,
		      IORING_REGISTER_CLONE_BUFFERS, &arg, 1);
	return ret < 0 ? -errno : 0;
}

/*
 * The buffer table cloned to another ring: the clone's dma-buf slot works
 * there, and keeps working once the first ring unregistered its own.
 */
TEST_F(state, buffers_cloned)
{
	struct io_uring *ring2 = &self->ring2;
	int ret;

	ret = io_uring_queue_init(8, ring2, 0);
	ASSERT_EQ(0, ret) TH_LOG("io_uring_queue_init: %s", strerror(-ret));
	self->ring2_ready = true;
	ret = clone_buffers(ring2, &self->ring);
	ASSERT_EQ(0, ret)
		TH_LOG("IORING_REGISTER_CLONE_BUFFERS: %s", strerror(-ret));
	check_request(_metadata, &self->io, ring2, self->dev_fd, MUST_WORK,
		      "from the clone of the buffer table");
	EXPECT_EQ(0, io_uring_unregister_buffers(&self->ring));
	self->buffers_registered = false;
	check_request(_metadata, &self->io, ring2, self->dev_fd, MUST_WORK,
		      "from the clone, the first ring's table unregistered");
	EXPECT_EQ(0, io_uring_unregister_buffers(ring2));
}

/* Whether the queue of the device open on @fd has poll queues. */
static bool queue_polls(int fd)
{
	char path[64];
	struct stat st;
	int polls = 0;
	FILE *f;

	if (fstat(fd, &st))
		return false;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/io_poll",
		 major(st.st_rdev), minor(st.st_rdev));
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fscanf(f, "%d", &polls) != 1)
		polls = 0;
	fclose(f);
	return polls == 1;
}

/*
 * A polled ring. With a poll queue (the guest boots nvme.poll_queues=1)
 * the request must work, reaped by polling through the batched
 * completion path; without one the block layer refuses polled requests,
 * the dma-buf's as the plain buffer's, and nothing moves.
 */
TEST_F(state, iopoll_ring)
{
	struct io_uring *ring2 = &self->ring2;
	bool polls = queue_polls(self->dev_fd);
	int ret;

	ret = io_uring_queue_init(8, ring2, IORING_SETUP_IOPOLL);
	ASSERT_EQ(0, ret) TH_LOG("io_uring_queue_init: %s", strerror(-ret));
	self->ring2_ready = true;
	ret = register_both(ring2, self->dev_fd, &self->io);
	ASSERT_EQ(0, ret)
		TH_LOG("registering on the polled ring: %s", strerror(-ret));
	check_request(_metadata, &self->io, ring2, self->dev_fd,
		      polls ? MUST_WORK : MAY_FAIL,
		      polls ? "on a ring with IORING_SETUP_IOPOLL, the queue polling" :
			      "on a ring with IORING_SETUP_IOPOLL, no poll queue");
	EXPECT_EQ(0, io_uring_unregister_buffers(ring2));
}

/* The device node of partition @pno of the disk open on @disk_fd. */
static int partition_path(int disk_fd, int pno, char *path, size_t len)
{
	char dir[64], attr[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int nr, ret = -ENOENT;
	FILE *f;
	DIR *d;

	if (fstat(disk_fd, &st))
		return -errno;
	snprintf(dir, sizeof(dir), "/sys/dev/block/%u:%u",
		 major(st.st_rdev), minor(st.st_rdev));
	d = opendir(dir);
	if (!d)
		return -errno;
	while (ret && (de = readdir(d))) {
		snprintf(attr, sizeof(attr), "%s/%s/partition", dir,
			 de->d_name);
		f = fopen(attr, "re");
		if (!f)
			continue;
		if (fscanf(f, "%d", &nr) == 1 && nr == pno) {
			snprintf(path, len, "/dev/%s", de->d_name);
			ret = 0;
		}
		fclose(f);
	}
	closedir(d);
	return ret;
}

/*
 * A partition of the device as the target, added with BLKPG (in memory:
 * nothing is written to a partition table). Registration may refuse it
 * (EINVAL or EOPNOTSUPP, the slot keeping what it had); if it takes it,
 * the transfer must land at the partition's offset on the device; once the partition ends in the
 * middle of the request, the request must stop at its end, as a plain
 * buffer's does, and write nothing beyond it. After unregistering,
 * nothing may hold the partition open: it must delete.
 */
TEST_F(state, partition)
{
	struct state_io *io = &self->io;
	char path[PATH_MAX];
	int plain, res, ret;

	/* One that a failed run left; there is none otherwise. */
	blkpg(self->dev_fd, BLKPG_DEL_PARTITION, PART_NO, 0, 0);
	ret = blkpg(self->dev_fd, BLKPG_ADD_PARTITION, PART_NO, PART_START,
		    PART_LEN);
	ASSERT_EQ(0, ret)
		TH_LOG("BLKPG_ADD_PARTITION %d of %s: %s", PART_NO,
		       self->dev_path, strerror(-ret));
	self->part_added = true;
	ret = partition_path(self->dev_fd, PART_NO, path, sizeof(path));
	ASSERT_EQ(0, ret)
		TH_LOG("partition %d of %s in sysfs: %s", PART_NO,
		       self->dev_path, strerror(-ret));
	self->part_fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, self->part_fd)
		TH_LOG("open %s: %s", path, strerror(errno));
	ret = dmabuf_rw_register_dmabuf(&self->ring, SLOT, self->part_fd,
					self->dbuf.fd);
	if (ret != 1) {
		/* Refused: with a clear errno, and the slot as it was. */
		EXPECT_TRUE(ret == -EINVAL || ret == -EOPNOTSUPP)
			TH_LOG("registering the dma-buf for %s: %s", path,
			       ret < 0 ? strerror(-ret) : "no slot updated");
		check_request(_metadata, io, &self->ring, self->dev_fd,
			      MUST_WORK, "the slot after the partition was refused");
		return;
	}

	io->dev_base = PART_START;
	/* Patterns that no other test left where a lost offset would go. */
	io->round = 1 << 16;
	check_request(_metadata, io, &self->ring, self->part_fd, MUST_WORK,
		      "on a partition of the device");

	ret = blkpg(self->dev_fd, BLKPG_RESIZE_PARTITION, PART_NO, PART_START,
		    DEV_OFF + IO_LEN / 2);
	ASSERT_EQ(0, ret)
		TH_LOG("BLKPG_RESIZE_PARTITION: %s", strerror(-ret));
	plain = submit_request(&self->ring, io, self->part_fd, PLAIN_SLOT);
	ret = prime(io);
	ASSERT_EQ(0, ret) TH_LOG("priming: %s", strerror(-ret));
	res = submit_request(&self->ring, io, self->part_fd, SLOT);
	EXPECT_EQ(IO_LEN / 2, res)
		TH_LOG("across the partition's end: %d (from a plain buffer: %d)",
		       res, plain);
	check_moved(_metadata, io, res, "across the partition's end");

	EXPECT_EQ(0, io_uring_unregister_buffers(&self->ring));
	self->buffers_registered = false;
	close(self->part_fd);
	self->part_fd = -1;
	ret = blkpg(self->dev_fd, BLKPG_DEL_PARTITION, PART_NO, 0, 0);
	EXPECT_EQ(0, ret)
		TH_LOG("deleting the partition after unregistering: %s",
		       strerror(-ret));
	self->part_added = ret != 0;
}

/*
 * The dma-buf's slot updated to a plain buffer while a request from it is
 * in flight, then back. The request imports its buffer when it is issued,
 * inside io_uring_submit(), and on a DEFER_TASKRUN ring it completes only
 * when this task waits for it: the update always comes while the request
 * holds the dma-buf's registration. The request must still move its data
 * through the dma-buf; then the slot is the plain buffer (a request that
 * addresses it as the dma-buf fails and moves nothing), and it takes the
 * dma-buf again.
 */
TEST_F(state, slot_updated_in_flight)
{
	struct io_uring *ring2 = &self->ring2;
	struct state_io *io = &self->io;
	struct iovec iov = { .iov_base = io->plain, .iov_len = DMABUF_SIZE };
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int plain, res, ret;
	__u64 tag = 0;

	ret = io_uring_queue_init(8, ring2, IORING_SETUP_SINGLE_ISSUER |
				  IORING_SETUP_DEFER_TASKRUN);
	ASSERT_EQ(0, ret) TH_LOG("io_uring_queue_init: %s", strerror(-ret));
	self->ring2_ready = true;
	ret = register_both(ring2, self->dev_fd, io);
	ASSERT_EQ(0, ret) TH_LOG("registering: %s", strerror(-ret));

	plain = submit_request(ring2, io, self->dev_fd, PLAIN_SLOT);
	ret = prime(io);
	ASSERT_EQ(0, ret) TH_LOG("priming: %s", strerror(-ret));
	sqe = io_uring_get_sqe(ring2);
	ASSERT_NE(NULL, sqe);
	prep_request(sqe, io, self->dev_fd, SLOT);
	ASSERT_EQ(1, io_uring_submit(ring2));
	ret = io_uring_register_buffers_update_tag(ring2, SLOT, &iov, &tag, 1);
	EXPECT_EQ(1, ret)
		TH_LOG("updating the slot to a plain buffer, a request in flight: %s",
		       ret < 0 ? strerror(-ret) : "no slot updated");
	ret = io_uring_wait_cqe(ring2, &cqe);
	ASSERT_EQ(0, ret) TH_LOG("io_uring_wait_cqe: %s", strerror(-ret));
	res = cqe->res;
	io_uring_cqe_seen(ring2, cqe);
	check_result(_metadata, res, plain, MUST_WORK,
		     "its slot updated to a plain buffer in flight");
	check_moved(_metadata, io, res,
		    "its slot updated to a plain buffer in flight");

	ret = prime(io);
	ASSERT_EQ(0, ret) TH_LOG("priming: %s", strerror(-ret));
	res = submit_request(ring2, io, self->dev_fd, SLOT);
	EXPECT_EQ(-EFAULT, res)
		TH_LOG("addressing the slot, now a plain buffer, as the dma-buf: %s",
		       res < 0 ? strerror(-res) : "it completed");
	check_moved(_metadata, io, res,
		    "addressing the slot, now a plain buffer, as the dma-buf");

	ret = dmabuf_rw_register_dmabuf(ring2, SLOT, self->dev_fd,
					self->dbuf.fd);
	ASSERT_EQ(1, ret)
		TH_LOG("registering the dma-buf in the slot again: %s",
		       ret < 0 ? strerror(-ret) : "no slot updated");
	check_request(_metadata, io, ring2, self->dev_fd, MUST_WORK,
		      "the slot updated to the dma-buf again");
	EXPECT_EQ(0, io_uring_unregister_buffers(ring2));
}

/*
 * The pages behind the dma-buf replaced after registration: the test
 * exporter migrates them (an invalidation with nothing in flight: the
 * next request maps the new pages); udmabuf's memfd has them punched out
 * of its page cache (udmabuf keeps the pages it pinned, and they stay the
 * dma-buf's). Either way the next request moves the data to or from the
 * dma-buf as its CPU mapping sees it.
 */
TEST_F(state, backing_pages_replaced)
{
	const char *how;
	int ret;

	if (self->dbuf.exporter == DMABUF_RW_TEST_EXPORTER) {
		how = "the test exporter's pages migrated";
		ret = test_dmabuf_exp_move(self->dbuf.fd,
					   TEST_DMABUF_EXP_MIGRATE);
	} else {
		how = "the udmabuf's memfd punched";
		ret = fallocate(self->dbuf.memfd, FALLOC_FL_PUNCH_HOLE |
				FALLOC_FL_KEEP_SIZE, 0, DMABUF_SIZE) ?
		      -errno : 0;
	}
	ASSERT_EQ(0, ret) TH_LOG("%s: %s", how, strerror(-ret));
	check_request(_metadata, &self->io, &self->ring, self->dev_fd,
		      MUST_WORK, how);
}

TEST_HARNESS_MAIN
