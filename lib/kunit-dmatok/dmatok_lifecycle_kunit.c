// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the lifecycle of blk-mq dma tokens and their mappings,
 * the machinery that lets a block device do I/O straight to a dma-buf
 * (block/blk-mq-dma-token.c of the "dmabuf read/write via io_uring"
 * series).
 *
 * Each case gets a fake blk-mq driver and a dma-buf exported by the test:
 *
 * - the driver implements ->dma_map, ->dma_unmap, ->init_dma_token and
 *   ->clean_dma_token the way nvme-pci does (a dynamic attachment to the
 *   dma-buf whose invalidate callback is blk_mq_dma_map_move_notify()),
 *   counts every call, and can be told to fail ->init_dma_token or
 *   ->dma_map.  Its ->queue_rq holds each request until the case completes
 *   it, with blk_mq_end_request() or blk_mq_end_request_batch().
 * - the exporter hands out a one-page sg_table and counts the mappings
 *   still out; the case invalidates them with dma_buf_invalidate_mappings()
 *   under the reservation lock, as an exporter that moves the buffer would.
 *
 * I/O goes through the real submission path: bios built from an
 * ITER_DMA_TOKEN iterator are submitted to the fake disk, so
 * blk_mq_submit_bio() resolves the token into a map and the request
 * carries it until it is freed.
 *
 * Every map the driver creates gets a generation number (in map->private),
 * so a request can be matched to the map it carries even after an old map
 * has been freed and its memory reused.
 *
 * Nothing waits without a bound: a defect fails the case after
 * DMATOK_LC_TIMEOUT.  A submission that has to wait for an invalidated
 * map runs in a kthread that the teardown can interrupt.  When a case
 * leaves objects that may still call back into the fake driver, the
 * teardown leaks the driver instead of freeing memory still in use.
 */

#include <kunit/device.h>
#include <kunit/static_stub.h>
#include <kunit/test.h>
#include <linux/bio.h>
#include <linux/blk-mq-dma-token.h>
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-fence.h>
#include <linux/dma-resv.h>
#include <linux/dma_token.h>
#include <linux/fs.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/percpu-refcount.h>
#include <linux/scatterlist.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/signal.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/wait.h>

MODULE_IMPORT_NS("DMA_BUF");

/* The dma-buf is one page; each bio reads one sector of it. */
#define DMATOK_LC_BUF_SIZE	PAGE_SIZE
#define DMATOK_LC_NR_SECTORS	(DMATOK_LC_BUF_SIZE >> SECTOR_SHIFT)

#define DMATOK_LC_QUEUE_DEPTH	16
#define DMATOK_LC_NR_INFLIGHT	4
#define DMATOK_LC_NR_REUSE	8
#define DMATOK_LC_MAX_TOKENS	2
/* Maps whose generation is tracked; no case makes more. */
#define DMATOK_LC_MAX_GENS	256

/*
 * The concurrent case: submitter kthreads, and rounds of invalidation; in
 * each round every submitter may submit this many more bios.
 */
#define DMATOK_LC_NR_WORKERS	2
#define DMATOK_LC_ROUNDS	32
#define DMATOK_LC_ROUND_BIOS	8

/* Bound of any wait: covers an RCU grace period and a work item under TCG. */
#define DMATOK_LC_TIMEOUT	(3 * HZ)
/* How long a wrong early signal or unmap is given to show up. */
#define DMATOK_LC_SETTLE_MS	50

struct dmatok_lc_exporter {
	struct page *page;
	/* sg_tables handed out and not yet returned */
	atomic_t mapped;
};

struct dmatok_lc_held {
	struct request *rq;
	unsigned long gen;
};

struct dmatok_lc {
	struct kunit *test;
	struct device *dev;
	struct blk_mq_tag_set set;
	struct gendisk *disk;
	bool set_allocated;
	/* the queue's references before any token took one */
	unsigned int queue_refs;

	struct dma_buf *dmabuf;
	struct dmatok_lc_exporter *exp;
	struct dma_token *tokens[DMATOK_LC_MAX_TOKENS];

	/* fake driver: errors to return, calls made */
	int fail_init;
	int fail_map;
	atomic_t init_calls;
	atomic_t clean_calls;
	atomic_t map_calls;
	atomic_t unmap_calls;
	/* generation of the last map created; a map's is in map->private */
	atomic_t map_gen;
	DECLARE_BITMAP(unmapped_gens, DMATOK_LC_MAX_GENS);
	DECLARE_BITMAP(invalidated_gens, DMATOK_LC_MAX_GENS);
	unsigned int nr_double_unmap;

	/*
	 * The exporter's epoch: bumped by each invalidation, under the
	 * reservation lock; a map's is in map_epoch[gen].  Once the fences
	 * of an invalidation have signalled, the exporter has moved the
	 * buffer: moved_epoch says which maps point to memory gone.
	 */
	unsigned int exp_epoch;
	unsigned int map_epoch[DMATOK_LC_MAX_GENS];
	unsigned int moved_epoch;

	/* requests held by ->queue_rq, oldest first */
	spinlock_t lock;
	struct dmatok_lc_held held[DMATOK_LC_QUEUE_DEPTH];
	unsigned int nr_held;
	unsigned int nr_without_map;
	unsigned int nr_dying_map;

	/* ->queue_rq ends requests at once instead of holding them */
	bool auto_complete;
	unsigned int nr_unmapped_use;
	unsigned int nr_moved_use;

	/* bios ended */
	atomic_t bios_done;
	atomic_t bios_failed;
	blk_status_t last_error;

	/* one bio submitted from a kthread */
	struct task_struct *submitter;
	struct dma_token *submit_token;
	blk_opf_t submit_flags;
	struct completion submitted;

	/*
	 * The release work case: ->clean_dma_token() of hook_token submits
	 * hook_bio, on another token, and releases the map it gets.  Maps
	 * are only compared by address, never dereferenced.
	 */
	struct blk_mq_dma_token *hook_token;
	struct bio *hook_bio;
	void *last_map;
	void *hook_map;
	long hook_wait;
	struct completion hook_done;

	/* the concurrent case's submitters */
	struct task_struct *workers[DMATOK_LC_NR_WORKERS];
	struct dma_token *worker_token;
	unsigned int worker_budget;
	atomic_t workers_done;

	wait_queue_head_t wq;
};

/* --- the exporter */

static struct sg_table *dmatok_lc_map_dma_buf(struct dma_buf_attachment *attach,
					      enum dma_data_direction dir)
{
	struct dmatok_lc_exporter *exp = attach->dmabuf->priv;
	struct sg_table *sgt;

	sgt = kzalloc_obj(*sgt);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	if (sg_alloc_table(sgt, 1, GFP_KERNEL)) {
		kfree(sgt);
		return ERR_PTR(-ENOMEM);
	}
	sg_set_page(sgt->sgl, exp->page, DMATOK_LC_BUF_SIZE, 0);
	/* Nothing does DMA: the physical address stands in for a bus address. */
	sg_dma_address(sgt->sgl) = page_to_phys(exp->page);
	sg_dma_len(sgt->sgl) = DMATOK_LC_BUF_SIZE;
	atomic_inc(&exp->mapped);
	return sgt;
}

static void dmatok_lc_unmap_dma_buf(struct dma_buf_attachment *attach,
				    struct sg_table *sgt,
				    enum dma_data_direction dir)
{
	struct dmatok_lc_exporter *exp = attach->dmabuf->priv;

	atomic_dec(&exp->mapped);
	sg_free_table(sgt);
	kfree(sgt);
}

static void dmatok_lc_release(struct dma_buf *dmabuf)
{
	struct dmatok_lc_exporter *exp = dmabuf->priv;

	__free_page(exp->page);
	kfree(exp);
}

static const struct dma_buf_ops dmatok_lc_dmabuf_ops = {
	.map_dma_buf = dmatok_lc_map_dma_buf,
	.unmap_dma_buf = dmatok_lc_unmap_dma_buf,
	.release = dmatok_lc_release,
};

