// SPDX-License-Identifier: GPL-2.0
/*
 * Smoke test for dma-buf backed io_uring fixed buffers: data written to a
 * block device through the normal O_DIRECT path reads back correctly into a
 * registered dma-buf with READ_FIXED, and data written from the dma-buf
 * with WRITE_FIXED reads back correctly through the normal path.
 *
 * The dma-buf comes from udmabuf or from the test exporter; with the test
 * exporter, the mapping is invalidated, or the buffer migrated to new
 * pages, between the two rounds of each test, and the exporter's counters
 * show that the importer mapped again and dropped everything at the end.
 *
 * The layout fixture does the same with the test exporter's other
 * scatterlists: segments that are not whole pages, and contiguous ones.
 *
 * The block device is the one named in DMABUF_RW_DEV; without it the test
 * skips. It overwrites the device's bytes from 1 MiB - 4 KiB to
 * 5 MiB + 4 KiB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <linux/fs.h>

#include "dmabuf_rw.h"
#include "kselftest_harness.h"

/*
 * No larger than the largest mapping swiotlb can bounce (256 KiB): the
 * udmabuf's pages may be contiguous, and with swiotlb=force a mapping
 * segment larger than that fails.
 */
#define DMABUF_SIZE		(256 * 1024)
#define NR_BUF_SLOTS		4

/*
 * Every transfer targets DMABUF_RW_DEV_OFFSET on the device, between two
 * guard blocks that no transfer may touch.
 */
#define DMABUF_RW_DEV_OFFSET	(1024 * 1024)
#define DMABUF_RW_GUARD		4096

/* Fill values, one per place, so that stale or misplaced bytes show. */
#define POISON_DMABUF		0xa5
#define POISON_DEVICE		0x5a
#define POISON_PLAIN		0xee

/* Different data for each direction, so one test cannot pass on the other's. */
#define SALT_NORMAL_TO_FIXED	0x6e6f726d2d3e6678ULL
#define SALT_FIXED_TO_NORMAL	0x66782d3e6e6f726dULL

/*
 * Each test transfers twice through the same registration, with new data
 * and a new dma-buf poison the second time: the first transfer maps the
 * dma-buf for the device, the second reuses that mapping, so only the DMA
 * syncs of the request can make the new data reach the device or the CPU,
 * and a sync wider than the request would put back old bytes around it
 * (visible with bounce buffering, swiotlb=force).
 */
#define NR_ROUNDS		2
#define ROUND_SALT(salt, round)	((salt) ^ ((__u64)(round) << 32))
#define ROUND_POISON(round)	(POISON_DMABUF ^ (round))

/* What the test exporter does between the two rounds of a test. */
enum between_rounds {
	KEEP,		/* nothing: the second round reuses the mapping */
	INVALIDATE,	/* move_notify: the second round must map again */
	MIGRATE,	/* move_notify and new pages: a stale map shows */
};

/* One test's transfer: where from, where to, how much. */
struct xfer {
	struct io_uring *ring;
	int dev_fd;
	__u8 *plain;
	__u8 *expect;
	const struct dmabuf_rw_buf *dbuf;
	unsigned int slot;
	size_t off;
	size_t len;
	/*
	 * The dma-buf's layout cannot be described to the device (PRP):
	 * a transfer may fail with EINVAL, moving nothing, and counts in
	 * *refused.
	 */
	bool may_refuse;
	unsigned int *refused;
};

/*
 * What both fixtures set up: the device, a ring with sparse buffer slots,
 * and the normal path's buffers.
 */
struct smoke {
	const char *dev_path;
	int dev_fd;
	struct io_uring ring;
	bool ring_ready;
	bool buffers_registered;
	/* Normal-path O_DIRECT buffer: guard | data | guard. */
	__u8 *plain;
	/* Scratch for expected contents. */
	__u8 *expect;
	/* Transfers refused for the dma-buf's layout (struct xfer). */
	unsigned int refused;
};

FIXTURE(dmabuf_rw) {
	struct smoke sm;
	/*
	 * One dma-buf per exporter, registered in the slot of the same
	 * number, and the transfer through it; fd -1 when this kernel does
	 * not have the exporter.
	 */
	struct dmabuf_rw_buf dbuf[DMABUF_RW_NR_EXPORTERS];
	struct xfer xfer[DMABUF_RW_NR_EXPORTERS];
};

