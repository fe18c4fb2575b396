// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for ITER_DMA_TOKEN, the iov_iter type of the "dmabuf
 * read/write via io_uring" series: a byte range of a pre-registered
 * dma-buf, handed to the block layer as an opaque struct dma_token.
 *
 * Such an iterator is a position (iov_offset, the offset into the dma-buf)
 * and a remaining length (count).  lib/iov_iter.c never dereferences the
 * token, so the tests pass the address of a dummy one.  Its bookkeeping is
 * meant to be ITER_UBUF's, with the offset in iov_offset instead of in the
 * pointer; the differential case checks exactly that.
 *
 * iov_iter_revert() BUG()s when asked to go back past the start of this
 * type, so positions are checked with assertions: a broken advance ends
 * the case before a revert computed from it can reach that BUG().
 */

#include <kunit/test.h>
#include <linux/bio.h>
#include <linux/bvec.h>
#include <linux/dma_token.h>
#include <linux/folio_queue.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/prandom.h>
#include <linux/sizes.h>
#include <linux/uio.h>
#include <linux/xarray.h>

#include "dmatok_kunit.h"

/* Start offsets in the dma-buf and lengths the parameter grids are built from. */
static const unsigned int dmatok_offsets[] = { 0, 1, 512, 4095, 4096, SZ_64K + 512 };
static const unsigned int dmatok_lens[] = { 1, 512, 4096, SZ_64K, SZ_1M + 512 };

/* An advance step: a fixed byte count, or the iterator's length plus a delta. */
struct dmatok_step {
	const char *name;
	size_t bytes;
	bool from_len;
	int len_delta;
};

static const struct dmatok_step dmatok_steps[] = {
	{ .name = "0", .bytes = 0 },
	{ .name = "1", .bytes = 1 },
	{ .name = "511", .bytes = 511 },
	{ .name = "512", .bytes = 512 },
	{ .name = "4095", .bytes = 4095 },
	{ .name = "4096", .bytes = 4096 },
	{ .name = "len-1", .from_len = true, .len_delta = -1 },
	{ .name = "len", .from_len = true, .len_delta = 0 },
	{ .name = "len+1", .from_len = true, .len_delta = 1 },
};

/* How many times the advance/revert grid advances before one revert. */
#define DMATOK_NR_ADVANCES	4

/* Random operations per geometry in the ITER_UBUF differential. */
#define DMATOK_DIFF_STEPS	200
#define DMATOK_DIFF_SEED	0x646d61746f6bULL	/* "dmatok" */

struct dmatok_grid {
	loff_t off;
	size_t len;
	size_t step;
	const char *step_name;
};

/* Every start offset with every length. */
static int dmatok_geom_init(struct kunit *test)
{
	return dmatok_geom_register(test, dmatok_offsets, ARRAY_SIZE(dmatok_offsets),
				    dmatok_lens, ARRAY_SIZE(dmatok_lens));
}

static void dmatok_grid_desc(struct kunit *test, const void *param, char *desc)
{
	const struct dmatok_grid *p = param;

	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "off=%lld len=%zu step=%s (%zu)",
		 p->off, p->len, p->step_name, p->step);
}

/* Every start offset with every length and every advance step. */
static int dmatok_grid_init(struct kunit *test)
{
	struct dmatok_grid *grid;
	size_t o, l, s, n = 0;

	grid = kunit_kcalloc(test, ARRAY_SIZE(dmatok_offsets) * ARRAY_SIZE(dmatok_lens) *
			     ARRAY_SIZE(dmatok_steps), sizeof(*grid), GFP_KERNEL);
	if (!grid)
		return -ENOMEM;

	for (o = 0; o < ARRAY_SIZE(dmatok_offsets); o++) {
		for (l = 0; l < ARRAY_SIZE(dmatok_lens); l++) {
			for (s = 0; s < ARRAY_SIZE(dmatok_steps); s++) {
				const struct dmatok_step *step = &dmatok_steps[s];
				size_t len = dmatok_lens[l];

				grid[n].off = dmatok_offsets[o];
				grid[n].len = len;
				grid[n].step = step->from_len ? len + step->len_delta : step->bytes;
				grid[n].step_name = step->name;
				n++;
			}
		}
	}

	kunit_register_params_array(test, grid, n, dmatok_grid_desc);
	return 0;
}