/* --- the fake blk-mq driver */

static void dmatok_lc_invalidate_mappings(struct dma_buf_attachment *attach)
{
	blk_mq_dma_map_move_notify(attach->importer_priv);
}

static const struct dma_buf_attach_ops dmatok_lc_importer_ops = {
	.invalidate_mappings = dmatok_lc_invalidate_mappings,
	.allow_peer2peer = true,
};

static unsigned long dmatok_lc_map_gen(struct blk_mq_dma_map *map)
{
	return (unsigned long)map->private;
}

static int dmatok_lc_init_dma_token(struct request_queue *q,
				    struct blk_mq_dma_token *token)
{
	struct dmatok_lc *lc = q->queuedata;
	struct dma_buf_attachment *attach;
	int ret = READ_ONCE(lc->fail_init);

	atomic_inc(&lc->init_calls);
	if (!ret) {
		attach = dma_buf_dynamic_attach(token->dmabuf, lc->dev,
						&dmatok_lc_importer_ops, token);
		if (IS_ERR(attach))
			ret = PTR_ERR(attach);
		else
			token->private = attach;
	}
	wake_up_all(&lc->wq);
	return ret;
}

static void dmatok_lc_release_work_hook(struct dmatok_lc *lc);

static void dmatok_lc_clean_dma_token(struct request_queue *q,
				      struct blk_mq_dma_token *token)
{
	struct dmatok_lc *lc = q->queuedata;

	if (token == READ_ONCE(lc->hook_token))
		dmatok_lc_release_work_hook(lc);
	dma_buf_detach(token->dmabuf, token->private);
	atomic_inc(&lc->clean_calls);
	wake_up_all(&lc->wq);
}

/* Called with the dma-buf's reservation lock held. */
static int dmatok_lc_dma_map(struct request_queue *q, struct blk_mq_dma_map *map)
{
	struct dmatok_lc *lc = q->queuedata;
	struct blk_mq_dma_token *token = map->token;
	int ret = READ_ONCE(lc->fail_map);
	struct sg_table *sgt;

	atomic_inc(&lc->map_calls);
	if (!ret) {
		sgt = dma_buf_map_attachment(token->private, token->dir);
		if (IS_ERR(sgt)) {
			ret = PTR_ERR(sgt);
		} else {
			unsigned long gen = atomic_inc_return(&lc->map_gen);

			map->sgt = sgt;
			map->private = (void *)gen;
			WRITE_ONCE(lc->last_map, map);
			if (gen < DMATOK_LC_MAX_GENS)
				lc->map_epoch[gen] = lc->exp_epoch;
		}
	}
	wake_up_all(&lc->wq);
	return ret;
}

/* Called from a work item once the map's last reference is gone. */
static void dmatok_lc_dma_unmap(struct request_queue *q, struct blk_mq_dma_map *map)
{
	struct dmatok_lc *lc = q->queuedata;
	struct blk_mq_dma_token *token = map->token;
	unsigned long gen = dmatok_lc_map_gen(map);

	dma_buf_unmap_attachment_unlocked(token->private, map->sgt, token->dir);
	map->sgt = NULL;
	map->private = NULL;
	if (gen < DMATOK_LC_MAX_GENS && test_and_set_bit(gen, lc->unmapped_gens)) {
		spin_lock(&lc->lock);
		lc->nr_double_unmap++;
		spin_unlock(&lc->lock);
	}
	atomic_inc(&lc->unmap_calls);
	wake_up_all(&lc->wq);
}

static blk_status_t dmatok_lc_queue_rq(struct blk_mq_hw_ctx *hctx,
				       const struct blk_mq_queue_data *bd)
{
	struct dmatok_lc *lc = hctx->queue->queuedata;
	struct request *rq = bd->rq;
	unsigned long gen = 0;

	blk_mq_start_request(rq);
	if (rq->dma_map)
		gen = dmatok_lc_map_gen(rq->dma_map);

	spin_lock(&lc->lock);
	if (lc->auto_complete) {
		if (!rq->dma_map)
			lc->nr_without_map++;
		else if (gen >= DMATOK_LC_MAX_GENS || test_bit(gen, lc->unmapped_gens))
			lc->nr_unmapped_use++;
		else if (lc->map_epoch[gen] < READ_ONCE(lc->moved_epoch))
			lc->nr_moved_use++;
		spin_unlock(&lc->lock);
		blk_mq_end_request(rq, BLK_STS_OK);
		return BLK_STS_OK;
	}
	if (WARN_ON_ONCE(lc->nr_held == ARRAY_SIZE(lc->held))) {
		spin_unlock(&lc->lock);
		return BLK_STS_IOERR;
	}
	if (!rq->dma_map)
		lc->nr_without_map++;
	else if (gen < DMATOK_LC_MAX_GENS &&
		 (test_bit(gen, lc->invalidated_gens) ||
		  test_bit(gen, lc->unmapped_gens)))
		lc->nr_dying_map++;
	lc->held[lc->nr_held].rq = rq;
	lc->held[lc->nr_held].gen = gen;
	lc->nr_held++;
	spin_unlock(&lc->lock);

	wake_up_all(&lc->wq);
	return BLK_STS_OK;
}

static const struct blk_mq_ops dmatok_lc_mq_ops = {
	.queue_rq = dmatok_lc_queue_rq,
	.dma_map = dmatok_lc_dma_map,
	.dma_unmap = dmatok_lc_dma_unmap,
	.init_dma_token = dmatok_lc_init_dma_token,
	.clean_dma_token = dmatok_lc_clean_dma_token,
};

/* --- helpers for the cases */

static unsigned int dmatok_lc_nr_held(struct dmatok_lc *lc)
{
	unsigned int nr;

	spin_lock(&lc->lock);
	nr = lc->nr_held;
	spin_unlock(&lc->lock);
	return nr;
}

/* The generation of the map the @i-th oldest held request carries. */
static unsigned long dmatok_lc_held_gen(struct dmatok_lc *lc, unsigned int i)
{
	unsigned long gen = 0;

	spin_lock(&lc->lock);
	if (i < lc->nr_held)
		gen = lc->held[i].gen;
	spin_unlock(&lc->lock);
	return gen;
}

/*
 * End the @nr oldest held requests, one by one with blk_mq_end_request() or
 * all at once with blk_mq_end_request_batch(), as a driver's completion
 * path would.  Returns how many there were.
 */
static unsigned int dmatok_lc_complete(struct dmatok_lc *lc, unsigned int nr,
				       bool batch)
{
	struct request *rqs[DMATOK_LC_QUEUE_DEPTH];
	DEFINE_IO_COMP_BATCH(iob);
	unsigned int i;

	spin_lock(&lc->lock);
	nr = min(nr, lc->nr_held);
	for (i = 0; i < nr; i++)
		rqs[i] = lc->held[i].rq;
	lc->nr_held -= nr;
	memmove(lc->held, lc->held + nr, lc->nr_held * sizeof(lc->held[0]));
	spin_unlock(&lc->lock);

	for (i = 0; i < nr; i++) {
		if (batch)
			rq_list_add_tail(&iob.req_list, rqs[i]);
		else
			blk_mq_end_request(rqs[i], BLK_STS_OK);
	}
	if (batch && nr)
		blk_mq_end_request_batch(&iob);
	return nr;
}

static void dmatok_lc_end_io(struct bio *bio)
{
	struct dmatok_lc *lc = bio->bi_private;

	if (bio->bi_status) {
		WRITE_ONCE(lc->last_error, bio->bi_status);
		atomic_inc(&lc->bios_failed);
	}
	atomic_inc(&lc->bios_done);
	bio_put(bio);
	wake_up_all(&lc->wq);
}

