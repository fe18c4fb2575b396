// SPDX-License-Identifier: GPL-2.0
/*
 * Fault injection on the paths of dmabuf read/write via io_uring: the
 * registration of a dma-buf, the first mapping (the first I/O after
 * registration or after an invalidation) and the invalidation itself.
 *
 * Each path is walked failure by failure with /proc/thread-self/fail-nth
 * (failslab and fail_page_alloc, GFP_KERNEL allocations included): the
 * 1st, 2nd, ... allocation the path makes fails, until the path makes no
 * more. Each injected failure must end in success (a clean retry) or a
 * clean -ENOMEM; afterwards I/O through the buffer must move the right
 * data, and once it is unregistered the test exporter must find nothing
 * left mapped or attached and no DMA into a page it had retired. A debug
 * kernel's kmemleak scan after the suite catches anything else leaked.
 *
 * fail-nth reaches only the calling thread. The first I/O after a
 * registration or an invalidation is tried without blocking, gets -EAGAIN
 * for want of a map, and the map is made by an io-wq worker: that path is
 * not reached here (the lifecycle KUnit suite fails its allocations with
 * static stubs). Failing allocations at random in the workers as well
 * (failslab's task filter) was tried and dropped: it also fails DMA API
 * debug's own bookkeeping, which then reports syncs of mappings it lost.
 */
#include "dmabuf_rw.h"

#include <linux/fs.h>

#include "kselftest_harness.h"

#define DMABUF_SIZE	(64 * 1024)
#define XFER_LEN	(16 * 1024)
#define DEV_OFFSET	(256ULL << 20)
#define MAX_NTH		400
#define SALT		0xfa17

static const char * const fault_knobs[][2] = {
	/* GFP_KERNEL allocations fail too, order 0 pages too, quietly. */
	{ "/sys/kernel/debug/failslab/ignore-gfp-wait", "N" },
	{ "/sys/kernel/debug/failslab/verbose", "0" },
	{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N" },
	{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem", "N" },
	{ "/sys/kernel/debug/fail_page_alloc/min-order", "0" },
	{ "/sys/kernel/debug/fail_page_alloc/verbose", "0" },
};

static int write_file(const char *path, const char *val)
{
	int fd, ret = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		ret = -errno;
	close(fd);
	return ret;
}

/* Arm: the @nth allocation from now on in this thread fails. */
static int fail_nth_arm(int fd, unsigned int nth)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", nth);

	return pwrite(fd, buf, len, 0) == len ? 0 : -errno;
}

/*
 * Disarm, and say whether the failure was injected: the count left is 0
 * once it was. Neither call allocates, so neither moves the count.
 */
static int fail_nth_fired(int fd)
{
	char buf[16] = "";
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0 || fail_nth_arm(fd, 0))
		return -EIO;
	return atoi(buf) == 0;
}

/* What the walks work on: the fixture's ring, device and dma-buf. */
struct faults_io {
	struct io_uring *ring;
	int dev_fd;
	struct dmabuf_rw_buf *dbuf;
	__u8 *expect;
};

FIXTURE(faults) {
	int dev_fd;
	const char *dev_path;
	int nth_fd;
	struct io_uring ring;
	bool ring_ready;
	struct dmabuf_rw_buf dbuf;
	__u8 *expect;
	struct faults_io io;
};

