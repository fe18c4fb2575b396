// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for BIO_DMA_TOKEN bios, the bio type of the "dmabuf
 * read/write via io_uring" series: a byte range of a pre-registered
 * dma-buf, carried by an opaque struct dma_token instead of bio_vecs.
 *
 * The bios are set up as block/fops.c does (bio_iov_dma_token_set() from an
 * ITER_DMA_TOKEN iterator) and split as bio_split_rw() does:
 * bio_split_rw_at() decides where, bio_split() cuts.  bio_split_rw() itself
 * needs a gendisk (its bio_set, and it submits the remainder), so the tests
 * drive its two halves with a bio_set of their own, and loop on the
 * remainder the way the remainder is split again on resubmission.
 *
 * The queue limits are an nvme-pci controller's in PRP mode: the driver
 * builds one PRP entry per NVME_CTRL_PAGE_SIZE page the range touches
 * (nvme_dma_premapped()), so that is how segments are counted here,
 * whatever PAGE_SIZE is.
 *
 * Nothing on these paths dereferences the token: the tests pass the
 * address of a dummy one with no release callback.
 */

#include <kunit/test.h>
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/dma_token.h>
#include <linux/math.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/uio.h>

#include "dmatok_kunit.h"

/* nvme-pci's PRP page (drivers/nvme/host/nvme.h), not PAGE_SIZE. */
#define DMATOK_NVME_PAGE	SZ_4K

/*
 * Start offsets in the dma-buf and lengths the parameter grids are built
 * from; among them the start of a transfer of dmabuf_rw_smoke's layout
 * cases (a bio does not see the dma-buf's segments, only its range),
 * 3.5 KiB before a 64 KiB boundary. Their 256 KiB and 4 MiB transfers
 * split as 1 MiB does, only less or more often; the grid's time on the
 * debug kernel grows with the sum of its lengths.
 */
static const unsigned int dmatok_offsets[] = {
	0, 4, 512, PAGE_SIZE - 512, PAGE_SIZE + 512, 3 * SZ_4K + 4,
	SZ_64K - SZ_4K + 512,
};

static const unsigned int dmatok_lens[] = {
	512, 3 * 512, SZ_4K, 3 * SZ_4K, SZ_64K + SZ_4K, SZ_1M,
};

/* Queue limits of the split grid. */
struct dmatok_limits {
	unsigned short max_segments;
	unsigned int max_sectors;
	unsigned int lbs;
	unsigned int dma_alignment;
};

static const struct dmatok_limits dmatok_limits[] = {
	{ .max_segments = 1, .max_sectors = 2048, .lbs = 512, .dma_alignment = 3 },
	{ .max_segments = 1, .max_sectors = 2048, .lbs = 4096, .dma_alignment = 3 },
	{ .max_segments = 2, .max_sectors = 256, .lbs = 512, .dma_alignment = 511 },
	{ .max_segments = 3, .max_sectors = 1024, .lbs = 4096, .dma_alignment = 3 },
	{ .max_segments = 8, .max_sectors = 256, .lbs = 4096, .dma_alignment = 3 },
	{ .max_segments = 16, .max_sectors = 128, .lbs = 512, .dma_alignment = 3 },
	{ .max_segments = 128, .max_sectors = 8, .lbs = 4096, .dma_alignment = 511 },
	/* nvme-pci with an MDTS of 512 KiB: max_hw_sectors / 8 + 1 segments */
	{ .max_segments = 129, .max_sectors = 1024, .lbs = 512, .dma_alignment = 3 },
	{ .max_segments = 128, .max_sectors = 2048, .lbs = 4096, .dma_alignment = 3 },
};

struct dmatok_split_param {
	unsigned int off;
	unsigned int len;
	const struct dmatok_limits *lim;
};

/* The bio_set the bios of one test come from, freed after them. */
KUNIT_DEFINE_ACTION_WRAPPER(dmatok_bioset_exit, bioset_exit, struct bio_set *);
KUNIT_DEFINE_ACTION_WRAPPER(dmatok_bio_put, bio_put, struct bio *);