/* A one-sector read of @sector into the dma-buf behind @token. */
static struct bio *dmatok_lc_alloc_bio(struct dmatok_lc *lc,
				       struct dma_token *token,
				       sector_t sector, blk_opf_t flags)
{
	struct iov_iter iter;
	struct bio *bio;

	bio = bio_alloc(lc->disk->part0, 0, REQ_OP_READ | flags, GFP_KERNEL);
	iov_iter_dma_token(&iter, ITER_DEST, token, sector << SECTOR_SHIFT,
			   SECTOR_SIZE);
	bio->bi_iter.bi_sector = sector;
	bio_iov_dma_token_set(bio, &iter);
	bio->bi_end_io = dmatok_lc_end_io;
	bio->bi_private = lc;
	return bio;
}

/* Submit @nr one-sector reads into the dma-buf behind @token. */
static void dmatok_lc_submit(struct dmatok_lc *lc, struct dma_token *token,
			     unsigned int nr, blk_opf_t flags)
{
	unsigned int i;

	for (i = 0; i < nr; i++)
		submit_bio(dmatok_lc_alloc_bio(lc, token, i % DMATOK_LC_NR_SECTORS,
					       flags));
}

static int dmatok_lc_submitter_fn(void *data)
{
	struct dmatok_lc *lc = data;

	/* Lets the teardown interrupt a wait for an old map's fence. */
	allow_signal(SIGKILL);
	dmatok_lc_submit(lc, lc->submit_token, 1, lc->submit_flags);
	complete(&lc->submitted);
	return 0;
}

/*
 * Submit one bio with @flags from a kthread: the submission may have to
 * wait, or wrongly wait, and the case must go on.
 */
static void dmatok_lc_submit_async(struct kunit *test, struct dmatok_lc *lc,
				   struct dma_token *token, blk_opf_t flags)
{
	struct task_struct *task;

	KUNIT_ASSERT_NULL(test, lc->submitter);
	lc->submit_token = token;
	lc->submit_flags = flags;
	reinit_completion(&lc->submitted);
	task = kthread_create(dmatok_lc_submitter_fn, lc, "dmatok-lc-submit");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, task);
	get_task_struct(task);
	lc->submitter = task;
	wake_up_process(task);
}

/* Wait for the submitter to return, interrupting it if @kill. */
static bool dmatok_lc_submitter_done(struct dmatok_lc *lc, bool kill)
{
	unsigned long end = jiffies + DMATOK_LC_TIMEOUT;
	bool done;

	if (!lc->submitter)
		return true;
	do {
		if (kill)
			send_sig(SIGKILL, lc->submitter, 1);
		done = wait_for_completion_timeout(&lc->submitted, HZ / 10);
	} while (!done && time_before(jiffies, end));
	if (done) {
		put_task_struct(lc->submitter);
		lc->submitter = NULL;
	}
	return done;
}

static int dmatok_lc_worker_fn(void *data)
{
	struct dmatok_lc *lc = data;
	unsigned int i;

	/* Lets the teardown stop a submitter stuck on a map's fence. */
	allow_signal(SIGKILL);
	for (i = 0; i < DMATOK_LC_ROUNDS * DMATOK_LC_ROUND_BIOS; i++) {
		if (wait_event_killable(lc->wq, i < READ_ONCE(lc->worker_budget)))
			break;
		dmatok_lc_submit(lc, lc->worker_token, 1, 0);
	}
	atomic_inc(&lc->workers_done);
	wake_up_all(&lc->wq);
	return 0;
}

static unsigned int dmatok_lc_nr_workers(struct dmatok_lc *lc)
{
	unsigned int i, nr = 0;

	for (i = 0; i < ARRAY_SIZE(lc->workers); i++)
		nr += !!lc->workers[i];
	return nr;
}

/*
 * Wait for the submitter kthreads to return, interrupting them if @kill;
 * forget them once they have.
 */
static bool dmatok_lc_workers_done(struct dmatok_lc *lc, bool kill)
{
	unsigned long end = jiffies + DMATOK_LC_TIMEOUT;
	unsigned int i, nr = dmatok_lc_nr_workers(lc);
	bool done;

	if (!nr)
		return true;
	do {
		for (i = 0; kill && i < ARRAY_SIZE(lc->workers); i++)
			if (lc->workers[i])
				send_sig(SIGKILL, lc->workers[i], 1);
		done = wait_event_timeout(lc->wq, atomic_read(&lc->workers_done) == nr,
					  HZ / 10);
	} while (!done && time_before(jiffies, end));
	if (!done)
		return false;
	/* A worker wakes lc->wq after it counts itself done: let it return. */
	for (i = 0; i < ARRAY_SIZE(lc->workers); i++) {
		if (lc->workers[i])
			kthread_stop_put(lc->workers[i]);
		lc->workers[i] = NULL;
	}
	return true;
}

/* Wait until @counter reaches @expected; returns its value. */
static int dmatok_lc_wait_count(struct dmatok_lc *lc, atomic_t *counter,
				int expected)
{
	wait_event_timeout(lc->wq, atomic_read(counter) >= expected,
			   DMATOK_LC_TIMEOUT);
	return atomic_read(counter);
}

static unsigned int dmatok_lc_wait_held(struct dmatok_lc *lc, unsigned int expected)
{
	wait_event_timeout(lc->wq, dmatok_lc_nr_held(lc) >= expected,
			   DMATOK_LC_TIMEOUT);
	return dmatok_lc_nr_held(lc);
}

/*
 * Runs in ->clean_dma_token() of lc->hook_token, in the release work of
 * that token's last map, before the driver detaches: the other token's
 * request gets a new map, which is invalidated and released while this
 * work still runs, and the exporter waits for its fence.
 */
static void dmatok_lc_release_work_hook(struct dmatok_lc *lc)
{
	struct dma_resv *resv = lc->dmabuf->resv;
	struct bio *bio;
	long ret = 0;

	WRITE_ONCE(lc->hook_token, NULL);
	bio = xchg(&lc->hook_bio, NULL);
	if (!bio)	/* the teardown took it back: too late */
		goto out;
	submit_bio(bio);
	if (dmatok_lc_wait_held(lc, 1) == 1) {
		lc->hook_map = READ_ONCE(lc->last_map);
		dma_resv_lock(resv, NULL);
		dma_buf_invalidate_mappings(lc->dmabuf);
		dma_resv_unlock(resv);
		dmatok_lc_complete(lc, 1, false);
		ret = dma_resv_wait_timeout(resv, DMA_RESV_USAGE_KERNEL, false,
					    DMATOK_LC_TIMEOUT);
	}
out:
	lc->hook_wait = ret;
	complete(&lc->hook_done);
}

static unsigned int dmatok_lc_queue_refs(struct dmatok_lc *lc)
{
	return refcount_read(&lc->disk->queue->refs);
}

static long dmatok_lc_dmabuf_refs(struct dmatok_lc *lc)
{
	return file_count(lc->dmabuf->file);
}

/*
 * References are dropped after the driver's last callback, some of them
 * from a work item: poll until both counts are back to @dmabuf_refs and
 * @queue_refs.
 */
static bool dmatok_lc_refs_settle(struct dmatok_lc *lc, long dmabuf_refs,
				  unsigned int queue_refs)
{
	unsigned long end = jiffies + DMATOK_LC_TIMEOUT;

	for (;;) {
		if (dmatok_lc_dmabuf_refs(lc) == dmabuf_refs &&
		    dmatok_lc_queue_refs(lc) == queue_refs)
			return true;
		if (!time_before(jiffies, end))
			return false;
		usleep_range(2000, 5000);
	}
}

static struct dma_token *dmatok_lc_create(struct dmatok_lc *lc)
{
	struct dma_token_params params = {
		.dmabuf = lc->dmabuf,
		.dir = DMA_FROM_DEVICE,
	};

	return blk_mq_dma_map(lc->disk->queue, &params);
}