FIXTURE_VARIANT(dmabuf_rw) {
	size_t buf_offset;	/* offset of the transfer in the dma-buf */
	size_t len;		/* bytes transferred */
};

FIXTURE_VARIANT_ADD(dmabuf_rw, off0_len4k) {
	.buf_offset = 0,
	.len = 4096,
};

FIXTURE_VARIANT_ADD(dmabuf_rw, off4k_len64k) {
	.buf_offset = 4096,
	.len = 64 * 1024,
};

/* More than the drive takes per command (128 KiB, mdts=5): split. */
FIXTURE_VARIANT_ADD(dmabuf_rw, off8k_len240k) {
	.buf_offset = 8192,
	.len = 240 * 1024,
};

/* Starts inside a page and crosses two page boundaries. */
FIXTURE_VARIANT_ADD(dmabuf_rw, off512_len8k) {
	.buf_offset = 512,
	.len = 8192,
};

/* Exactly two pages: the second one goes in PRP2, no PRP list. */
FIXTURE_VARIANT_ADD(dmabuf_rw, off0_len8k) {
	.buf_offset = 0,
	.len = 8192,
};

/* One page's worth that straddles two pages: PRP2, no list either. */
FIXTURE_VARIANT_ADD(dmabuf_rw, off3584_len4k) {
	.buf_offset = 3584,
	.len = 4096,
};

/* Ends at the last byte of the dma-buf. */
FIXTURE_VARIANT_ADD(dmabuf_rw, off128k_len128k) {
	.buf_offset = DMABUF_SIZE - 128 * 1024,
	.len = 128 * 1024,
};

/*
 * Open the device, set up the ring and the normal path's buffers for
 * dma-bufs of up to @size bytes and transfers of @len. Returns false when
 * the test skips.
 */
static bool smoke_setup(struct __test_metadata *_metadata, struct smoke *sm,
			size_t size, size_t len)
{
	const size_t region = len + 2 * DMABUF_RW_GUARD;
	char why[DMABUF_RW_WHY_LEN];
	__u64 dev_size;
	int lbs, ret;

	sm->dev_path = dmabuf_rw_dev_path();
	sm->dev_fd = dmabuf_rw_dev_open(sm->dev_path, why, sizeof(why));
	if (sm->dev_fd == -ENODEV)
		SKIP(return false, "%s", why);
	ASSERT_LE(0, sm->dev_fd) TH_LOG("%s", why);

	ASSERT_EQ(0, ioctl(sm->dev_fd, BLKSSZGET, &lbs));
	ASSERT_EQ(0, ioctl(sm->dev_fd, BLKGETSIZE64, &dev_size));
	if (DMABUF_RW_GUARD % lbs || len % lbs)
		SKIP(return false, "%s: logical block size %d does not divide %zu",
		     sm->dev_path, lbs, len);
	if (dev_size < DMABUF_RW_DEV_OFFSET + len + DMABUF_RW_GUARD)
		SKIP(return false, "%s: %llu bytes is too small", sm->dev_path,
		     (unsigned long long)dev_size);

	ret = dmabuf_rw_ring_init(&sm->ring, 8);
	if (dmabuf_rw_ring_skip(ret))
		SKIP(return false, "%s", dmabuf_rw_ring_skip(ret));
	ASSERT_EQ(0, ret) TH_LOG("io_uring_queue_init: %s", strerror(-ret));
	sm->ring_ready = true;

	ret = io_uring_register_buffers_sparse(&sm->ring, NR_BUF_SLOTS);
	ASSERT_EQ(0, ret)
		TH_LOG("io_uring_register_buffers_sparse: %s", strerror(-ret));
	sm->buffers_registered = true;

	ASSERT_EQ(0, posix_memalign((void **)&sm->plain, 4096, region));
	sm->expect = malloc(size > region ? size : region);
	ASSERT_NE(NULL, sm->expect);
	return true;
}

/*
 * Create @dbuf from @exporter in @layout, register it in @slot, and set
 * up @x for it. Returns false when the exporter is missing.
 */
