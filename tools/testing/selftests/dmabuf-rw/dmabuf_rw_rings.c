// SPDX-License-Identifier: GPL-2.0
/*
 * dma-buf fixed buffers in more than one ring, more than one buffer per
 * ring, beside plain fixed buffers, across unregistration, after the
 * dma-buf's fd is closed, and in DEFER_TASKRUN and SQPOLL rings.
 *
 * Each check is a round trip that needs no CPU access to the dma-buf:
 * a pattern written to one device region through the normal O_DIRECT
 * path is read with READ_FIXED into the buffer, written back with
 * WRITE_FIXED to another region, and read from there through the normal
 * path. The test exporter's counters show how many attachments and
 * mappings the importer holds, and that it leaves nothing behind.
 *
 * The block device is the one named in DMABUF_RW_DEV; without it the test
 * skips. It overwrites the device's first 4 MiB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <linux/fs.h>

#include "dmabuf_rw.h"
#include "kselftest_harness.h"

#define DMABUF_SIZE		(128 * 1024)
#define NR_DMABUFS		3
#define NR_SLOTS		8
#define XFER_LEN		(32 * 1024)
/* Each round trip has its own two device regions: nothing stale matches. */
#define REGION_SIZE		(2 * XFER_LEN)
#define DEV_BYTES		(4 * 1024 * 1024)

/* What a round trip needs; each one takes new regions and a new salt. */
struct trips {
	int dev_fd;
	__u8 *plain;		/* normal-path staging, REGION_SIZE */
	__u8 *expect;
	unsigned int next_region;
	__u64 salt;
};

FIXTURE(rings) {
	const char *dev_path;
	int dev_fd;
	/* two test-exporter dma-bufs and a udmabuf */
	struct dmabuf_rw_buf dbuf[NR_DMABUFS];
	struct trips trips;
	/* The tests' rings, exited at teardown if a test stopped early. */
	struct io_uring ring[2];
	bool ring_live[2];
};

FIXTURE_SETUP(rings)
{
	static const enum dmabuf_rw_exporter exporters[NR_DMABUFS] = {
		DMABUF_RW_TEST_EXPORTER, DMABUF_RW_TEST_EXPORTER,
		DMABUF_RW_UDMABUF,
	};
	char why[DMABUF_RW_WHY_LEN];
	__u64 dev_size;
	unsigned int i;
	int ret;

	self->dev_fd = -1;
	for (i = 0; i < NR_DMABUFS; i++)
		dmabuf_rw_buf_init(&self->dbuf[i]);

	self->dev_path = dmabuf_rw_dev_path();
	self->dev_fd = dmabuf_rw_dev_open(self->dev_path, why, sizeof(why));
	if (self->dev_fd == -ENODEV)
		SKIP(return, "%s", why);
	ASSERT_LE(0, self->dev_fd) TH_LOG("%s", why);
	ASSERT_EQ(0, ioctl(self->dev_fd, BLKGETSIZE64, &dev_size));
	if (dev_size < DEV_BYTES)
		SKIP(return, "%s: %llu bytes is too small", self->dev_path,
		     (unsigned long long)dev_size);
	if (access("/proc/sys/kernel/io_uring_disabled", F_OK))
		SKIP(return, "io_uring not available (CONFIG_IO_URING)");

	for (i = 0; i < NR_DMABUFS; i++) {
		ret = dmabuf_rw_buf_create(&self->dbuf[i], exporters[i],
					   DMABUF_SIZE);
		if (ret == -ENOENT)
			SKIP(return, "%s", dmabuf_rw_exporter_missing(exporters[i]));
		ASSERT_EQ(0, ret)
			TH_LOG("creating dma-buf %u: %s", i, strerror(-ret));
	}

	self->trips.dev_fd = self->dev_fd;
	ASSERT_EQ(0, posix_memalign((void **)&self->trips.plain, 4096,
				    REGION_SIZE));
	self->trips.expect = malloc(XFER_LEN);
	ASSERT_NE(NULL, self->trips.expect);
	self->trips.salt = 0x72696e6773ULL;
}