/* Create a token the teardown releases if the case does not. */
static struct dma_token *dmatok_lc_create_token(struct kunit *test,
						struct dmatok_lc *lc)
{
	struct dma_token *token;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lc->tokens); i++)
		if (!lc->tokens[i])
			break;
	KUNIT_ASSERT_LT(test, i, ARRAY_SIZE(lc->tokens));

	token = dmatok_lc_create(lc);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, token);
	lc->tokens[i] = token;
	return token;
}

static void dmatok_lc_release_token(struct dmatok_lc *lc, struct dma_token *token)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lc->tokens); i++)
		if (lc->tokens[i] == token)
			lc->tokens[i] = NULL;
	dma_token_release(token);
}

static void dmatok_lc_put_fence(void *fence)
{
	dma_fence_put(fence);
}

/*
 * What the exporter does before it moves the buffer.  Returns the fence
 * of @token's context found in the reservation object right after the
 * invalidation, under the same lock, and in @nr how many there are: the
 * unlocked accessors skip signalled fences, and the fence of an idle map
 * may already have signalled.  The fence is dropped when the case ends.
 */
static struct dma_fence *dmatok_lc_invalidate(struct kunit *test,
					      struct dmatok_lc *lc,
					      struct dma_token *token,
					      unsigned int *nr)
{
	struct blk_mq_dma_token *blk_token = dma_token_to_blk_mq(token);
	u64 context = blk_token->fence_ctx;
	struct dma_resv *resv = lc->dmabuf->resv;
	struct dma_fence *fence, *found = NULL;
	struct blk_mq_dma_map *published;
	struct dma_resv_iter cursor;
	unsigned long gen;
	int ret;

	*nr = 0;
	dma_resv_lock(resv, NULL);
	dma_buf_invalidate_mappings(lc->dmabuf);
	published = rcu_dereference_protected(blk_token->map, dma_resv_held(resv));
	/* maps are created under this lock: the last one is the one invalidated */
	gen = atomic_read(&lc->map_gen);
	if (gen && gen < DMATOK_LC_MAX_GENS)
		set_bit(gen, lc->invalidated_gens);
	dma_resv_for_each_fence(&cursor, resv, DMA_RESV_USAGE_KERNEL, fence) {
		if (fence->context != context)
			continue;
		(*nr)++;
		dma_fence_put(found);
		found = dma_fence_get(fence);
	}
	dma_resv_unlock(resv);

	/* a later lookup or invalidation would find a dead, then freed, map */
	KUNIT_EXPECT_NULL_MSG(test, published, "map still published after the invalidation");
	if (found) {
		ret = kunit_add_action_or_reset(test, dmatok_lc_put_fence, found);
		KUNIT_ASSERT_EQ(test, ret, 0);
	}
	return found;
}

/*
 * What an exporter that moves the buffer does: invalidate the mappings
 * under the reservation lock, wait for the fences the importers published,
 * then move.  The move is bookkeeping only: from then on, a request on a
 * map of an earlier epoch would reach memory that is gone.
 */
static long dmatok_lc_invalidate_and_move(struct dmatok_lc *lc)
{
	struct dma_resv *resv = lc->dmabuf->resv;
	unsigned int epoch;
	long ret;

	dma_resv_lock(resv, NULL);
	dma_buf_invalidate_mappings(lc->dmabuf);
	epoch = ++lc->exp_epoch;
	dma_resv_unlock(resv);

	ret = dma_resv_wait_timeout(resv, DMA_RESV_USAGE_KERNEL, false,
				    DMATOK_LC_TIMEOUT);
	if (ret <= 0)
		return ret ?: -ETIMEDOUT;
	WRITE_ONCE(lc->moved_epoch, epoch);
	return 0;
}

static const char *dmatok_lc_fence_name(struct dma_fence *fence)
{
	return "dmatok-lc-exporter";
}

static const struct dma_fence_ops dmatok_lc_fence_ops = {
	.get_driver_name = dmatok_lc_fence_name,
	.get_timeline_name = dmatok_lc_fence_name,
};

static void dmatok_lc_signal_put_fence(void *fence)
{
	dma_fence_signal(fence);
	dma_fence_put(fence);
}

/*
 * A fence of the exporter's, as for a move of the buffer, added to the
 * reservation object for kernel usage.  Signalled and dropped when the
 * case ends if the case does not signal it.
 */
static struct dma_fence *dmatok_lc_add_exporter_fence(struct kunit *test,
						      struct dmatok_lc *lc)
{
	struct dma_fence *fence;
	int ret;

	fence = kzalloc_obj(*fence);
	KUNIT_ASSERT_NOT_NULL(test, fence);
	/* its own lock: the fence may outlive the case in the dma-buf */
	dma_fence_init(fence, &dmatok_lc_fence_ops, NULL,
		       dma_fence_context_alloc(1), 1);
	ret = kunit_add_action_or_reset(test, dmatok_lc_signal_put_fence, fence);
	KUNIT_ASSERT_EQ(test, ret, 0);

	dma_resv_lock(lc->dmabuf->resv, NULL);
	ret = dma_resv_reserve_fences(lc->dmabuf->resv, 1);
	if (!ret)
		dma_resv_add_fence(lc->dmabuf->resv, fence, DMA_RESV_USAGE_KERNEL);
	dma_resv_unlock(lc->dmabuf->resv);
	KUNIT_ASSERT_EQ(test, ret, 0);
	return fence;
}

/* --- fixture */

static bool dmatok_lc_quiet(struct dmatok_lc *lc)
{
	int maps = atomic_read(&lc->map_gen);

	/*
	 * The work item that frees a token's last map calls back into the
	 * driver, wakes lc->wq, and only then drops the token's queue
	 * reference: until that is back, the work item may still touch lc.
	 */
	return atomic_read(&lc->unmap_calls) == maps &&
	       atomic_read(&lc->clean_calls) == atomic_read(&lc->init_calls) -
						(lc->fail_init ? 1 : 0) &&
	       dmatok_lc_queue_refs(lc) == lc->queue_refs;
}

/*
 * Runs when the case ends, passed or not: stop the submitter, end held
 * requests, release tokens, then free the disk, the tag set and the
 * dma-buf, unless a map or token is still alive: it could call back into
 * the driver, so everything is leaked instead (the case has failed).
 */
static void dmatok_lc_teardown(void *data)
{
	struct dmatok_lc *lc = data;
	struct bio *hook_bio;
	unsigned long end;
	unsigned int i;

	/* the release work case never ran its hook: keep it from running */
	WRITE_ONCE(lc->hook_token, NULL);
	hook_bio = xchg(&lc->hook_bio, NULL);
	if (hook_bio)
		bio_put(hook_bio);
	if (!dmatok_lc_submitter_done(lc, true) || !dmatok_lc_workers_done(lc, true)) {
		kunit_err(lc->test, "submitter stuck: leaking the fake disk\n");
		return;
	}
	if (lc->disk) {
		dmatok_lc_complete(lc, UINT_MAX, false);
		for (i = 0; i < ARRAY_SIZE(lc->tokens); i++)
			if (lc->tokens[i])
				dmatok_lc_release_token(lc, lc->tokens[i]);

		end = jiffies + DMATOK_LC_TIMEOUT;
		while (!dmatok_lc_quiet(lc) && time_before(jiffies, end))
			usleep_range(2000, 5000);
		if (!dmatok_lc_quiet(lc) || dmatok_lc_nr_held(lc)) {
			kunit_err(lc->test, "maps or tokens still alive: leaking the fake disk\n");
			return;
		}
		put_disk(lc->disk);
	}
	if (lc->set_allocated)
		blk_mq_free_tag_set(&lc->set);
	if (lc->dmabuf)
		dma_buf_put(lc->dmabuf);
	kfree(lc);
}