static struct bio_set *dmatok_bioset(struct kunit *test)
{
	struct bio_set *bs;

	bs = kunit_kzalloc(test, sizeof(*bs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, bs);
	KUNIT_ASSERT_EQ(test, bioset_init(bs, 2, 0, 0), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, dmatok_bioset_exit, bs), 0);
	return bs;
}

/* Register @bio to be put when the test ends (before its bio_set goes). */
static void dmatok_bio_defer_put(struct kunit *test, struct bio *bio)
{
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, dmatok_bio_put, bio), 0);
}

/* A bio over [off, off + len) of @token, set up as block/fops.c does. */
static struct bio *dmatok_bio(struct kunit *test, struct bio_set *bs,
			      struct dma_token *token, blk_opf_t opf,
			      unsigned int off, unsigned int len)
{
	struct iov_iter iter;
	struct bio *bio;

	bio = bio_alloc_bioset(NULL, 0, opf, GFP_KERNEL, bs);
	KUNIT_ASSERT_NOT_NULL(test, bio);
	dmatok_bio_defer_put(test, bio);

	iov_iter_dma_token(&iter, op_is_write(opf) ? ITER_SOURCE : ITER_DEST,
			   token, off, len);
	bio_iov_dma_token_set(bio, &iter);
	return bio;
}

/* PRP entries nvme-pci builds for @len bytes at dma-buf offset @off. */
static unsigned int dmatok_nvme_segs(unsigned int off, unsigned int len)
{
	return DIV_ROUND_UP((off % DMATOK_NVME_PAGE) + len, DMATOK_NVME_PAGE);
}

/* bio_split_rw()'s max_bytes: get_max_io_size() for a bio at sector 0. */
static unsigned int dmatok_max_bytes(const struct queue_limits *lim)
{
	unsigned int pbs = lim->physical_block_size >> SECTOR_SHIFT;

	return (lim->max_sectors & ~(pbs - 1)) << SECTOR_SHIFT;
}

/* Limits as nvme-pci in PRP mode would set them, validated by the block layer. */
static void dmatok_init_limits(struct kunit *test, struct queue_limits *lim,
			       const struct dmatok_limits *p)
{
	memset(lim, 0, sizeof(*lim));
	lim->logical_block_size = p->lbs;
	lim->physical_block_size = p->lbs;
	lim->max_hw_sectors = p->max_sectors;
	lim->max_user_sectors = p->max_sectors;
	lim->max_segments = p->max_segments;
	lim->virt_boundary_mask = DMATOK_NVME_PAGE - 1;
	lim->dma_alignment = p->dma_alignment;
	KUNIT_ASSERT_EQ(test, blk_validate_limits(lim), 0);
	KUNIT_ASSERT_EQ(test, lim->max_sectors, p->max_sectors);
	KUNIT_ASSERT_EQ(test, lim->max_segments, p->max_segments);
	KUNIT_ASSERT_EQ(test, lim->dma_alignment, p->dma_alignment);
}

/* Assert that @bio is a dma-token bio over [off, off + len) of @token. */
static void dmatok_assert_bio(struct kunit *test, const struct bio *bio,
			      const struct dma_token *token, unsigned int off,
			      unsigned int len, sector_t sector, const char *what)
{
	KUNIT_ASSERT_TRUE_MSG(test, bio_flagged(bio, BIO_DMA_TOKEN),
			      "%s: BIO_DMA_TOKEN not set", what);
	KUNIT_ASSERT_PTR_EQ_MSG(test, bio->dma_token, token, "%s: token", what);
	KUNIT_EXPECT_EQ_MSG(test, bio->bi_vcnt, 0, "%s: bi_vcnt", what);
	KUNIT_EXPECT_EQ_MSG(test, bio->bi_iter.bi_bvec_done, off,
			    "%s: bi_bvec_done (dma-buf offset)", what);
	KUNIT_EXPECT_EQ_MSG(test, bio->bi_iter.bi_size, len, "%s: bi_size", what);
	KUNIT_EXPECT_EQ_MSG(test, bio->bi_iter.bi_sector, sector, "%s: bi_sector", what);
}