/* Every test has given its rings back: nothing may stay attached. */
FIXTURE_TEARDOWN(rings)
{
	struct test_dmabuf_exp_counters c;
	char why[DMABUF_RW_COUNTERS_STR];
	unsigned int i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(self->ring); i++)
		if (self->ring_live[i])
			io_uring_queue_exit(&self->ring[i]);
	for (i = 0; i < NR_DMABUFS; i++) {
		if (self->dbuf[i].fd < 0 ||
		    self->dbuf[i].exporter != DMABUF_RW_TEST_EXPORTER)
			continue;
		ret = test_dmabuf_exp_settle(self->dbuf[i].fd, &c);
		EXPECT_EQ(0, ret)
			TH_LOG("dma-buf %u after its last ring: %s: %s", i,
			       test_dmabuf_exp_str(&c, why, sizeof(why)),
			       strerror(-ret));
	}
	for (i = 0; i < NR_DMABUFS; i++)
		dmabuf_rw_buf_destroy(&self->dbuf[i]);
	free(self->trips.expect);
	free(self->trips.plain);
	if (self->dev_fd >= 0)
		close(self->dev_fd);
}

/* @ring with @flags and a sparse buffer table; @live says it is. */
static int ring_init(struct io_uring *ring, bool *live, unsigned int flags)
{
	struct io_uring_params p = { .flags = flags, .sq_thread_idle = 100 };
	int ret;

	ret = io_uring_queue_init_params(16, ring, &p);
	if (ret)
		return ret;
	ret = io_uring_register_buffers_sparse(ring, NR_SLOTS);
	if (ret)
		io_uring_queue_exit(ring);
	else
		*live = true;
	return ret;
}

static void ring_exit(struct io_uring *ring, bool *live)
{
	io_uring_queue_exit(ring);
	*live = false;
}

/*
 * The round trip through the fixed buffer in @slot of @ring, at @buf_addr
 * (for a dma-buf, the offset into it): pattern -> region A (normal
 * write) -> buffer (READ_FIXED) -> region B (WRITE_FIXED) -> normal read,
 * compared.
 */
static bool round_trip(struct __test_metadata *_metadata,
		       struct trips *self, struct io_uring *ring,
		       unsigned int slot, __u64 buf_addr)
{
	__u64 a = (__u64)self->next_region++ * REGION_SIZE, b = a + XFER_LEN;
	__u64 salt = self->salt++;
	size_t nr_diff;
	ssize_t i;
	int ret;

	if (b + XFER_LEN > DEV_BYTES) {
		TH_LOG("out of device regions");
		return false;
	}
	memset(self->plain, 0x5a, REGION_SIZE);
	dmabuf_rw_fill_pattern(self->plain, a, XFER_LEN, salt);
	if (pwrite(self->dev_fd, self->plain, REGION_SIZE, a) != REGION_SIZE) {
		TH_LOG("pwrite: %s", strerror(errno));
		return false;
	}

	ret = dmabuf_rw_fixed_io(ring, false, self->dev_fd, slot, buf_addr,
				 XFER_LEN, a);
	if (ret != XFER_LEN) {
		TH_LOG("READ_FIXED into slot %u: %s", slot,
		       ret < 0 ? strerror(-ret) : "short read");
		return false;
	}
	ret = dmabuf_rw_fixed_io(ring, true, self->dev_fd, slot, buf_addr,
				 XFER_LEN, b);
	if (ret != XFER_LEN) {
		TH_LOG("WRITE_FIXED from slot %u: %s", slot,
		       ret < 0 ? strerror(-ret) : "short write");
		return false;
	}

	if (pread(self->dev_fd, self->plain, XFER_LEN, b) != XFER_LEN) {
		TH_LOG("pread: %s", strerror(errno));
		return false;
	}
	dmabuf_rw_fill_pattern(self->expect, a, XFER_LEN, salt);
	i = dmabuf_rw_first_diff(self->plain, self->expect, XFER_LEN, &nr_diff);
	if (i >= 0) {
		TH_LOG("slot %u, buffer address %#llx: %zu bytes differ",
		       slot, (unsigned long long)buf_addr, nr_diff);
		TH_LOG("first at byte %zd: expected 0x%02x, found 0x%02x",
		       i, self->expect[i], self->plain[i]);
		return false;
	}
	return true;
}

static struct test_dmabuf_exp_counters counters(struct __test_metadata *_metadata,
						const struct dmabuf_rw_buf *dbuf)
{
	struct test_dmabuf_exp_counters c;

	EXPECT_EQ(0, test_dmabuf_exp_counters(dbuf->fd, &c));
	return c;
}