static int dmatok_lc_export(struct dmatok_lc *lc)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	struct dmatok_lc_exporter *exp;
	struct dma_buf *dmabuf;

	exp = kzalloc_obj(*exp);
	if (!exp)
		return -ENOMEM;
	exp->page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!exp->page) {
		kfree(exp);
		return -ENOMEM;
	}

	exp_info.ops = &dmatok_lc_dmabuf_ops;
	exp_info.size = DMATOK_LC_BUF_SIZE;
	exp_info.flags = O_RDWR;
	exp_info.priv = exp;
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		__free_page(exp->page);
		kfree(exp);
		return PTR_ERR(dmabuf);
	}
	lc->dmabuf = dmabuf;
	lc->exp = exp;
	return 0;
}

static int dmatok_lc_init(struct kunit *test)
{
	struct gendisk *disk;
	struct dmatok_lc *lc;
	struct device *dev;
	int ret;

	dev = kunit_device_register(test, "dmatok-lifecycle");
	if (IS_ERR(dev))
		return PTR_ERR(dev);

	/* Not test-managed: freed by the teardown only once nothing can use it. */
	lc = kzalloc_obj(*lc);
	if (!lc)
		return -ENOMEM;
	lc->test = test;
	lc->dev = dev;
	spin_lock_init(&lc->lock);
	init_waitqueue_head(&lc->wq);
	init_completion(&lc->submitted);
	init_completion(&lc->hook_done);
	ret = kunit_add_action_or_reset(test, dmatok_lc_teardown, lc);
	if (ret)
		return ret;

	ret = dmatok_lc_export(lc);
	if (ret)
		return ret;

	lc->set.ops = &dmatok_lc_mq_ops;
	lc->set.nr_hw_queues = 1;
	lc->set.queue_depth = DMATOK_LC_QUEUE_DEPTH;
	lc->set.numa_node = NUMA_NO_NODE;
	ret = blk_mq_alloc_tag_set(&lc->set);
	if (ret)
		return ret;
	lc->set_allocated = true;

	/* Never added: I/O before add_disk() is allowed, and put_disk() undoes it all. */
	disk = blk_mq_alloc_disk(&lc->set, NULL, lc);
	if (IS_ERR(disk))
		return PTR_ERR(disk);
	set_capacity(disk, DMATOK_LC_NR_SECTORS);
	lc->disk = disk;
	lc->queue_refs = dmatok_lc_queue_refs(lc);

	test->priv = lc;
	return 0;
}

/* --- the cases */

/*
 * Creating a token attaches the driver (->init_dma_token) and takes a
 * reference on the dma-buf and on the queue, maps nothing; releasing it
 * gives all of that back.
 */
static void dmatok_lc_create_release_test(struct kunit *test)
{
	struct dmatok_lc *lc = test->priv;
	long dmabuf_refs = dmatok_lc_dmabuf_refs(lc);
	unsigned int queue_refs = dmatok_lc_queue_refs(lc);
	struct dma_token *token;

	token = dmatok_lc_create(lc);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, token);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->init_calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->clean_calls), 0);
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&lc->map_calls), 0,
			    "mapped at creation, before any I/O");
	KUNIT_EXPECT_EQ(test, dmatok_lc_dmabuf_refs(lc), dmabuf_refs + 1);
	KUNIT_EXPECT_EQ(test, dmatok_lc_queue_refs(lc), queue_refs + 1);
	KUNIT_EXPECT_PTR_EQ(test, dma_token_to_blk_mq(token)->q, lc->disk->queue);

	dma_token_release(token);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->clean_calls, 1), 1);
	dmatok_lc_refs_settle(lc, dmabuf_refs, queue_refs);
	KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_dmabuf_refs(lc), dmabuf_refs,
			    "dma-buf reference not dropped by the release");
	KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_queue_refs(lc), queue_refs,
			    "queue reference not dropped by the release");
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->init_calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->map_calls), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->unmap_calls), 0);
}

/*
 * No map before the first blocking request (a REQ_NOWAIT one gets
 * BLK_STS_AGAIN instead of waiting for one); then one map, made once and
 * carried by every request until the token goes away.
 */
static void dmatok_lc_map_lazy_reuse_test(struct kunit *test)
{
	struct dmatok_lc *lc = test->priv;
	long dmabuf_refs = dmatok_lc_dmabuf_refs(lc);
	unsigned int queue_refs = dmatok_lc_queue_refs(lc);
	struct dma_token *token;
	unsigned int i, round;

	token = dmatok_lc_create_token(test, lc);

	dmatok_lc_submit(lc, token, 1, REQ_NOWAIT);
	KUNIT_ASSERT_EQ(test, dmatok_lc_wait_count(lc, &lc->bios_done, 1), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->bios_failed), 1);
	KUNIT_EXPECT_EQ(test, lc->last_error, BLK_STS_AGAIN);
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&lc->map_calls), 0,
			    "REQ_NOWAIT request created a map");
	KUNIT_EXPECT_EQ(test, dmatok_lc_nr_held(lc), 0U);
	atomic_set(&lc->bios_failed, 0);

	for (round = 1; round <= 2; round++) {
		dmatok_lc_submit(lc, token, DMATOK_LC_NR_REUSE, 0);
		KUNIT_ASSERT_EQ(test, dmatok_lc_wait_held(lc, DMATOK_LC_NR_REUSE),
				DMATOK_LC_NR_REUSE);
		KUNIT_EXPECT_EQ_MSG(test, atomic_read(&lc->map_calls), 1,
				    "round %u: ->dma_map calls", round);
		for (i = 0; i < DMATOK_LC_NR_REUSE; i++)
			KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_held_gen(lc, i), 1UL,
					    "round %u request %u: not on the first map",
					    round, i);
		KUNIT_EXPECT_EQ(test, lc->nr_without_map, 0U);
		KUNIT_EXPECT_EQ(test, atomic_read(&lc->exp->mapped), 1);
		dmatok_lc_complete(lc, DMATOK_LC_NR_REUSE, false);
	}
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->bios_done,
						   1 + 2 * DMATOK_LC_NR_REUSE),
			1 + 2 * DMATOK_LC_NR_REUSE);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->bios_failed), 0);
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&lc->unmap_calls), 0,
			    "map dropped while the token is alive");

	dmatok_lc_release_token(lc, token);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->unmap_calls, 1), 1);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->clean_calls, 1), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->exp->mapped), 0);
	KUNIT_EXPECT_TRUE_MSG(test, dmatok_lc_refs_settle(lc, dmabuf_refs, queue_refs),
			      "dma-buf refs %ld (want %ld), queue refs %u (want %u)",
			      dmatok_lc_dmabuf_refs(lc), dmabuf_refs,
			      dmatok_lc_queue_refs(lc), queue_refs);
}

/*
 * Invalidation with no I/O in flight: with no map, nothing happens; with
 * an idle map, one fence is published in the reservation object, signals
 * at once and the map is unmapped once.  The next request makes a new map.
 */
static void dmatok_lc_invalidate_idle_test(struct kunit *test)
{
	struct dmatok_lc *lc = test->priv;
	struct dma_token *token;
	struct dma_fence *fence;
	unsigned int nr;

	token = dmatok_lc_create_token(test, lc);

	fence = dmatok_lc_invalidate(test, lc, token, &nr);
	KUNIT_ASSERT_EQ_MSG(test, nr, 0U, "fence published with no map");

	dmatok_lc_submit(lc, token, 1, 0);
	KUNIT_ASSERT_EQ(test, dmatok_lc_wait_held(lc, 1), 1U);
	dmatok_lc_complete(lc, 1, false);
	KUNIT_ASSERT_EQ(test, atomic_read(&lc->map_calls), 1);

	fence = dmatok_lc_invalidate(test, lc, token, &nr);
	KUNIT_ASSERT_EQ_MSG(test, nr, 1U, "fences published by the invalidation");
	/* asserted: the next map would wait for this fence without a bound */
	KUNIT_ASSERT_GT_MSG(test, dma_fence_wait_timeout(fence, false, DMATOK_LC_TIMEOUT),
			    0L, "fence of an idle map not signalled");
	KUNIT_EXPECT_EQ(test, fence->error, 0);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->unmap_calls, 1), 1);
	msleep(DMATOK_LC_SETTLE_MS);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->unmap_calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->exp->mapped), 0);
	KUNIT_EXPECT_TRUE(test, test_bit(1, lc->unmapped_gens));

	dmatok_lc_submit(lc, token, 1, 0);
	KUNIT_ASSERT_EQ(test, dmatok_lc_wait_held(lc, 1), 1U);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->map_calls), 2);
	KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_held_gen(lc, 0), 2UL,
			    "request after the invalidation not on a new map");
	KUNIT_EXPECT_EQ(test, lc->nr_dying_map, 0U);
	dmatok_lc_complete(lc, 1, false);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->bios_done, 2), 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->bios_failed), 0);

	dmatok_lc_release_token(lc, token);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->unmap_calls, 2), 2);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->clean_calls, 1), 1);
}