/* Every start offset with every length. */
static int dmatok_geom_init(struct kunit *test)
{
	return dmatok_geom_register(test, dmatok_offsets, ARRAY_SIZE(dmatok_offsets),
				    dmatok_lens, ARRAY_SIZE(dmatok_lens));
}

static void dmatok_split_desc(struct kunit *test, const void *param, char *desc)
{
	const struct dmatok_split_param *p = param;

	snprintf(desc, KUNIT_PARAM_DESC_SIZE,
		 "off=%u len=%u max_segs=%u max_sectors=%u lbs=%u dma_align=%u",
		 p->off, p->len, p->lim->max_segments, p->lim->max_sectors,
		 p->lim->lbs, p->lim->dma_alignment);
}

/* Every start offset with every length and every set of limits. */
static int dmatok_split_init(struct kunit *test)
{
	struct dmatok_split_param *params;
	size_t o, l, m, n = 0;

	params = kunit_kcalloc(test, ARRAY_SIZE(dmatok_offsets) * ARRAY_SIZE(dmatok_lens) *
			       ARRAY_SIZE(dmatok_limits), sizeof(*params), GFP_KERNEL);
	if (!params)
		return -ENOMEM;

	for (m = 0; m < ARRAY_SIZE(dmatok_limits); m++) {
		for (o = 0; o < ARRAY_SIZE(dmatok_offsets); o++) {
			for (l = 0; l < ARRAY_SIZE(dmatok_lens); l++) {
				params[n].off = dmatok_offsets[o];
				params[n].len = dmatok_lens[l];
				params[n].lim = &dmatok_limits[m];
				n++;
			}
		}
	}

	kunit_register_params_array(test, params, n, dmatok_split_desc);
	return 0;
}

/*
 * bio_iov_dma_token_set() (block/fops.c's path) and bio_iov_iter_get_pages()
 * (iomap's) build the same bio: the token, the dma-buf offset in
 * bi_bvec_done, no bio_vecs, never merged.
 */
static void dmatok_bio_setup_test(struct kunit *test)
{
	static const enum req_op ops[] = { REQ_OP_READ, REQ_OP_WRITE };
	const struct dmatok_geom *g = test->param_value;
	struct bio_set *bs = dmatok_bioset(test);
	struct dma_token token = {};
	struct iov_iter iter;
	struct bio *bio;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		const char *what = op_is_write(ops[i]) ? "write" : "read";

		bio = dmatok_bio(test, bs, &token, ops[i], g->off, g->len);
		dmatok_assert_bio(test, bio, &token, g->off, g->len, 0, what);
		KUNIT_EXPECT_TRUE_MSG(test, bio->bi_opf & REQ_NOMERGE, "%s", what);
		KUNIT_EXPECT_EQ_MSG(test, bio_op(bio), ops[i], "%s", what);

		bio = bio_alloc_bioset(NULL, 0, ops[i], GFP_KERNEL, bs);
		KUNIT_ASSERT_NOT_NULL(test, bio);
		dmatok_bio_defer_put(test, bio);
		iov_iter_dma_token(&iter, op_is_write(ops[i]) ? ITER_SOURCE : ITER_DEST,
				   &token, g->off, g->len);
		KUNIT_ASSERT_EQ_MSG(test, bio_iov_iter_get_pages(bio, &iter, 0, 0), 0,
				    "%s: bio_iov_iter_get_pages", what);
		dmatok_assert_bio(test, bio, &token, g->off, g->len, 0, what);
		KUNIT_EXPECT_TRUE_MSG(test, bio->bi_opf & REQ_NOMERGE, "%s", what);
		KUNIT_EXPECT_EQ_MSG(test, iov_iter_count(&iter), 0,
				    "%s: iterator not consumed", what);
		KUNIT_EXPECT_EQ_MSG(test, iter.iov_offset, (size_t)g->off + g->len,
				    "%s: iterator position", what);
	}
}