/*
 * All three dma-bufs and a plain buffer in one ring, used in turn: each
 * slot moves its own data.
 */
TEST_F(rings, several_buffers_one_ring)
{
	struct iovec iov = { .iov_len = DMABUF_SIZE };
	struct io_uring *ring = &self->ring[0];
	unsigned int i, pass;
	__u64 base;

	ASSERT_EQ(0, ring_init(&self->ring[0], &self->ring_live[0], 0));
	for (i = 0; i < NR_DMABUFS; i++)
		ASSERT_EQ(1, dmabuf_rw_register_dmabuf(ring, i, self->dev_fd,
						       self->dbuf[i].fd));
	ASSERT_EQ(0, posix_memalign(&iov.iov_base, 4096, DMABUF_SIZE));
	ASSERT_EQ(1, io_uring_register_buffers_update_tag(ring, NR_DMABUFS,
							  &iov, NULL, 1));

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i <= NR_DMABUFS; i++) {
			/* a plain buffer is addressed by its user address */
			base = i < NR_DMABUFS ? 0 : (uintptr_t)iov.iov_base;
			ASSERT_TRUE(round_trip(_metadata, &self->trips, ring, i,
					       base + pass * XFER_LEN));
		}
	}

	/* one attachment and one mapping each */
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(1, counters(_metadata, &self->dbuf[i]).attachments);
		EXPECT_EQ(1, counters(_metadata, &self->dbuf[i]).maps);
	}
	ring_exit(&self->ring[0], &self->ring_live[0]);
	free(iov.iov_base);
}

/*
 * One dma-buf in two rings: two registrations, each its own attachment
 * and mapping. One migration drops both; the importer unmaps them while
 * the buffer stays registered, and both rings map again.
 */
TEST_F(rings, one_dmabuf_two_rings)
{
	const struct dmabuf_rw_buf *dbuf = &self->dbuf[0];
	struct test_dmabuf_exp_counters c;
	unsigned int i;
	int ret;

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, ring_init(&self->ring[i], &self->ring_live[i], 0));
		ASSERT_EQ(1, dmabuf_rw_register_dmabuf(&self->ring[i], i,
						       self->dev_fd, dbuf->fd));
	}
	for (i = 0; i < 2; i++)
		ASSERT_TRUE(round_trip(_metadata, &self->trips, &self->ring[i], i,
				       i * XFER_LEN));
	c = counters(_metadata, dbuf);
	EXPECT_EQ(2, c.attachments);
	EXPECT_EQ(2, c.maps);

	ASSERT_EQ(0, test_dmabuf_exp_move(dbuf->fd, TEST_DMABUF_EXP_MIGRATE));
	/* dma-buf rules: unmap within bounded time once invalidated */
	ret = test_dmabuf_exp_wait(dbuf->fd, TEST_DMABUF_EXP_UNMAPPED);
	ASSERT_EQ(0, ret)
		TH_LOG("mappings kept after the invalidation: %s",
		       strerror(-ret));
	for (i = 0; i < 2; i++)
		ASSERT_TRUE(round_trip(_metadata, &self->trips, &self->ring[i], i,
				       i * XFER_LEN));
	c = counters(_metadata, dbuf);
	EXPECT_EQ(4, c.maps);
	EXPECT_EQ(2, c.unmaps);

	/* The first ring goes; the second one keeps working. */
	ring_exit(&self->ring[0], &self->ring_live[0]);
	ASSERT_TRUE(round_trip(_metadata, &self->trips, &self->ring[1], 1, 0));
	ring_exit(&self->ring[1], &self->ring_live[1]);
}

/* A slot emptied and filled again: the old registration is gone. */
TEST_F(rings, unregister_and_register_again)
{
	const struct dmabuf_rw_buf *dbuf = &self->dbuf[1];
	struct io_uring *ring = &self->ring[0];
	struct iovec empty = {};
	unsigned int round;
	int ret;

	ASSERT_EQ(0, ring_init(&self->ring[0], &self->ring_live[0], 0));
	for (round = 0; round < 3; round++) {
		ASSERT_EQ(1, dmabuf_rw_register_dmabuf(ring, 2, self->dev_fd,
						       dbuf->fd));
		ASSERT_TRUE(round_trip(_metadata, &self->trips, ring, 2, 0));
		ASSERT_EQ(1, io_uring_register_buffers_update_tag(ring, 2,
								  &empty, NULL,
								  1));
		ret = dmabuf_rw_fixed_io(ring, false, self->dev_fd, 2, 0,
					 XFER_LEN, 0);
		EXPECT_EQ(-EFAULT, ret) TH_LOG("READ_FIXED from the emptied slot");
		EXPECT_EQ(0, test_dmabuf_exp_wait(dbuf->fd,
						  TEST_DMABUF_EXP_UNMAPPED |
						  TEST_DMABUF_EXP_DETACHED));
	}
	EXPECT_EQ(3, counters(_metadata, dbuf).maps);
	ring_exit(&self->ring[0], &self->ring_live[0]);
}