static bool smoke_add_dmabuf(struct __test_metadata *_metadata,
			     struct smoke *sm, struct dmabuf_rw_buf *dbuf,
			     struct xfer *x, unsigned int slot,
			     enum dmabuf_rw_exporter exporter, size_t size,
			     __u32 layout, __u32 seg_size)
{
	int ret;

	x->ring = &sm->ring;
	x->dev_fd = sm->dev_fd;
	x->plain = sm->plain;
	x->expect = sm->expect;
	x->dbuf = dbuf;
	x->slot = slot;
	x->refused = &sm->refused;

	ret = dmabuf_rw_buf_create_layout(dbuf, exporter, size, layout,
					  seg_size);
	if (ret == -ENOENT)
		return false;	/* the tests that need it skip */
	ASSERT_EQ(0, ret) TH_LOG("creating the dma-buf: %s", strerror(-ret));

	ret = dmabuf_rw_register_dmabuf(&sm->ring, slot, sm->dev_fd, dbuf->fd);
	ASSERT_EQ(1, ret)
		TH_LOG("registering the dma-buf with IORING_RSRC_F_EXTENDED_UPDATE: %s",
		       ret < 0 ? strerror(-ret) : "no slot updated");
	return true;
}

/*
 * After unregistering, the test exporter's dma-buf @texp must be neither
 * mapped nor attached, and no page a migration retired may have been
 * written by DMA after its invalidation.
 */
static void smoke_teardown(struct __test_metadata *_metadata,
			   struct smoke *sm, const struct dmabuf_rw_buf *texp)
{
	if (sm->buffers_registered)
		EXPECT_EQ(0, io_uring_unregister_buffers(&sm->ring));
	if (sm->ring_ready)
		io_uring_queue_exit(&sm->ring);
	if (texp->fd >= 0)
		DMABUF_RW_EXPECT_SETTLED(texp->fd, "after unregistering");
	free(sm->expect);
	free(sm->plain);
	if (sm->dev_fd >= 0)
		close(sm->dev_fd);
}

FIXTURE_SETUP(dmabuf_rw)
{
	unsigned int i;

	self->sm.dev_fd = -1;
	for (i = 0; i < DMABUF_RW_NR_EXPORTERS; i++)
		dmabuf_rw_buf_init(&self->dbuf[i]);
	if (!smoke_setup(_metadata, &self->sm, DMABUF_SIZE, DMABUF_SIZE))
		return;
	for (i = 0; i < DMABUF_RW_NR_EXPORTERS; i++) {
		self->xfer[i] = (struct xfer) {
			.off = variant->buf_offset,
			.len = variant->len,
		};
		smoke_add_dmabuf(_metadata, &self->sm, &self->dbuf[i],
				 &self->xfer[i], i, i, DMABUF_SIZE,
				 TEST_DMABUF_EXP_LAYOUT_PAGES, 0);
	}
}

FIXTURE_TEARDOWN(dmabuf_rw)
{
	unsigned int i;

	smoke_teardown(_metadata, &self->sm,
		       &self->dbuf[DMABUF_RW_TEST_EXPORTER]);
	for (i = 0; i < DMABUF_RW_NR_EXPORTERS; i++)
		dmabuf_rw_buf_destroy(&self->dbuf[i]);
}

/*
 * Write guard | data | guard to @dev_fd through the normal O_DIRECT path,
 * staged in @plain: the guards are POISON_DEVICE and the data is the pattern
 * for @salt, or POISON_DEVICE too when @pattern is false.
 */
static bool write_device_region(int dev_fd, __u8 *plain, size_t len,
				bool pattern, __u64 salt)
{
	size_t size = len + 2 * DMABUF_RW_GUARD;

	memset(plain, POISON_DEVICE, size);
	if (pattern)
		dmabuf_rw_fill_pattern(plain + DMABUF_RW_GUARD,
				       DMABUF_RW_DEV_OFFSET, len, salt);

	return pwrite(dev_fd, plain, size,
		      DMABUF_RW_DEV_OFFSET - DMABUF_RW_GUARD) == (ssize_t)size;
}

/*
 * Compare @len bytes found at offset @base of @space with what was
 * expected; log the first difference.
 */
static bool same_bytes(struct __test_metadata *_metadata, const char *what,
		       const char *space, __u64 base, const __u8 *found,
		       const __u8 *expected, size_t len)
{
	size_t nr_diff;
	ssize_t i;

	i = dmabuf_rw_first_diff(found, expected, len, &nr_diff);
	if (i < 0)
		return true;

	TH_LOG("%s: first difference at %s offset %llu (byte %zd): expected 0x%02x, found 0x%02x",
	       what, space, (unsigned long long)(base + i), i, expected[i],
	       found[i]);
	TH_LOG("%s: %zu of %zu bytes differ", what, nr_diff, len);
	return false;
}