/*
 * bio_advance_iter() and bio_advance_iter_single() move the dma-buf offset
 * forward by exactly what they consume, and bio_advance() does the same to
 * the bio itself, down to an empty bio at the end of the range.
 */
static void dmatok_bio_advance_test(struct kunit *test)
{
	static const unsigned int steps[] = { 0, 1, 511, 512, 4096, 5000 };
	const struct dmatok_geom *g = test->param_value;
	struct bio_set *bs = dmatok_bioset(test);
	struct dma_token token = {};
	struct bvec_iter iter;
	struct bio *bio;
	size_t i;

	bio = dmatok_bio(test, bs, &token, REQ_OP_READ, g->off, g->len);
	bio->bi_iter.bi_sector = 2048;

	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		unsigned int step = min(steps[i], g->len);

		iter = bio->bi_iter;
		bio_advance_iter(bio, &iter, step);
		KUNIT_EXPECT_EQ_MSG(test, iter.bi_bvec_done, g->off + step,
				    "bio_advance_iter(%u): bi_bvec_done", step);
		KUNIT_EXPECT_EQ_MSG(test, iter.bi_size, g->len - step,
				    "bio_advance_iter(%u): bi_size", step);
		KUNIT_EXPECT_EQ_MSG(test, iter.bi_sector, 2048 + (step >> SECTOR_SHIFT),
				    "bio_advance_iter(%u): bi_sector", step);
		KUNIT_EXPECT_EQ_MSG(test, iter.bi_idx, 0,
				    "bio_advance_iter(%u): bi_idx", step);

		iter = bio->bi_iter;
		bio_advance_iter_single(bio, &iter, step);
		KUNIT_EXPECT_EQ_MSG(test, iter.bi_bvec_done, g->off + step,
				    "bio_advance_iter_single(%u): bi_bvec_done", step);
		KUNIT_EXPECT_EQ_MSG(test, iter.bi_size, g->len - step,
				    "bio_advance_iter_single(%u): bi_size", step);
	}

	/*
	 * Advance the bio itself one sector at a time.  The last advance
	 * only zeroes bi_size (bio_advance()'s shortcut for a whole bio), so
	 * the position is checked up to the last sector.
	 */
	for (i = 1; i < g->len / 512; i++) {
		bio_advance(bio, 512);
		KUNIT_ASSERT_EQ_MSG(test, bio->bi_iter.bi_bvec_done, g->off + i * 512,
				    "bio_advance #%zu: bi_bvec_done", i);
		KUNIT_ASSERT_EQ_MSG(test, bio->bi_iter.bi_sector, 2048 + i,
				    "bio_advance #%zu: bi_sector", i);
	}
	dmatok_assert_bio(test, bio, &token, g->off + g->len - 512, 512,
			  2048 + (g->len >> SECTOR_SHIFT) - 1, "advanced to the last sector");
	bio_advance(bio, 512);
	KUNIT_EXPECT_EQ(test, bio->bi_iter.bi_size, 0);
	KUNIT_EXPECT_TRUE(test, bio_flagged(bio, BIO_DMA_TOKEN));
}