/*
 * The registration holds its own reference: with the dma-buf's fd and
 * CPU mapping gone, the buffer still moves data, and it is released
 * when the ring goes.
 */
TEST_F(rings, dmabuf_fd_closed_after_registration)
{
	struct test_dmabuf_exp_wait wait = {
		.fd = -1,
		.flags = TEST_DMABUF_EXP_UNMAPPED | TEST_DMABUF_EXP_DETACHED |
			 TEST_DMABUF_EXP_RELEASED,
	};
	struct test_dmabuf_exp_counters before, after;
	struct io_uring *ring = &self->ring[0];
	int ret;

	ASSERT_EQ(0, test_dmabuf_exp_counters(-1, &before));
	ASSERT_EQ(0, ring_init(&self->ring[0], &self->ring_live[0], 0));
	ASSERT_EQ(1, dmabuf_rw_register_dmabuf(ring, 0, self->dev_fd,
					       self->dbuf[0].fd));
	dmabuf_rw_buf_destroy(&self->dbuf[0]);

	ASSERT_TRUE(round_trip(_metadata, &self->trips, ring, 0, 0));
	ASSERT_TRUE(round_trip(_metadata, &self->trips, ring, 0,
			       DMABUF_SIZE - XFER_LEN));
	ring_exit(&self->ring[0], &self->ring_live[0]);

	/* The ring's reference was the last one: the dma-buf goes. */
	wait.buffers = before.buffers - 1;
	ret = test_dmabuf_exp_ioctl(TEST_DMABUF_EXP_IOC_WAIT, &wait);
	EXPECT_EQ(0, ret) TH_LOG("dma-buf not released: %s", strerror(-ret));
	ASSERT_EQ(0, test_dmabuf_exp_counters(-1, &after));
	EXPECT_EQ(after.maps, after.unmaps);
}

/* Completions run as task work at wait time: the import is the same. */
TEST_F(rings, defer_taskrun)
{
	unsigned int i;

	ASSERT_EQ(0, ring_init(&self->ring[0], &self->ring_live[0], IORING_SETUP_SINGLE_ISSUER |
			       IORING_SETUP_DEFER_TASKRUN));
	for (i = 0; i < NR_DMABUFS; i++) {
		ASSERT_EQ(1, dmabuf_rw_register_dmabuf(&self->ring[0], i,
						       self->dev_fd,
						       self->dbuf[i].fd));
		ASSERT_TRUE(round_trip(_metadata, &self->trips, &self->ring[0], i, 0));
	}
	ring_exit(&self->ring[0], &self->ring_live[0]);
}

/* Submissions come from the SQPOLL thread, not from this task. */
TEST_F(rings, sqpoll)
{
	unsigned int i;

	ASSERT_EQ(0, ring_init(&self->ring[0], &self->ring_live[0], IORING_SETUP_SQPOLL));
	for (i = 0; i < NR_DMABUFS; i++) {
		ASSERT_EQ(1, dmabuf_rw_register_dmabuf(&self->ring[0], i,
						       self->dev_fd,
						       self->dbuf[i].fd));
		ASSERT_TRUE(round_trip(_metadata, &self->trips, &self->ring[0], i, 0));
	}
	/* An invalidation while the SQPOLL thread owns submission. */
	ASSERT_EQ(0, test_dmabuf_exp_move(self->dbuf[0].fd,
					  TEST_DMABUF_EXP_MIGRATE));
	ASSERT_TRUE(round_trip(_metadata, &self->trips, &self->ring[0], 0, 0));
	ring_exit(&self->ring[0], &self->ring_live[0]);
}

TEST_HARNESS_MAIN