/* DMA_BUF_IOCTL_SYNC with @flags; log a failure. */
static bool cpu_access(struct __test_metadata *_metadata, int dmabuf_fd,
		       __u64 flags)
{
	int ret = dmabuf_sync(dmabuf_fd, flags);

	if (ret)
		TH_LOG("DMA_BUF_IOCTL_SYNC %#llx: %s", (unsigned long long)flags,
		       strerror(-ret));
	return !ret;
}

/*
 * One round of write_normal_read_fixed: the pattern for @salt goes to the
 * device through the normal path and must come back with READ_FIXED into
 * [off, off + len) of the dma-buf filled with @poison, nothing else touched.
 */
static bool normal_to_fixed(struct __test_metadata *_metadata,
			    const struct xfer *x, __u64 salt, __u8 poison)
{
	const struct dmabuf_rw_buf *dbuf = x->dbuf;
	size_t off = x->off, len = x->len;
	__u8 *plain = x->plain, *expect = x->expect, *map = dbuf->map;
	bool ok;
	int res;

	if (!write_device_region(x->dev_fd, plain, len, true, salt)) {
		TH_LOG("pwrite to the device: %s", strerror(errno));
		return false;
	}

	/* Poison all of the dma-buf: a short or misplaced read shows. */
	if (!cpu_access(_metadata, dbuf->fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE))
		return false;
	memset(map, poison, dbuf->size);
	if (!cpu_access(_metadata, dbuf->fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE))
		return false;

	res = dmabuf_rw_fixed_io(x->ring, false, x->dev_fd, x->slot, off, len,
				 DMABUF_RW_DEV_OFFSET);
	if (res == -EINVAL && x->may_refuse) {
		(*x->refused)++;
		memset(expect, poison, dbuf->size);
		if (!cpu_access(_metadata, dbuf->fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ))
			return false;
		ok = same_bytes(_metadata, "dma-buf after a refused READ_FIXED",
				"dma-buf", 0, map, expect, dbuf->size);
		return cpu_access(_metadata, dbuf->fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ) && ok;
	}
	if (res != (int)len) {
		TH_LOG("READ_FIXED of %zu bytes to dma-buf offset %zu: %s",
		       len, off, res < 0 ? strerror(-res) : "short read");
		return false;
	}

	dmabuf_rw_fill_pattern(expect, DMABUF_RW_DEV_OFFSET, len, salt);
	if (!cpu_access(_metadata, dbuf->fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ))
		return false;
	ok = same_bytes(_metadata, "data read with READ_FIXED", "dma-buf", off,
			map + off, expect, len);
	memset(expect, poison, dbuf->size);
	ok = same_bytes(_metadata, "dma-buf before the transfer", "dma-buf", 0,
			map, expect, off) && ok;
	ok = same_bytes(_metadata, "dma-buf after the transfer", "dma-buf",
			off + len, map + off + len, expect,
			dbuf->size - off - len) && ok;
	return cpu_access(_metadata, dbuf->fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ) && ok;
}

/*
 * One round of write_fixed_read_normal: the pattern for @salt, put at
 * [off, off + len) of the dma-buf with @poison around it, goes to the
 * poisoned device region with WRITE_FIXED and must read back through the
 * normal path, the guards untouched.
 */