/*
 * Assert that @iter is still an ITER_DMA_TOKEN iterator over @token, @done
 * bytes past @off with @count bytes left.
 */
static void dmatok_assert_at(struct kunit *test, const struct iov_iter *iter,
			     const struct dma_token *token, loff_t off,
			     size_t done, size_t count, const char *where,
			     const char *op)
{
	KUNIT_ASSERT_TRUE_MSG(test, iov_iter_is_dma_token(iter),
			      "%s: iter_type %d after %s", where,
			      (int)iov_iter_type(iter), op);
	KUNIT_ASSERT_PTR_EQ_MSG(test, iter->dma_token, token,
				"%s: token changed by %s", where, op);
	KUNIT_ASSERT_EQ_MSG(test, iov_iter_count(iter), count,
			    "%s: count after %s", where, op);
	KUNIT_ASSERT_EQ_MSG(test, iter->iov_offset, (size_t)off + done,
			    "%s: iov_offset after %s (%zu bytes consumed)",
			    where, op, done);
}

/*
 * Type, direction and token as set up, and the block layer's view: no
 * pinned user pages and no bio_vecs to allocate, however long the range is.
 */
static void dmatok_iter_init_test(struct kunit *test)
{
	static const unsigned int dirs[] = { ITER_DEST, ITER_SOURCE };
	const struct dmatok_geom *g = test->param_value;
	struct dma_token token = {};
	struct iov_iter iter;
	char where[KUNIT_PARAM_DESC_SIZE];
	size_t d, half = g->len / 2;

	for (d = 0; d < ARRAY_SIZE(dirs); d++) {
		unsigned char rw = dirs[d] == ITER_SOURCE ? WRITE : READ;

		snprintf(where, sizeof(where), "off=%u len=%u dir=%s",
			 g->off, g->len, rw == WRITE ? "source" : "dest");

		iov_iter_dma_token(&iter, dirs[d], &token, g->off, g->len);
		dmatok_assert_at(test, &iter, &token, g->off, 0, g->len, where, "init");
		KUNIT_EXPECT_EQ_MSG(test, iov_iter_type(&iter), ITER_DMA_TOKEN,
				    "%s", where);
		KUNIT_EXPECT_EQ_MSG(test, iov_iter_rw(&iter), rw, "%s", where);
		KUNIT_EXPECT_FALSE_MSG(test, user_backed_iter(&iter),
				       "%s: would have user pages pinned", where);
		KUNIT_EXPECT_EQ_MSG(test, iov_iter_gap_alignment(&iter), 0UL,
				    "%s", where);
		KUNIT_EXPECT_EQ_MSG(test, bio_iov_vecs_to_alloc(&iter, BIO_MAX_VECS), 0,
				    "%s", where);
		KUNIT_EXPECT_EQ_MSG(test, bio_iov_vecs_to_alloc(&iter, 1), 0,
				    "%s", where);

		iov_iter_advance(&iter, half);
		dmatok_assert_at(test, &iter, &token, g->off, half, g->len - half,
				 where, "advance by len/2");
		KUNIT_EXPECT_EQ_MSG(test, iov_iter_rw(&iter), rw,
				    "%s: after advance", where);
		KUNIT_EXPECT_EQ_MSG(test, iov_iter_gap_alignment(&iter), 0UL,
				    "%s: after advance", where);
		KUNIT_EXPECT_EQ_MSG(test, bio_iov_vecs_to_alloc(&iter, BIO_MAX_VECS), 0,
				    "%s: after advance", where);
	}
}

struct dmatok_backing {
	struct dma_token token;
	struct iovec iov;
	struct kvec kvec;
	struct bio_vec bvec;
	struct folio_queue folioq;
	struct xarray xarray;
	u8 buf[64];
};

/*
 * One constructor per iterator type; none of them touches the memory
 * described, so user addresses are arbitrary.
 */
struct dmatok_iter_kind {
	const char *name;
	enum iter_type type;
	void (*init)(struct iov_iter *iter, struct dmatok_backing *b);
};