struct dmatok_lc_completion {
	const char *name;
	bool batch;
};

static const struct dmatok_lc_completion dmatok_lc_completions[] = {
	{ "blk_mq_end_request", false },
	{ "blk_mq_end_request_batch", true },
};

static void dmatok_lc_completion_desc(const struct dmatok_lc_completion *c,
				      char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(dmatok_lc_completion, dmatok_lc_completions,
		  dmatok_lc_completion_desc);

/*
 * Invalidation with requests in flight: the fence stays unsignalled and
 * the map mapped until the last request on it completes, then it signals
 * and the map is unmapped.  A request submitted after the invalidation
 * never gets the dying map: a REQ_NOWAIT one fails with BLK_STS_AGAIN, a
 * blocking one gets a new map.
 */
static void dmatok_lc_invalidate_inflight_test(struct kunit *test)
{
	const struct dmatok_lc_completion *c = test->param_value;
	const unsigned int n = DMATOK_LC_NR_INFLIGHT;
	struct dmatok_lc *lc = test->priv;
	struct dma_token *token;
	struct dma_fence *fence;
	unsigned int i, nr;

	token = dmatok_lc_create_token(test, lc);
	dmatok_lc_submit(lc, token, n, 0);
	KUNIT_ASSERT_EQ(test, dmatok_lc_wait_held(lc, n), n);
	KUNIT_ASSERT_EQ(test, atomic_read(&lc->map_calls), 1);
	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test, dmatok_lc_held_gen(lc, i), 1UL);

	fence = dmatok_lc_invalidate(test, lc, token, &nr);
	KUNIT_ASSERT_EQ_MSG(test, nr, 1U, "fences published by the invalidation");

	/* from a kthread: if it waits for the dying map, the case goes on */
	dmatok_lc_submit_async(test, lc, token, REQ_NOWAIT);
	KUNIT_ASSERT_TRUE_MSG(test, dmatok_lc_submitter_done(lc, false),
			      "REQ_NOWAIT submission waits for the dying map");
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->bios_done, 1), 1);
	KUNIT_EXPECT_EQ(test, lc->last_error, BLK_STS_AGAIN);
	atomic_set(&lc->bios_failed, 0);

	dmatok_lc_submit_async(test, lc, token, 0);

	msleep(DMATOK_LC_SETTLE_MS);
	KUNIT_EXPECT_FALSE_MSG(test, dma_fence_is_signaled(fence),
			       "signalled with %u requests in flight", n);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->unmap_calls), 0);

	KUNIT_EXPECT_EQ(test, dmatok_lc_complete(lc, n - 1, c->batch), n - 1);
	msleep(DMATOK_LC_SETTLE_MS);
	KUNIT_EXPECT_FALSE_MSG(test, dma_fence_is_signaled(fence),
			       "signalled with 1 request in flight");
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&lc->unmap_calls), 0,
			    "unmapped with 1 request in flight");
	KUNIT_EXPECT_FALSE(test, test_bit(1, lc->unmapped_gens));

	KUNIT_EXPECT_EQ(test, dmatok_lc_complete(lc, 1, c->batch), 1U);
	KUNIT_ASSERT_GT_MSG(test, dma_fence_wait_timeout(fence, false, DMATOK_LC_TIMEOUT),
			    0L, "not signalled after the last request completed (%s)",
			    c->name);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->unmap_calls, 1), 1);
	KUNIT_EXPECT_TRUE(test, test_bit(1, lc->unmapped_gens));

	/* the kthread's request, on a new map */
	KUNIT_ASSERT_TRUE_MSG(test, dmatok_lc_submitter_done(lc, false),
			      "submission after the invalidation still blocked");
	KUNIT_ASSERT_EQ(test, dmatok_lc_wait_held(lc, 1), 1U);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->map_calls), 2);
	KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_held_gen(lc, 0), 2UL,
			    "request after the invalidation not on a new map");
	KUNIT_EXPECT_EQ(test, lc->nr_dying_map, 0U);
	KUNIT_EXPECT_EQ(test, lc->nr_without_map, 0U);
	dmatok_lc_complete(lc, 1, c->batch);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->bios_done, n + 2), n + 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->bios_failed), 0);

	dmatok_lc_release_token(lc, token);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->unmap_calls, 2), 2);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->clean_calls, 1), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->exp->mapped), 0);
}

/*
 * A map is only made once the exporter's kernel fences (a move of the
 * buffer) have signalled: until then the request waits and the driver is
 * not asked to map.
 */
static void dmatok_lc_map_waits_for_exporter_test(struct kunit *test)
{
	struct dmatok_lc *lc = test->priv;
	struct dma_token *token;
	struct dma_fence *fence;

	token = dmatok_lc_create_token(test, lc);
	fence = dmatok_lc_add_exporter_fence(test, lc);

	dmatok_lc_submit_async(test, lc, token, 0);
	msleep(DMATOK_LC_SETTLE_MS);
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&lc->map_calls), 0,
			    "mapped before the exporter's fence signalled");
	KUNIT_EXPECT_EQ(test, dmatok_lc_nr_held(lc), 0U);

	dma_fence_signal(fence);
	KUNIT_ASSERT_TRUE_MSG(test, dmatok_lc_submitter_done(lc, false),
			      "submission still blocked after the fence signalled");
	KUNIT_ASSERT_EQ(test, dmatok_lc_wait_held(lc, 1), 1U);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->map_calls), 1);
	dmatok_lc_complete(lc, 1, false);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->bios_done, 1), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->bios_failed), 0);

	dmatok_lc_release_token(lc, token);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->unmap_calls, 1), 1);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->clean_calls, 1), 1);
}

/* ->init_dma_token fails: its error comes back, nothing is kept. */
static void dmatok_lc_init_failure_test(struct kunit *test)
{
	struct dmatok_lc *lc = test->priv;
	long dmabuf_refs = dmatok_lc_dmabuf_refs(lc);
	unsigned int queue_refs = dmatok_lc_queue_refs(lc);
	struct dma_token *token;

	lc->fail_init = -ENODEV;
	token = dmatok_lc_create(lc);
	KUNIT_ASSERT_TRUE(test, IS_ERR(token));
	KUNIT_EXPECT_EQ(test, PTR_ERR(token), -ENODEV);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->init_calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->clean_calls), 0);
	KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_dmabuf_refs(lc), dmabuf_refs,
			    "dma-buf reference leaked");
	KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_queue_refs(lc), queue_refs,
			    "queue reference leaked");
}

/* A dying queue refuses new tokens and keeps nothing. */
static void dmatok_lc_dying_queue_test(struct kunit *test)
{
	struct dmatok_lc *lc = test->priv;
	long dmabuf_refs = dmatok_lc_dmabuf_refs(lc);
	unsigned int queue_refs = dmatok_lc_queue_refs(lc);
	struct dma_token *token;

	blk_queue_flag_set(QUEUE_FLAG_DYING, lc->disk->queue);
	token = dmatok_lc_create(lc);
	KUNIT_ASSERT_TRUE(test, IS_ERR(token));
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->init_calls), 0);
	KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_dmabuf_refs(lc), dmabuf_refs,
			    "dma-buf reference leaked");
	KUNIT_EXPECT_EQ(test, dmatok_lc_queue_refs(lc), queue_refs);
}