static bool fixed_to_normal(struct __test_metadata *_metadata,
			    const struct xfer *x, __u64 salt, __u8 poison)
{
	const struct dmabuf_rw_buf *dbuf = x->dbuf;
	size_t off = x->off, len = x->len;
	const size_t region = len + 2 * DMABUF_RW_GUARD;
	__u8 *plain = x->plain, *expect = x->expect, *map = dbuf->map;
	__u8 *data = plain + DMABUF_RW_GUARD;
	bool ok;
	int res;

	/* Poison the device region: a missing or short write shows. */
	if (!write_device_region(x->dev_fd, plain, len, false, 0)) {
		TH_LOG("pwrite to the device: %s", strerror(errno));
		return false;
	}

	/*
	 * The pattern where the transfer reads, poison around it: a write
	 * that reads outside its range leaves @poison on the device.
	 */
	if (!cpu_access(_metadata, dbuf->fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE))
		return false;
	memset(map, poison, dbuf->size);
	dmabuf_rw_fill_pattern(map + off, DMABUF_RW_DEV_OFFSET, len, salt);
	if (!cpu_access(_metadata, dbuf->fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE))
		return false;

	res = dmabuf_rw_fixed_io(x->ring, true, x->dev_fd, x->slot, off, len,
				 DMABUF_RW_DEV_OFFSET);
	if (res != (int)len && !(res == -EINVAL && x->may_refuse)) {
		TH_LOG("WRITE_FIXED of %zu bytes from dma-buf offset %zu: %s",
		       len, off, res < 0 ? strerror(-res) : "short write");
		return false;
	}

	memset(plain, POISON_PLAIN, region);
	if (pread(x->dev_fd, plain, region, DMABUF_RW_DEV_OFFSET - DMABUF_RW_GUARD) !=
	    (ssize_t)region) {
		TH_LOG("pread from the device: %s", strerror(errno));
		return false;
	}

	if (res == -EINVAL) {
		/* Refused: nothing may have reached the device. */
		(*x->refused)++;
		memset(expect, POISON_DEVICE, region);
		return same_bytes(_metadata, "device after a refused WRITE_FIXED",
				  "device", DMABUF_RW_DEV_OFFSET - DMABUF_RW_GUARD,
				  plain, expect, region);
	}

	dmabuf_rw_fill_pattern(expect, DMABUF_RW_DEV_OFFSET, len, salt);
	ok = same_bytes(_metadata, "data written with WRITE_FIXED", "device",
			DMABUF_RW_DEV_OFFSET, data, expect, len);
	memset(expect, POISON_DEVICE, DMABUF_RW_GUARD);
	ok = same_bytes(_metadata, "device before the transfer", "device",
			DMABUF_RW_DEV_OFFSET - DMABUF_RW_GUARD, plain,
			expect, DMABUF_RW_GUARD) && ok;
	ok = same_bytes(_metadata, "device after the transfer", "device",
			DMABUF_RW_DEV_OFFSET + len, data + len, expect,
			DMABUF_RW_GUARD) && ok;
	return ok;
}

static bool exporter_counters(struct __test_metadata *_metadata,
			      const struct dmabuf_rw_buf *dbuf,
			      struct test_dmabuf_exp_counters *c)
{
	int ret = test_dmabuf_exp_counters(dbuf->fd, c);

	if (ret)
		TH_LOG("TEST_DMABUF_EXP_IOC_COUNTERS: %s", strerror(-ret));
	return !ret;
}

/*
 * Between the rounds, with the test exporter: invalidate (and migrate) as
 * the variant says. @before gets the counters the second round is
 * compared with. (That the importer unmaps the old mapping shows at
 * teardown: every mapping must be gone then.)
 */
static bool between_rounds(struct __test_metadata *_metadata,
			   const struct dmabuf_rw_buf *dbuf,
			   enum between_rounds between,
			   struct test_dmabuf_exp_counters *before)
{
	int ret;

	if (between != KEEP) {
		ret = test_dmabuf_exp_move(dbuf->fd, between == MIGRATE ?
					   TEST_DMABUF_EXP_MIGRATE : 0);
		if (ret) {
			TH_LOG("TEST_DMABUF_EXP_IOC_MOVE: %s", strerror(-ret));
			return false;
		}
	}
	return exporter_counters(_metadata, dbuf, before);
}

/*
 * After the second round: it reused the mapping the first one made, or,
 * after an invalidation, made exactly one new mapping.
 */
static bool check_second_round(struct __test_metadata *_metadata,
			       const struct dmabuf_rw_buf *dbuf,
			       enum between_rounds between,
			       const struct test_dmabuf_exp_counters *before)
{
	struct test_dmabuf_exp_counters after;
	__u64 want = between == KEEP ? 0 : 1;

	if (!exporter_counters(_metadata, dbuf, &after))
		return false;
	if (after.maps - before->maps != want) {
		TH_LOG("the second round mapped the dma-buf %llu times, expected %llu",
		       (unsigned long long)(after.maps - before->maps),
		       (unsigned long long)want);
		return false;
	}
	return true;
}

typedef bool (*round_fn)(struct __test_metadata *_metadata,
			 const struct xfer *x, __u64 salt, __u8 poison);