static void dmatok_init_ubuf(struct iov_iter *iter, struct dmatok_backing *b)
{
	iov_iter_ubuf(iter, ITER_DEST, u64_to_user_ptr((u64)SZ_4K), 512);
}

static void dmatok_init_iovec(struct iov_iter *iter, struct dmatok_backing *b)
{
	b->iov.iov_base = u64_to_user_ptr((u64)SZ_4K);
	b->iov.iov_len = 512;
	iov_iter_init(iter, ITER_DEST, &b->iov, 1, 512);
}

static void dmatok_init_kvec(struct iov_iter *iter, struct dmatok_backing *b)
{
	b->kvec.iov_base = b->buf;
	b->kvec.iov_len = sizeof(b->buf);
	iov_iter_kvec(iter, ITER_SOURCE, &b->kvec, 1, sizeof(b->buf));
}

static void dmatok_init_bvec(struct iov_iter *iter, struct dmatok_backing *b)
{
	bvec_set_page(&b->bvec, ZERO_PAGE(0), PAGE_SIZE, 0);
	iov_iter_bvec(iter, ITER_SOURCE, &b->bvec, 1, PAGE_SIZE);
}

static void dmatok_init_folioq(struct iov_iter *iter, struct dmatok_backing *b)
{
	folioq_init(&b->folioq, 0);
	iov_iter_folio_queue(iter, ITER_DEST, &b->folioq, 0, 0, 0);
}

static void dmatok_init_xarray(struct iov_iter *iter, struct dmatok_backing *b)
{
	xa_init(&b->xarray);
	iov_iter_xarray(iter, ITER_DEST, &b->xarray, 0, 0);
}

static void dmatok_init_discard(struct iov_iter *iter, struct dmatok_backing *b)
{
	iov_iter_discard(iter, ITER_DEST, 512);
}

static void dmatok_init_dma_token(struct iov_iter *iter, struct dmatok_backing *b)
{
	iov_iter_dma_token(iter, ITER_DEST, &b->token, 512, 512);
}

static const struct dmatok_iter_kind dmatok_iter_kinds[] = {
	{ "ITER_UBUF", ITER_UBUF, dmatok_init_ubuf },
	{ "ITER_IOVEC", ITER_IOVEC, dmatok_init_iovec },
	{ "ITER_KVEC", ITER_KVEC, dmatok_init_kvec },
	{ "ITER_BVEC", ITER_BVEC, dmatok_init_bvec },
	{ "ITER_FOLIOQ", ITER_FOLIOQ, dmatok_init_folioq },
	{ "ITER_XARRAY", ITER_XARRAY, dmatok_init_xarray },
	{ "ITER_DISCARD", ITER_DISCARD, dmatok_init_discard },
	{ "ITER_DMA_TOKEN", ITER_DMA_TOKEN, dmatok_init_dma_token },
};