/* An error of ->dma_map and the status the bio must end with. */
struct dmatok_lc_map_error {
	const char *name;
	int err;
	blk_status_t status;
};

static const struct dmatok_lc_map_error dmatok_lc_map_errors[] = {
	/* worth retrying later */
	{ "ENOMEM", -ENOMEM, BLK_STS_RESOURCE },
	/* not worth it: a retried request would fail again, forever */
	{ "EIO", -EIO, BLK_STS_IOERR },
	{ "ENXIO", -ENXIO, BLK_STS_IOERR },
};

static void dmatok_lc_map_error_desc(const struct dmatok_lc_map_error *e,
				     char *desc)
{
	strscpy(desc, e->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(dmatok_lc_map_error, dmatok_lc_map_errors,
		  dmatok_lc_map_error_desc);

/*
 * ->dma_map fails: the request fails with the status errno_to_blk_status()
 * gives for the error, without reaching the driver, the failed map is not
 * kept, the next request maps again, and releasing the token gives
 * everything back.
 */
static void dmatok_lc_map_failure_test(struct kunit *test)
{
	const struct dmatok_lc_map_error *e = test->param_value;
	struct dmatok_lc *lc = test->priv;
	long dmabuf_refs = dmatok_lc_dmabuf_refs(lc);
	unsigned int queue_refs = dmatok_lc_queue_refs(lc);
	struct dma_token *token;

	token = dmatok_lc_create_token(test, lc);

	lc->fail_map = e->err;
	dmatok_lc_submit(lc, token, 1, 0);
	KUNIT_ASSERT_EQ(test, dmatok_lc_wait_count(lc, &lc->bios_done, 1), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->bios_failed), 1);
	KUNIT_EXPECT_EQ_MSG(test, lc->last_error, e->status,
			    "->dma_map failed with %d", e->err);
	KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_nr_held(lc), 0U,
			    "request issued after ->dma_map failed");
	KUNIT_EXPECT_EQ(test, lc->nr_without_map, 0U);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->map_calls), 1);

	lc->fail_map = 0;
	dmatok_lc_submit(lc, token, 1, 0);
	KUNIT_ASSERT_EQ(test, dmatok_lc_wait_held(lc, 1), 1U);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->map_calls), 2);
	KUNIT_EXPECT_EQ(test, dmatok_lc_held_gen(lc, 0), 1UL);
	dmatok_lc_complete(lc, 1, false);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->bios_done, 2), 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->bios_failed), 1);

	dmatok_lc_release_token(lc, token);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->unmap_calls, 1), 1);
	KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_wait_count(lc, &lc->clean_calls, 1), 1,
			    "token kept alive by the failed map");
	KUNIT_EXPECT_TRUE_MSG(test, dmatok_lc_refs_settle(lc, dmabuf_refs, queue_refs),
			      "dma-buf refs %ld (want %ld), queue refs %u (want %u)",
			      dmatok_lc_dmabuf_refs(lc), dmabuf_refs,
			      dmatok_lc_queue_refs(lc), queue_refs);
}

static int dmatok_lc_percpu_ref_init_fail(struct percpu_ref *ref,
					  percpu_ref_func_t *release,
					  unsigned int flags, gfp_t gfp)
{
	return -ENOMEM;
}

/*
 * A map cannot be allocated (its percpu_ref fails to initialise, through
 * the static stub of kernel/test-support): the request fails with
 * BLK_STS_RESOURCE without reaching the driver or going on without a map,
 * nothing is mapped or kept, and the next request maps normally.
 */
static void dmatok_lc_map_alloc_failure_test(struct kunit *test)
{
	struct dmatok_lc *lc = test->priv;
	long dmabuf_refs = dmatok_lc_dmabuf_refs(lc);
	unsigned int queue_refs = dmatok_lc_queue_refs(lc);
	struct dma_token *token;

	token = dmatok_lc_create_token(test, lc);

	kunit_activate_static_stub(test, percpu_ref_init,
				   dmatok_lc_percpu_ref_init_fail);
	dmatok_lc_submit(lc, token, 1, 0);
	kunit_deactivate_static_stub(test, percpu_ref_init);
	KUNIT_ASSERT_EQ(test, dmatok_lc_wait_count(lc, &lc->bios_done, 1), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->bios_failed), 1);
	KUNIT_EXPECT_EQ(test, lc->last_error, BLK_STS_RESOURCE);
	KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_nr_held(lc), 0U,
			    "request issued although no map could be allocated");
	KUNIT_EXPECT_EQ(test, lc->nr_without_map, 0U);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->map_calls), 0);

	dmatok_lc_submit(lc, token, 1, 0);
	KUNIT_ASSERT_EQ(test, dmatok_lc_wait_held(lc, 1), 1U);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->map_calls), 1);
	dmatok_lc_complete(lc, 1, false);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->bios_done, 2), 2);

	dmatok_lc_release_token(lc, token);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->unmap_calls, 1), 1);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->clean_calls, 1), 1);
	KUNIT_EXPECT_TRUE_MSG(test, dmatok_lc_refs_settle(lc, dmabuf_refs, queue_refs),
			      "dma-buf refs %ld (want %ld), queue refs %u (want %u)",
			      dmatok_lc_dmabuf_refs(lc), dmabuf_refs,
			      dmatok_lc_queue_refs(lc), queue_refs);
}

static int dmatok_lc_reserve_fences_fail(struct dma_resv *obj,
					 unsigned int num_fences)
{
	return -ENOMEM;
}

/*
 * The invalidation cannot reserve a slot for its fence (static stub): the
 * map must not stay live.  It is unpublished and unmapped before the
 * invalidation returns (nothing is in flight to wait for), and the next
 * request gets a new map.
 */
static void dmatok_lc_invalidate_reserve_failure_test(struct kunit *test)
{
	struct dmatok_lc *lc = test->priv;
	struct dma_token *token;
	unsigned int nr;

	token = dmatok_lc_create_token(test, lc);
	dmatok_lc_submit(lc, token, 1, 0);
	KUNIT_ASSERT_EQ(test, dmatok_lc_wait_held(lc, 1), 1U);
	dmatok_lc_complete(lc, 1, false);
	KUNIT_ASSERT_EQ(test, dmatok_lc_wait_count(lc, &lc->bios_done, 1), 1);

	kunit_activate_static_stub(test, dma_resv_reserve_fences,
				   dmatok_lc_reserve_fences_fail);
	/* checks that no map stays published */
	dmatok_lc_invalidate(test, lc, token, &nr);
	kunit_deactivate_static_stub(test, dma_resv_reserve_fences);
	KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_wait_count(lc, &lc->unmap_calls, 1), 1,
			    "map left mapped when its fence could not be published");

	dmatok_lc_submit(lc, token, 1, 0);
	KUNIT_ASSERT_EQ(test, dmatok_lc_wait_held(lc, 1), 1U);
	KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_held_gen(lc, 0), 2UL,
			    "request after the invalidation not on a new map");
	KUNIT_EXPECT_EQ(test, lc->nr_dying_map, 0U);
	dmatok_lc_complete(lc, 1, false);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->bios_done, 2), 2);
}

/*
 * The release work of a token's last map frees the token, and the
 * driver's ->clean_dma_token() may sleep there: nvme-pci detaches from the
 * dma-buf, which takes the reservation lock.  The exporter may hold that
 * lock while it waits for the fence of another map, which that map's own
 * release work signals: that work must not wait for the sleeping one.  The
 * workqueue holds a work item back while another at the same address
 * runs, so the sleeping work must not have freed its map yet, or a new
 * map could be allocated there.  The fake driver makes the new map and
 * waits for its fence from ->clean_dma_token() itself, on the CPU that
 * freed the old map, where the allocator first hands out what was freed
 * last.
 */