/*
 * Both rounds of a test through @x, with @between done between them by
 * the test exporter.
 */
static void run_rounds(struct __test_metadata *_metadata, const struct xfer *x,
		       enum between_rounds between, round_fn round_fn,
		       __u64 salt)
{
	bool texp = x->dbuf->exporter == DMABUF_RW_TEST_EXPORTER;
	struct test_dmabuf_exp_counters before;
	unsigned int round;

	if (x->dbuf->fd < 0)
		SKIP(return, "%s", dmabuf_rw_exporter_missing(x->dbuf->exporter));
	if (!texp && dmabuf_rw_swiotlb_forced())
		SKIP(return, "swiotlb=force bounces udmabuf's own CPU-access syncs");

	/* braces: ASSERT_*() with TH_LOG() is more than one statement */
	for (round = 0; round < NR_ROUNDS; round++) {
		if (round && texp) {
			ASSERT_TRUE(between_rounds(_metadata, x->dbuf, between,
						   &before));
		}
		ASSERT_TRUE(round_fn(_metadata, x, ROUND_SALT(salt, round),
				     ROUND_POISON(round)))
			TH_LOG("round %u of %u", round + 1, NR_ROUNDS);
	}
	/* A refused transfer leaves no mapping behind to reuse. */
	if (texp && !*x->refused) {
		ASSERT_TRUE(check_second_round(_metadata, x->dbuf, between,
					       &before));
	}
	if (*x->refused)
		ksft_print_msg("layout refused: %u of %u transfers got EINVAL, none moved data\n",
			       *x->refused, NR_ROUNDS);
}

TEST_F(dmabuf_rw, udmabuf_write_normal_read_fixed)
{
	run_rounds(_metadata, &self->xfer[DMABUF_RW_UDMABUF], KEEP,
		   normal_to_fixed, SALT_NORMAL_TO_FIXED);
}

TEST_F(dmabuf_rw, udmabuf_write_fixed_read_normal)
{
	run_rounds(_metadata, &self->xfer[DMABUF_RW_UDMABUF], KEEP,
		   fixed_to_normal, SALT_FIXED_TO_NORMAL);
}

TEST_F(dmabuf_rw, texp_write_normal_read_fixed)
{
	run_rounds(_metadata, &self->xfer[DMABUF_RW_TEST_EXPORTER], KEEP,
		   normal_to_fixed, SALT_NORMAL_TO_FIXED);
}

TEST_F(dmabuf_rw, texp_write_fixed_read_normal)
{
	run_rounds(_metadata, &self->xfer[DMABUF_RW_TEST_EXPORTER], KEEP,
		   fixed_to_normal, SALT_FIXED_TO_NORMAL);
}

TEST_F(dmabuf_rw, texp_invalidate_write_normal_read_fixed)
{
	run_rounds(_metadata, &self->xfer[DMABUF_RW_TEST_EXPORTER], INVALIDATE,
		   normal_to_fixed, SALT_NORMAL_TO_FIXED);
}

TEST_F(dmabuf_rw, texp_invalidate_write_fixed_read_normal)
{
	run_rounds(_metadata, &self->xfer[DMABUF_RW_TEST_EXPORTER], INVALIDATE,
		   fixed_to_normal, SALT_FIXED_TO_NORMAL);
}

TEST_F(dmabuf_rw, texp_migrate_write_normal_read_fixed)
{
	run_rounds(_metadata, &self->xfer[DMABUF_RW_TEST_EXPORTER], MIGRATE,
		   normal_to_fixed, SALT_NORMAL_TO_FIXED);
}

TEST_F(dmabuf_rw, texp_migrate_write_fixed_read_normal)
{
	run_rounds(_metadata, &self->xfer[DMABUF_RW_TEST_EXPORTER], MIGRATE,
		   fixed_to_normal, SALT_FIXED_TO_NORMAL);
}

/*
 * The test exporter's layouts (TEST_DMABUF_EXP_LAYOUT_*): scatterlists
 * no udmabuf hands out. NVMe PRP entries address whole controller pages,
 * so a segment that starts or ends inside one cannot be described: the
 * series may refuse it (EINVAL, nothing moved) or must move the right
 * bytes. Every other layout must work.
 */
FIXTURE(layout) {
	struct smoke sm;
	struct dmabuf_rw_buf dbuf;
	struct xfer xfer;
};