/* A clone covers the same range of the same token, flagged as such. */
static void dmatok_bio_clone_test(struct kunit *test)
{
	const struct dmatok_geom *g = test->param_value;
	struct bio_set *bs = dmatok_bioset(test);
	struct dma_token token = {};
	struct bio *bio, *clone, *clone2;

	bio = dmatok_bio(test, bs, &token, REQ_OP_WRITE, g->off, g->len);
	bio->bi_iter.bi_sector = 8;

	clone = bio_alloc_clone(NULL, bio, GFP_KERNEL, bs);
	KUNIT_ASSERT_NOT_NULL(test, clone);
	dmatok_bio_defer_put(test, clone);
	dmatok_assert_bio(test, clone, &token, g->off, g->len, 8, "clone");
	KUNIT_EXPECT_EQ(test, bio_op(clone), REQ_OP_WRITE);
	KUNIT_EXPECT_TRUE(test, bio_flagged(clone, BIO_CLONED));

	/* A clone of a bio advanced into the range, and of the clone. */
	bio_advance(bio, g->len / 2);
	clone2 = bio_alloc_clone(NULL, bio, GFP_KERNEL, bs);
	KUNIT_ASSERT_NOT_NULL(test, clone2);
	dmatok_bio_defer_put(test, clone2);
	dmatok_assert_bio(test, clone2, &token, g->off + g->len / 2,
			  g->len - g->len / 2, 8 + ((g->len / 2) >> SECTOR_SHIFT),
			  "clone of an advanced bio");

	clone2 = bio_alloc_clone(NULL, clone, GFP_KERNEL, bs);
	KUNIT_ASSERT_NOT_NULL(test, clone2);
	dmatok_bio_defer_put(test, clone2);
	dmatok_assert_bio(test, clone2, &token, g->off, g->len, 8, "clone of a clone");
}

/*
 * Split a bio the way bio_split_rw() does, then split the remainder again,
 * until what is left fits the limits:
 * - a bio whose start is not aligned to dma_alignment, or whose length is
 *   not a multiple of the logical block size, is rejected with -EINVAL;
 * - a bio that fits (max_bytes, and max_segments in nvme PRP entries) is not
 *   split, and its segment count is the number of PRP entries;
 * - otherwise the front is within max_bytes and max_segments, a multiple of
 *   the logical block size, not empty, and its segment count is right; a
 *   bio that has no such front (one segment, a block straddling a page) is
 *   rejected with -EINVAL;
 * - both halves of a split carry the token and the flag, the front starts
 *   where the bio did and the remainder where the front ends
 *   (bi_bvec_done), and the remainder advances consistently.
 */