static void dmatok_lc_release_work_sleeps_test(struct kunit *test)
{
	struct dmatok_lc *lc = test->priv;
	struct dma_token *token, *other;
	void *freed;

	token = dmatok_lc_create_token(test, lc);
	other = dmatok_lc_create_token(test, lc);

	/* in flight across the release: the map's release work frees the token */
	dmatok_lc_submit(lc, token, 1, 0);
	KUNIT_ASSERT_EQ(test, dmatok_lc_wait_held(lc, 1), 1U);
	freed = READ_ONCE(lc->last_map);

	lc->hook_bio = dmatok_lc_alloc_bio(lc, other, 0, 0);
	lc->hook_token = dma_token_to_blk_mq(token);
	dmatok_lc_release_token(lc, token);
	dmatok_lc_complete(lc, 1, false);

	/* the hook waits for a request, then for a fence */
	KUNIT_ASSERT_GT_MSG(test, wait_for_completion_timeout(&lc->hook_done,
							      3 * DMATOK_LC_TIMEOUT),
			    0UL, "the map's release work did not free the token");
	KUNIT_ASSERT_NOT_NULL_MSG(test, lc->hook_map,
				  "no request on the other token in ->clean_dma_token()");
	KUNIT_EXPECT_GT_MSG(test, lc->hook_wait, 0L,
			    "fence of a map released while another map's release work slept not signalled in %u ms (%s)",
			    jiffies_to_msecs(DMATOK_LC_TIMEOUT),
			    lc->hook_map == freed ? "the new map is at the freed map's address" :
						    "the new map is elsewhere");
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->bios_done, 2), 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->bios_failed), 0);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->unmap_calls, 2), 2);
	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->clean_calls, 1), 1);
}

/*
 * Submitter kthreads keep reads going through one token while the case
 * invalidates the mapping and moves the buffer once the published fences
 * have signalled, as an exporter would, round after round: each round lets
 * the submitters issue a few more bios and, once half of them have ended,
 * invalidates while they issue the rest.  No
 * request
 * may carry a map after its ->dma_unmap or after the move, no request may
 * go without a map, every bio succeeds, and at the end every map has been
 * unmapped exactly once and every reference is back.
 */
static void dmatok_lc_concurrent_test(struct kunit *test)
{
	const unsigned int total = DMATOK_LC_NR_WORKERS * DMATOK_LC_ROUNDS *
				   DMATOK_LC_ROUND_BIOS;
	struct dmatok_lc *lc = test->priv;
	long dmabuf_refs = dmatok_lc_dmabuf_refs(lc);
	unsigned int queue_refs = dmatok_lc_queue_refs(lc);
	struct dma_token *token;
	unsigned int i;
	int maps;

	token = dmatok_lc_create_token(test, lc);
	lc->auto_complete = true;
	lc->worker_token = token;
	for (i = 0; i < ARRAY_SIZE(lc->workers); i++) {
		struct task_struct *task;

		task = kthread_create(dmatok_lc_worker_fn, lc, "dmatok-lc-%u", i);
		KUNIT_ASSERT_NOT_ERR_OR_NULL(test, task);
		get_task_struct(task);
		lc->workers[i] = task;
	}
	for (i = 0; i < ARRAY_SIZE(lc->workers); i++)
		wake_up_process(lc->workers[i]);

	for (i = 1; i <= DMATOK_LC_ROUNDS; i++) {
		/* half of this round's bios ended: invalidate under the rest */
		int half = ((i - 1) * DMATOK_LC_ROUND_BIOS + DMATOK_LC_ROUND_BIOS / 2) *
			   DMATOK_LC_NR_WORKERS;

		WRITE_ONCE(lc->worker_budget, i * DMATOK_LC_ROUND_BIOS);
		wake_up_all(&lc->wq);
		KUNIT_ASSERT_GE_MSG(test, dmatok_lc_wait_count(lc, &lc->bios_done, half),
				    half, "round %u: submitters stuck", i);
		KUNIT_ASSERT_EQ_MSG(test, dmatok_lc_invalidate_and_move(lc), 0L,
				    "round %u: the invalidation's fences did not signal", i);
	}
	KUNIT_ASSERT_TRUE_MSG(test, dmatok_lc_workers_done(lc, false),
			      "submitters stuck: %d of %u bios ended",
			      atomic_read(&lc->bios_done), total);

	KUNIT_EXPECT_EQ(test, dmatok_lc_wait_count(lc, &lc->bios_done, total), total);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->bios_failed), 0);
	KUNIT_EXPECT_EQ_MSG(test, lc->nr_without_map, 0U, "requests without a map");
	KUNIT_EXPECT_EQ_MSG(test, lc->nr_unmapped_use, 0U,
			    "requests on a map already unmapped");
	KUNIT_EXPECT_EQ_MSG(test, lc->nr_moved_use, 0U,
			    "requests on a map after the exporter moved the buffer");
	/* the case did what it is for: the mapping changed under I/O */
	KUNIT_EXPECT_GE(test, atomic_read(&lc->map_calls), 2);

	dmatok_lc_release_token(lc, token);
	maps = atomic_read(&lc->map_calls);
	KUNIT_ASSERT_LT(test, maps, DMATOK_LC_MAX_GENS);
	KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_wait_count(lc, &lc->unmap_calls, maps), maps,
			    "maps not unmapped");
	KUNIT_EXPECT_EQ_MSG(test, dmatok_lc_wait_count(lc, &lc->clean_calls, 1), 1,
			    "token not cleaned up");
	KUNIT_EXPECT_EQ(test, lc->nr_double_unmap, 0U);
	KUNIT_EXPECT_EQ(test, atomic_read(&lc->exp->mapped), 0);
	KUNIT_EXPECT_TRUE_MSG(test, dmatok_lc_refs_settle(lc, dmabuf_refs, queue_refs),
			      "dma-buf refs %ld (want %ld), queue refs %u (want %u)",
			      dmatok_lc_dmabuf_refs(lc), dmabuf_refs,
			      dmatok_lc_queue_refs(lc), queue_refs);
	kunit_info(test, "%u bios, %u invalidations, %d maps\n", total,
		   DMATOK_LC_ROUNDS, maps);
}

static struct kunit_case dmatok_lc_cases[] = {
	KUNIT_CASE(dmatok_lc_create_release_test),
	KUNIT_CASE(dmatok_lc_map_lazy_reuse_test),
	KUNIT_CASE(dmatok_lc_invalidate_idle_test),
	KUNIT_CASE_PARAM(dmatok_lc_invalidate_inflight_test,
			 dmatok_lc_completion_gen_params),
	KUNIT_CASE(dmatok_lc_map_waits_for_exporter_test),
	KUNIT_CASE(dmatok_lc_init_failure_test),
	KUNIT_CASE(dmatok_lc_dying_queue_test),
	KUNIT_CASE_PARAM(dmatok_lc_map_failure_test, dmatok_lc_map_error_gen_params),
	KUNIT_CASE(dmatok_lc_map_alloc_failure_test),
	KUNIT_CASE(dmatok_lc_invalidate_reserve_failure_test),
	KUNIT_CASE(dmatok_lc_release_work_sleeps_test),
	KUNIT_CASE(dmatok_lc_concurrent_test),
	{}
};

static struct kunit_suite dmatok_lc_suite = {
	.name = "dmatok_lifecycle",
	.init = dmatok_lc_init,
	.test_cases = dmatok_lc_cases,
};

kunit_test_suite(dmatok_lc_suite);

MODULE_DESCRIPTION("KUnit tests for the lifecycle of blk-mq dma tokens and maps");
MODULE_LICENSE("GPL");