FIXTURE_VARIANT(layout) {
	__u32 layout;
	__u32 seg_size;
	size_t size;		/* of the dma-buf */
	size_t buf_offset;	/* offset of the transfer in the dma-buf */
	size_t len;		/* bytes transferred */
	bool may_refuse;	/* segments PRP cannot describe */
};

/* Two segments a page: the second starts in the middle of it. */
FIXTURE_VARIANT_ADD(layout, split2k_off0_len8k) {
	.layout = TEST_DMABUF_EXP_LAYOUT_SPLIT,
	.seg_size = 2048,
	.size = DMABUF_SIZE,
	.len = 8192,
	.may_refuse = true,
};

/* Lengths of 1000 and 96 bytes, starts anywhere; the transfer too. */
FIXTURE_VARIANT_ADD(layout, split1000_off512_len8k) {
	.layout = TEST_DMABUF_EXP_LAYOUT_SPLIT,
	.seg_size = 1000,
	.size = DMABUF_SIZE,
	.buf_offset = 512,
	.len = 8192,
	.may_refuse = true,
};

/* Many tiny segments, one a sector. */
FIXTURE_VARIANT_ADD(layout, split512_off3584_len4k) {
	.layout = TEST_DMABUF_EXP_LAYOUT_SPLIT,
	.seg_size = 512,
	.size = DMABUF_SIZE,
	.buf_offset = 3584,
	.len = 4096,
	.may_refuse = true,
};

/* One segment of 4 MiB (as far as the DMA mapping takes it). */
FIXTURE_VARIANT_ADD(layout, contig_off4608_len1m) {
	.layout = TEST_DMABUF_EXP_LAYOUT_CONTIG,
	.size = 4 << 20,
	.buf_offset = 4608,
	.len = 1 << 20,
};

/* 64 KiB segments; the transfer crosses four of their boundaries. */
FIXTURE_VARIANT_ADD(layout, contig64k_off61952_len256k) {
	.layout = TEST_DMABUF_EXP_LAYOUT_CONTIG,
	.seg_size = 64 << 10,
	.size = 1 << 20,
	.buf_offset = (60 << 10) + 512,
	.len = 256 << 10,
};

/*
 * All of a 4 MiB segment in one transfer: more than one command carries
 * (32 of 128 KiB) and than one PRP list page addresses (1024 entries).
 */
FIXTURE_VARIANT_ADD(layout, contig_off0_len4m) {
	.layout = TEST_DMABUF_EXP_LAYOUT_CONTIG,
	.size = 4 << 20,
	.len = 4 << 20,
};

FIXTURE_SETUP(layout)
{
	self->sm.dev_fd = -1;
	dmabuf_rw_buf_init(&self->dbuf);
	if (!smoke_setup(_metadata, &self->sm, variant->size, variant->len))
		return;
	self->xfer = (struct xfer) {
		.off = variant->buf_offset,
		.len = variant->len,
		.may_refuse = variant->may_refuse,
	};
	smoke_add_dmabuf(_metadata, &self->sm, &self->dbuf, &self->xfer, 0,
			 DMABUF_RW_TEST_EXPORTER, variant->size,
			 variant->layout, variant->seg_size);
}

FIXTURE_TEARDOWN(layout)
{
	smoke_teardown(_metadata, &self->sm, &self->dbuf);
	dmabuf_rw_buf_destroy(&self->dbuf);
}

TEST_F(layout, texp_write_normal_read_fixed)
{
	run_rounds(_metadata, &self->xfer, KEEP, normal_to_fixed,
		   SALT_NORMAL_TO_FIXED);
}

TEST_F(layout, texp_write_fixed_read_normal)
{
	run_rounds(_metadata, &self->xfer, KEEP, fixed_to_normal,
		   SALT_FIXED_TO_NORMAL);
}

TEST_F(layout, texp_migrate_write_normal_read_fixed)
{
	run_rounds(_metadata, &self->xfer, MIGRATE, normal_to_fixed,
		   SALT_NORMAL_TO_FIXED);
}

TEST_F(layout, texp_migrate_write_fixed_read_normal)
{
	run_rounds(_metadata, &self->xfer, MIGRATE, fixed_to_normal,
		   SALT_FIXED_TO_NORMAL);
}

TEST_HARNESS_MAIN