FIXTURE_SETUP(faults)
{
	char why[DMABUF_RW_WHY_LEN];
	unsigned int i;
	int ret;

	self->dev_fd = -1;
	self->nth_fd = -1;
	dmabuf_rw_buf_init(&self->dbuf);

	self->dev_path = dmabuf_rw_dev_path();
	self->dev_fd = dmabuf_rw_dev_open(self->dev_path, why, sizeof(why));
	if (self->dev_fd == -ENODEV)
		SKIP(return, "%s", why);
	ASSERT_LE(0, self->dev_fd) TH_LOG("%s", why);

	self->nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	if (self->nth_fd < 0)
		SKIP(return, "no fail-nth (CONFIG_FAULT_INJECTION; run_tests.sh --debug)");
	if (access("/sys/kernel/debug/failslab", F_OK) ||
	    access("/sys/kernel/debug/fail_page_alloc", F_OK))
		SKIP(return, "no failslab or fail_page_alloc in debugfs (CONFIG_FAILSLAB, ...)");
	for (i = 0; i < ARRAY_SIZE(fault_knobs); i++) {
		ret = write_file(fault_knobs[i][0], fault_knobs[i][1]);
		ASSERT_EQ(0, ret) TH_LOG("%s: %s", fault_knobs[i][0], strerror(-ret));
	}

	ret = dmabuf_rw_ring_init(&self->ring, 8);
	if (dmabuf_rw_ring_skip(ret))
		SKIP(return, "%s", dmabuf_rw_ring_skip(ret));
	ASSERT_EQ(0, ret) TH_LOG("io_uring_queue_init: %s", strerror(-ret));
	self->ring_ready = true;
	ASSERT_EQ(0, io_uring_register_buffers_sparse(&self->ring, 1));

	ret = dmabuf_rw_buf_create(&self->dbuf, DMABUF_RW_TEST_EXPORTER,
				   DMABUF_SIZE);
	if (ret == -ENOENT)
		SKIP(return, "%s",
		     dmabuf_rw_exporter_missing(DMABUF_RW_TEST_EXPORTER));
	ASSERT_EQ(0, ret) TH_LOG("creating the dma-buf: %s", strerror(-ret));
	self->expect = malloc(XFER_LEN);
	ASSERT_NE(NULL, self->expect);
	self->io = (struct faults_io) {
		.ring = &self->ring, .dev_fd = self->dev_fd,
		.dbuf = &self->dbuf, .expect = self->expect,
	};
}

FIXTURE_TEARDOWN(faults)
{
	if (self->nth_fd >= 0) {
		fail_nth_arm(self->nth_fd, 0);
		close(self->nth_fd);
	}
	if (self->ring_ready)
		io_uring_queue_exit(&self->ring);
	if (self->dbuf.fd >= 0)
		DMABUF_RW_EXPECT_SETTLED(self->dbuf.fd, "after the ring's exit");
	dmabuf_rw_buf_destroy(&self->dbuf);
	free(self->expect);
	if (self->dev_fd >= 0)
		close(self->dev_fd);
}

static int register_buf(struct faults_io *io)
{
	return dmabuf_rw_register_dmabuf(io->ring, 0, io->dev_fd, io->dbuf->fd);
}

/* Empty slot 0 again, then wait until the dma-buf is settled. */
static int unregister_buf(struct faults_io *io,
			  struct test_dmabuf_exp_counters *c)
{
	struct iovec iov = { 0 };
	struct io_uring_reg_buffer rb = {
		.iov_uaddr = (__u64)(uintptr_t)&iov,
		.target_fd = -1,
		.dmabuf_fd = -1,
	};
	int ret = dmabuf_rw_update_buffers(io->ring, 0, &rb, 1);

	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	return test_dmabuf_exp_settle(io->dbuf->fd, c);
}

/*
 * Write the pattern for @salt from the dma-buf, clear the dma-buf, read
 * it back: 0 when the data came back, else what went wrong.
 */
static int round_trip(struct faults_io *io, __u64 salt, char *why, size_t len)
{
	__u8 *map = io->dbuf->map;
	size_t nr_diff;
	ssize_t bad;
	int ret;

	dmabuf_rw_fill_pattern(map, DEV_OFFSET, XFER_LEN, salt);
	memcpy(io->expect, map, XFER_LEN);
	ret = dmabuf_rw_fixed_io(io->ring, true, io->dev_fd, 0, 0,
				 XFER_LEN, DEV_OFFSET);
	if (ret != XFER_LEN) {
		snprintf(why, len, "write: %d", ret);
		return -EIO;
	}
	memset(map, 0, XFER_LEN);
	ret = dmabuf_rw_fixed_io(io->ring, false, io->dev_fd, 0, 0,
				 XFER_LEN, DEV_OFFSET);
	if (ret != XFER_LEN) {
		snprintf(why, len, "read: %d", ret);
		return -EIO;
	}
	bad = dmabuf_rw_first_diff(map, io->expect, XFER_LEN, &nr_diff);
	if (bad >= 0) {
		snprintf(why, len, "%zu bytes differ from byte %zd on: 0x%02x, expected 0x%02x",
			 nr_diff, bad, map[bad], io->expect[bad]);
		return -EILSEQ;
	}
	return 0;
}

/* What a failed allocation may give: success anyway, or -ENOMEM. */
static bool clean(int ret, int ok)
{
	return ret == ok || ret == -ENOMEM;
}

/*
 * A path walked failure by failure: @prepare (may be NULL) brings the
 * buffer to where the path starts, without failures; @run is the path,
 * with the nth allocation failing, and gives @ok on success; unless
 * @registers, the buffer is registered whatever @run gave.
 */