static void dmatok_bio_split_test(struct kunit *test)
{
	const struct dmatok_split_param *p = test->param_value;
	struct bio_set *bs = dmatok_bioset(test);
	struct dma_token token = {};
	struct queue_limits lim;
	unsigned int max_bytes, off = p->off, left = p->len, max_front;
	sector_t sector = 0;
	struct bio *bio, *split;
	bool valid;
	int piece;

	dmatok_init_limits(test, &lim, p->lim);
	max_bytes = dmatok_max_bytes(&lim);
	valid = !(p->off & lim.dma_alignment) &&
		!(p->len & (lim.logical_block_size - 1)) &&
		!(p->len & lim.dma_alignment);

	bio = dmatok_bio(test, bs, &token, REQ_OP_READ, p->off, p->len);

	for (piece = 0; ; piece++) {
		unsigned int segs = 0, bytes;
		int ret;

		ret = bio_split_rw_at(bio, &lim, &segs, max_bytes);

		if (!valid) {
			KUNIT_EXPECT_EQ_MSG(test, ret, -EINVAL,
					    "misaligned bio (start vs dma_alignment %u, length vs lbs %u) accepted, segs=%u",
					    lim.dma_alignment, lim.logical_block_size, segs);
			return;
		}

		if (left <= max_bytes &&
		    dmatok_nvme_segs(off, left) <= lim.max_segments) {
			KUNIT_EXPECT_EQ_MSG(test, ret, 0,
					    "piece %d at %u+%u fits (max_bytes %u) but split",
					    piece, off, left, max_bytes);
			if (!ret)
				KUNIT_EXPECT_EQ_MSG(test, segs, dmatok_nvme_segs(off, left),
						    "piece %d at %u+%u: segment count",
						    piece, off, left);
			break;
		}

		max_front = min(max_bytes, lim.max_segments * DMATOK_NVME_PAGE -
				off % DMATOK_NVME_PAGE);
		if (max_front < lim.logical_block_size) {
			KUNIT_EXPECT_EQ_MSG(test, ret, -EINVAL,
					    "piece %d at %u+%u cannot be split into %u segments",
					    piece, off, left, lim.max_segments);
			break;
		}

		KUNIT_ASSERT_GT_MSG(test, ret, 0, "piece %d at %u+%u: no split", piece,
				    off, left);
		bytes = ret << SECTOR_SHIFT;
		KUNIT_ASSERT_LT_MSG(test, bytes, left,
				    "piece %d at %u+%u: split past the end", piece, off, left);
		KUNIT_EXPECT_LE_MSG(test, bytes, max_bytes,
				    "piece %d at %u: split beyond max_bytes", piece, off);
		KUNIT_EXPECT_EQ_MSG(test, bytes % lim.logical_block_size, 0,
				    "piece %d at %u: split of %u bytes not a multiple of lbs",
				    piece, off, bytes);
		KUNIT_EXPECT_LE_MSG(test, dmatok_nvme_segs(off, bytes), lim.max_segments,
				    "piece %d at %u: %u bytes need more PRP entries than max_segments",
				    piece, off, bytes);
		KUNIT_EXPECT_EQ_MSG(test, segs, dmatok_nvme_segs(off, bytes),
				    "piece %d at %u: segment count of %u bytes",
				    piece, off, bytes);

		split = bio_split(bio, ret, GFP_KERNEL, bs);
		KUNIT_ASSERT_FALSE_MSG(test, IS_ERR_OR_NULL(split),
				       "piece %d: bio_split: %pe", piece, split);
		dmatok_bio_defer_put(test, split);
		dmatok_assert_bio(test, split, &token, off, bytes, sector, "front");
		dmatok_assert_bio(test, bio, &token, off + bytes, left - bytes,
				  sector + ret, "remainder");
		KUNIT_EXPECT_EQ_MSG(test, bio->bi_iter.bi_bvec_done,
				    split->bi_iter.bi_bvec_done + split->bi_iter.bi_size,
				    "piece %d: remainder does not start where the front ends",
				    piece);
		kunit_release_action(test, dmatok_bio_put, split);

		off += bytes;
		left -= bytes;
		sector += ret;
		/* Stop at the first broken piece rather than report every one. */
		if (test->status == KUNIT_FAILURE)
			return;
	}

	/* What is left advances to the end of the range, one block at a time. */
	while (bio->bi_iter.bi_size) {
		struct bvec_iter iter = bio->bi_iter;

		bio_advance_iter(bio, &iter, lim.logical_block_size);
		KUNIT_ASSERT_EQ(test, iter.bi_bvec_done,
				bio->bi_iter.bi_bvec_done + lim.logical_block_size);
		KUNIT_ASSERT_EQ(test, iter.bi_sector,
				bio->bi_iter.bi_sector + (lim.logical_block_size >> SECTOR_SHIFT));
		bio->bi_iter = iter;
	}
	dmatok_assert_bio(test, bio, &token, p->off + p->len, 0,
			  p->len >> SECTOR_SHIFT, "remainder advanced to the end");
}

static struct kunit_case dmatok_bio_split_cases[] = {
	KUNIT_CASE_PARAM_WITH_INIT(dmatok_bio_setup_test, kunit_array_gen_params,
				   dmatok_geom_init, NULL),
	KUNIT_CASE_PARAM_WITH_INIT(dmatok_bio_advance_test, kunit_array_gen_params,
				   dmatok_geom_init, NULL),
	KUNIT_CASE_PARAM_WITH_INIT(dmatok_bio_clone_test, kunit_array_gen_params,
				   dmatok_geom_init, NULL),
	KUNIT_CASE_PARAM_WITH_INIT(dmatok_bio_split_test, kunit_array_gen_params,
				   dmatok_split_init, NULL),
	{}
};

static struct kunit_suite dmatok_bio_split_suite = {
	.name = "dmatok_bio_split",
	.test_cases = dmatok_bio_split_cases,
};

kunit_test_suite(dmatok_bio_split_suite);

MODULE_DESCRIPTION("KUnit tests for splitting and cloning dma-token bios");
MODULE_LICENSE("GPL");