static void dmatok_iter_kind_desc(const struct dmatok_iter_kind *kind, char *desc)
{
	strscpy(desc, kind->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(dmatok_iter_kind, dmatok_iter_kinds, dmatok_iter_kind_desc);

/* iov_iter_is_dma_token() is true for ITER_DMA_TOKEN and for nothing else. */
static void dmatok_iter_is_dma_token_test(struct kunit *test)
{
	const struct dmatok_iter_kind *kind = test->param_value;
	struct dmatok_backing *b;
	struct iov_iter iter;

	b = kunit_kzalloc(test, sizeof(*b), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, b);

	kind->init(&iter, b);
	KUNIT_ASSERT_EQ_MSG(test, iov_iter_type(&iter), kind->type,
			    "%s: constructor built another type", kind->name);
	KUNIT_EXPECT_EQ_MSG(test, iov_iter_is_dma_token(&iter),
			    kind->type == ITER_DMA_TOKEN, "%s", kind->name);
}

/*
 * Advance by the step, revert to the start; advance by it several times,
 * revert the sum; advance past the end, which stops at the end.
 */
static void dmatok_iter_advance_revert_test(struct kunit *test)
{
	const struct dmatok_grid *p = test->param_value;
	struct dma_token token = {};
	struct iov_iter iter;
	char where[KUNIT_PARAM_DESC_SIZE];
	char op[32];
	size_t done;
	int n;

	snprintf(where, sizeof(where), "off=%lld len=%zu step=%s (%zu)",
		 p->off, p->len, p->step_name, p->step);

	iov_iter_dma_token(&iter, ITER_SOURCE, &token, p->off, p->len);

	done = min(p->step, p->len);
	iov_iter_advance(&iter, p->step);
	dmatok_assert_at(test, &iter, &token, p->off, done, p->len - done,
			 where, "advance");
	iov_iter_revert(&iter, done);
	dmatok_assert_at(test, &iter, &token, p->off, 0, p->len, where,
			 "revert to start");

	done = 0;
	for (n = 1; n <= DMATOK_NR_ADVANCES; n++) {
		iov_iter_advance(&iter, p->step);
		done = min(done + p->step, p->len);
		snprintf(op, sizeof(op), "advance #%d", n);
		dmatok_assert_at(test, &iter, &token, p->off, done,
				 p->len - done, where, op);
	}
	iov_iter_revert(&iter, done);
	dmatok_assert_at(test, &iter, &token, p->off, 0, p->len, where,
			 "one revert of the sum");

	iov_iter_advance(&iter, p->step);
	iov_iter_advance(&iter, p->len + 1);
	dmatok_assert_at(test, &iter, &token, p->off, p->len, 0, where,
			 "advance past the end");
	iov_iter_advance(&iter, SIZE_MAX);
	dmatok_assert_at(test, &iter, &token, p->off, p->len, 0, where,
			 "advance by SIZE_MAX at the end");
	iov_iter_revert(&iter, p->len);
	dmatok_assert_at(test, &iter, &token, p->off, 0, p->len, where,
			 "revert from the end");
}

/* iov_iter_restore() goes back, and forward, to a saved state exactly. */
static void dmatok_iter_save_restore_test(struct kunit *test)
{
	const struct dmatok_geom *g = test->param_value;
	struct iov_iter_state start, mid, truncated;
	struct dma_token token = {};
	struct iov_iter iter;
	char where[KUNIT_PARAM_DESC_SIZE];
	size_t a = g->len / 3;
	size_t t = (g->len - a) / 2;

	snprintf(where, sizeof(where), "off=%u len=%u", g->off, g->len);

	iov_iter_dma_token(&iter, ITER_DEST, &token, g->off, g->len);
	iov_iter_save_state(&iter, &start);
	KUNIT_EXPECT_EQ_MSG(test, start.iov_offset, (size_t)g->off, "%s", where);
	KUNIT_EXPECT_EQ_MSG(test, start.count, g->len, "%s", where);

	iov_iter_advance(&iter, a);
	iov_iter_save_state(&iter, &mid);
	iov_iter_advance(&iter, SIZE_MAX);
	dmatok_assert_at(test, &iter, &token, g->off, g->len, 0, where,
			 "advance to the end");

	iov_iter_restore(&iter, &mid);
	dmatok_assert_at(test, &iter, &token, g->off, a, g->len - a, where,
			 "restore of len/3 from the end");
	iov_iter_revert(&iter, a);
	dmatok_assert_at(test, &iter, &token, g->off, 0, g->len, where,
			 "revert after restore");
	iov_iter_restore(&iter, &mid);
	dmatok_assert_at(test, &iter, &token, g->off, a, g->len - a, where,
			 "restore of len/3 from the start");
	iov_iter_restore(&iter, &start);
	dmatok_assert_at(test, &iter, &token, g->off, 0, g->len, where,
			 "restore of the start");

	/* A saved count is restored as is, truncated or not. */
	iov_iter_advance(&iter, a);
	iov_iter_truncate(&iter, t);
	iov_iter_save_state(&iter, &truncated);
	iov_iter_reexpand(&iter, g->len - a);
	iov_iter_advance(&iter, 1);
	iov_iter_restore(&iter, &truncated);
	dmatok_assert_at(test, &iter, &token, g->off, a, t, where,
			 "restore of a truncated state");
	iov_iter_reexpand(&iter, g->len - a);
	dmatok_assert_at(test, &iter, &token, g->off, a, g->len - a, where,
			 "reexpand after restore");
	iov_iter_restore(&iter, &start);
	dmatok_assert_at(test, &iter, &token, g->off, 0, g->len, where,
			 "restore of the start after truncation");
}

/* Truncation limits count and advances, never moves the position. */
static void dmatok_iter_truncate_reexpand_test(struct kunit *test)
{
	const struct dmatok_geom *g = test->param_value;
	struct dma_token token = {};
	struct iov_iter iter;
	char where[KUNIT_PARAM_DESC_SIZE];
	size_t t = g->len / 2;

	snprintf(where, sizeof(where), "off=%u len=%u", g->off, g->len);

	iov_iter_dma_token(&iter, ITER_SOURCE, &token, g->off, g->len);
	iov_iter_truncate(&iter, U64_MAX);
	dmatok_assert_at(test, &iter, &token, g->off, 0, g->len, where,
			 "truncate to U64_MAX");
	iov_iter_truncate(&iter, (u64)g->len + 1);
	dmatok_assert_at(test, &iter, &token, g->off, 0, g->len, where,
			 "truncate to len+1");
	iov_iter_truncate(&iter, g->len);
	dmatok_assert_at(test, &iter, &token, g->off, 0, g->len, where,
			 "truncate to len");

	iov_iter_truncate(&iter, t);
	dmatok_assert_at(test, &iter, &token, g->off, 0, t, where,
			 "truncate to len/2");
	iov_iter_advance(&iter, g->len);
	dmatok_assert_at(test, &iter, &token, g->off, t, 0, where,
			 "advance by len when truncated to len/2");
	iov_iter_reexpand(&iter, g->len - t);
	dmatok_assert_at(test, &iter, &token, g->off, t, g->len - t, where,
			 "reexpand");
	iov_iter_advance(&iter, g->len);
	dmatok_assert_at(test, &iter, &token, g->off, g->len, 0, where,
			 "advance to the end after reexpand");
	iov_iter_revert(&iter, g->len);
	dmatok_assert_at(test, &iter, &token, g->off, 0, g->len, where,
			 "revert to start");

	iov_iter_truncate(&iter, 0);
	dmatok_assert_at(test, &iter, &token, g->off, 0, 0, where,
			 "truncate to 0");
	KUNIT_EXPECT_EQ_MSG(test, iov_iter_alignment(&iter), 0UL,
			    "%s: alignment of an empty iterator", where);
	iov_iter_advance(&iter, 1);
	dmatok_assert_at(test, &iter, &token, g->off, 0, 0, where,
			 "advance when truncated to 0");
	iov_iter_reexpand(&iter, g->len);
	dmatok_assert_at(test, &iter, &token, g->off, 0, g->len, where,
			 "reexpand from 0");
}

/*
 * iov_iter_alignment() is what direct I/O checks against the logical block
 * size and dma alignment.  For a dma-buf range the address that matters is
 * the offset into the dma-buf, so it must be (offset | count), the same as
 * ITER_UBUF over the same numbers, and must not depend on where the token
 * happens to be allocated.
 */
static void dmatok_iter_alignment_test(struct kunit *test)
{
	const struct dmatok_geom *g = test->param_value;
	const size_t positions[] = {
		0, 1, 511, 512, 4096, g->len / 2, g->len - 1, g->len,
	};
	struct dma_token tokens[2] = {};
	struct iov_iter iter, other, ubuf;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(positions); i++) {
		size_t pos = positions[i];
		unsigned long expected;
		size_t left;

		if (pos > g->len)
			continue;
		left = g->len - pos;
		expected = left ? ((unsigned long)g->off + pos) | left : 0;

		iov_iter_dma_token(&iter, ITER_SOURCE, &tokens[0], g->off, g->len);
		iov_iter_advance(&iter, pos);
		iov_iter_dma_token(&other, ITER_SOURCE, &tokens[1], g->off, g->len);
		iov_iter_advance(&other, pos);
		iov_iter_ubuf(&ubuf, ITER_SOURCE, u64_to_user_ptr((u64)g->off), g->len);
		iov_iter_advance(&ubuf, pos);

		KUNIT_ASSERT_EQ_MSG(test, iov_iter_alignment(&ubuf), expected,
				    "off=%u len=%u pos=%zu: ITER_UBUF reference",
				    g->off, g->len, pos);
		KUNIT_EXPECT_EQ_MSG(test, iov_iter_alignment(&iter), expected,
				    "off=%u len=%u pos=%zu: want (offset %llu | count %zu)",
				    g->off, g->len, pos, (u64)g->off + pos, left);
		KUNIT_EXPECT_EQ_MSG(test, iov_iter_alignment(&other),
				    iov_iter_alignment(&iter),
				    "off=%u len=%u pos=%zu: depends on the token's address",
				    g->off, g->len, pos);
		KUNIT_EXPECT_EQ_MSG(test, iov_iter_gap_alignment(&iter), 0UL,
				    "off=%u len=%u pos=%zu", g->off, g->len, pos);
	}
}

enum dmatok_op {
	DMATOK_ADVANCE,
	DMATOK_REVERT,
	DMATOK_TRUNCATE,
	DMATOK_REEXPAND,
	DMATOK_SAVE,
	DMATOK_RESTORE,
	DMATOK_NR_OPS,
};

static const char * const dmatok_op_names[DMATOK_NR_OPS] = {
	[DMATOK_ADVANCE] = "advance",
	[DMATOK_REVERT] = "revert",
	[DMATOK_TRUNCATE] = "truncate",
	[DMATOK_REEXPAND] = "reexpand",
	[DMATOK_SAVE] = "save",
	[DMATOK_RESTORE] = "restore",
};

/*
 * A byte count for an operation on an iterator with @limit bytes in reach:
 * block-size edges, the limit and one past it, or anything up to the limit.
 */
static size_t dmatok_rand_bytes(struct rnd_state *rnd, size_t limit)
{
	static const size_t edges[] = { 0, 1, 511, 512, 4095, 4096 };

	switch (prandom_u32_state(rnd) % 4) {
	case 0:
		return edges[prandom_u32_state(rnd) % ARRAY_SIZE(edges)];
	case 1:
		return limit;
	case 2:
		return limit + 1;
	default:
		/* limit is at most a few MiB, so this cannot overflow */
		return ((u64)prandom_u32_state(rnd) * ((u64)limit + 1)) >> 32;
	}
}

/*
 * The same random sequence of advance, revert, truncate, reexpand, save and
 * restore on ITER_DMA_TOKEN and on ITER_UBUF over the same range (the user
 * pointer is the dma-buf offset) leaves both with the same count and
 * position after every step.  ITER_UBUF is the reference: only valid
 * operations are generated for it (no revert past the start, no reexpand
 * past the end of the range).
 */
static void dmatok_iter_vs_ubuf_test(struct kunit *test)
{
	const struct dmatok_geom *g = test->param_value;
	const u64 seed = DMATOK_DIFF_SEED ^ ((u64)g->off << 32) ^ g->len;
	struct iov_iter_state dma_state, ubuf_state;
	struct dma_token token = {};
	struct iov_iter dma, ubuf;
	struct rnd_state rnd;
	bool saved = false;
	int n;

	prandom_seed_state(&rnd, seed);
	iov_iter_dma_token(&dma, ITER_SOURCE, &token, g->off, g->len);
	iov_iter_ubuf(&ubuf, ITER_SOURCE, u64_to_user_ptr((u64)g->off), g->len);

	for (n = 0; n < DMATOK_DIFF_STEPS; n++) {
		size_t done = ubuf.iov_offset;
		size_t count = iov_iter_count(&ubuf);
		size_t room = g->len - done - count;
		enum dmatok_op op = prandom_u32_state(&rnd) % DMATOK_NR_OPS;
		size_t arg = 0;

		switch (op) {
		case DMATOK_ADVANCE:
			arg = dmatok_rand_bytes(&rnd, count);
			iov_iter_advance(&dma, arg);
			iov_iter_advance(&ubuf, arg);
			break;
		case DMATOK_REVERT:
			arg = min(dmatok_rand_bytes(&rnd, done), done);
			iov_iter_revert(&dma, arg);
			iov_iter_revert(&ubuf, arg);
			break;
		case DMATOK_TRUNCATE:
			arg = dmatok_rand_bytes(&rnd, count);
			iov_iter_truncate(&dma, arg);
			iov_iter_truncate(&ubuf, arg);
			break;
		case DMATOK_REEXPAND:
			arg = count + min(dmatok_rand_bytes(&rnd, room), room);
			iov_iter_reexpand(&dma, arg);
			iov_iter_reexpand(&ubuf, arg);
			break;
		case DMATOK_SAVE:
			iov_iter_save_state(&dma, &dma_state);
			iov_iter_save_state(&ubuf, &ubuf_state);
			saved = true;
			break;
		case DMATOK_RESTORE:
			if (!saved)
				break;
			iov_iter_restore(&dma, &dma_state);
			iov_iter_restore(&ubuf, &ubuf_state);
			break;
		default:
			break;
		}

		KUNIT_ASSERT_TRUE_MSG(test, iov_iter_is_dma_token(&dma),
				      "off=%u len=%u seed=%#llx step %d: %s(%zu)",
				      g->off, g->len, seed, n, dmatok_op_names[op], arg);
		KUNIT_ASSERT_PTR_EQ_MSG(test, dma.dma_token, &token,
					"off=%u len=%u seed=%#llx step %d: %s(%zu)",
					g->off, g->len, seed, n, dmatok_op_names[op], arg);
		KUNIT_ASSERT_EQ_MSG(test, iov_iter_count(&dma), iov_iter_count(&ubuf),
				    "off=%u len=%u seed=%#llx step %d: count after %s(%zu)",
				    g->off, g->len, seed, n, dmatok_op_names[op], arg);
		KUNIT_ASSERT_EQ_MSG(test, dma.iov_offset,
				    (size_t)(uintptr_t)iter_iov_addr(&ubuf),
				    "off=%u len=%u seed=%#llx step %d: position after %s(%zu)",
				    g->off, g->len, seed, n, dmatok_op_names[op], arg);
		KUNIT_ASSERT_EQ_MSG(test, iov_iter_gap_alignment(&dma),
				    iov_iter_gap_alignment(&ubuf),
				    "off=%u len=%u seed=%#llx step %d: gap alignment after %s(%zu)",
				    g->off, g->len, seed, n, dmatok_op_names[op], arg);
	}

	iov_iter_revert(&dma, ubuf.iov_offset);
	iov_iter_reexpand(&dma, g->len);
	dmatok_assert_at(test, &dma, &token, g->off, 0, g->len, "after the sequence",
			 "revert to start and reexpand");
}

static struct kunit_case dmatok_iov_iter_cases[] = {
	KUNIT_CASE_PARAM_WITH_INIT(dmatok_iter_init_test, kunit_array_gen_params,
				   dmatok_geom_init, NULL),
	KUNIT_CASE_PARAM(dmatok_iter_is_dma_token_test, dmatok_iter_kind_gen_params),
	KUNIT_CASE_PARAM_WITH_INIT(dmatok_iter_advance_revert_test, kunit_array_gen_params,
				   dmatok_grid_init, NULL),
	KUNIT_CASE_PARAM_WITH_INIT(dmatok_iter_save_restore_test, kunit_array_gen_params,
				   dmatok_geom_init, NULL),
	KUNIT_CASE_PARAM_WITH_INIT(dmatok_iter_truncate_reexpand_test,
				   kunit_array_gen_params, dmatok_geom_init, NULL),
	KUNIT_CASE_PARAM_WITH_INIT(dmatok_iter_alignment_test, kunit_array_gen_params,
				   dmatok_geom_init, NULL),
	KUNIT_CASE_PARAM_WITH_INIT(dmatok_iter_vs_ubuf_test, kunit_array_gen_params,
				   dmatok_geom_init, NULL),
	{}
};

static struct kunit_suite dmatok_iov_iter_suite = {
	.name = "dmatok_iov_iter",
	.test_cases = dmatok_iov_iter_cases,
};

kunit_test_suite(dmatok_iov_iter_suite);

MODULE_DESCRIPTION("KUnit tests for ITER_DMA_TOKEN iterators");
MODULE_LICENSE("GPL");