struct fault_walk {
	const char *path;
	const char *refused;
	int (*prepare)(struct faults_io *io, char *why, size_t len);
	int (*run)(struct faults_io *io);
	int ok;
	bool registers;
};

static void walk(struct __test_metadata *_metadata, struct faults_io *io,
		 int nth_fd, const struct fault_walk *w)
{
	struct test_dmabuf_exp_counters c;
	char why[DMABUF_RW_COUNTERS_STR];
	unsigned int nth, failed = 0;
	int ret, fired = 1;

	for (nth = 1; nth <= MAX_NTH && fired == 1; nth++) {
		if (w->prepare) {
			ret = w->prepare(io, why, sizeof(why));
			ASSERT_EQ(0, ret) TH_LOG("%s: preparing for failure %u: %s",
						 w->path, nth, why);
		}
		ASSERT_EQ(0, fail_nth_arm(nth_fd, nth));
		ret = w->run(io);
		fired = fail_nth_fired(nth_fd);
		ASSERT_LE(0, fired);
		EXPECT_TRUE(clean(ret, w->ok))
			TH_LOG("%s, allocation %u failed: %d", w->path, nth, ret);
		failed += ret != w->ok;

		if (ret == w->ok || !w->registers) {
			ret = round_trip(io, SALT + nth, why, sizeof(why));
			EXPECT_EQ(0, ret) TH_LOG("I/O after allocation %u failed: %s",
						 nth, why);
		}
		ret = unregister_buf(io, &c);
		EXPECT_EQ(0, ret)
			TH_LOG("allocation %u failed: after unregistering, %s: %s",
			       nth, test_dmabuf_exp_str(&c, why, sizeof(why)),
			       strerror(-ret));
		if (_metadata->exit_code)
			return;
	}
	ASSERT_EQ(0, fired) TH_LOG("still allocating after %u failures", MAX_NTH);
	TH_LOG("%s: %u allocations, each failed once: %u %s",
	       w->path, nth - 2, failed, w->refused);
}

TEST_F_TIMEOUT(faults, registration, 240)
{
	static const struct fault_walk w = {
		.path = "registration", .refused = "registrations refused",
		.run = register_buf, .ok = 1, .registers = true,
	};
	walk(_metadata, &self->io, self->nth_fd, &w);
}

static int prepare_registered(struct faults_io *io, char *why, size_t len)
{
	int ret = register_buf(io);

	snprintf(why, len, "registration: %d", ret);
	return ret == 1 ? 0 : -EIO;
}

static int first_read(struct faults_io *io)
{
	return dmabuf_rw_fixed_io(io->ring, false, io->dev_fd, 0, 0,
				  XFER_LEN, DEV_OFFSET);
}

/*
 * The first I/O of a registration maps the dma-buf for the device: the
 * failure hits the request, the map, its fence and the exporter's
 * scatterlist. The I/O may still succeed: the block layer retries a
 * request that could not get resources.
 */
TEST_F_TIMEOUT(faults, first_map, 240)
{
	static const struct fault_walk w = {
		.path = "first map", .refused = "reads failed",
		.prepare = prepare_registered, .run = first_read,
		.ok = XFER_LEN,
	};
	walk(_metadata, &self->io, self->nth_fd, &w);
}

/* A new dma-buf (its reservation object has no fence slots), mapped. */
static int prepare_mapped(struct faults_io *io, char *why, size_t len)
{
	int ret;

	dmabuf_rw_buf_destroy(io->dbuf);
	ret = dmabuf_rw_buf_create(io->dbuf, DMABUF_RW_TEST_EXPORTER,
				   DMABUF_SIZE);
	if (ret) {
		snprintf(why, len, "creating the dma-buf: %s", strerror(-ret));
		return ret;
	}
	ret = prepare_registered(io, why, len);
	return ret ?: round_trip(io, SALT, why, len);
}

static int move_migrate(struct faults_io *io)
{
	return test_dmabuf_exp_move(io->dbuf->fd, TEST_DMABUF_EXP_MIGRATE);
}

/*
 * Invalidation and migration of a mapped dma-buf. A failure in the
 * importer's move_notify (reserving the fence slot) must not leave the
 * old mapping in use: after the migration, I/O must reach the new pages.
 */
TEST_F_TIMEOUT(faults, invalidation, 240)
{
	static const struct fault_walk w = {
		.path = "invalidation", .refused = "moves refused",
		.prepare = prepare_mapped, .run = move_migrate, .ok = 0,
	};
	walk(_metadata, &self->io, self->nth_fd, &w);
}

TEST_HARNESS_MAIN
