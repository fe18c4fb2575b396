// SPDX-License-Identifier: GPL-2.0
/*
 * A dma-buf exporter for testing dynamic importers: it makes dma-bufs of
 * system pages that user space can invalidate (move_notify) and migrate to
 * new pages at any time, and counts what importers do with them, so that
 * a selftest can check that an importer remaps after an invalidation, never
 * uses a stale mapping, and leaks nothing. See test_dmabuf_exporter_uapi.h
 * for the ioctls of /dev/test_dmabuf_exporter.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/jiffies.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/sched/debug.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "test_dmabuf_exporter_uapi.h"

#define TDEXP_MAX_SIZE		(64ULL << 20)
/* The largest contiguous buffer (TEST_DMABUF_EXP_LAYOUT_CONTIG) */
#define TDEXP_MAX_CONTIG	SZ_4M
#define TDEXP_DEFAULT_TIMEOUT	10000
/* After an invalidation timed out: how long to wait to see it end late. */
#define TDEXP_LATE_WAIT		10000
/* Once wedged: how long a WAIT still waits for work items to finish. */
#define TDEXP_WEDGED_WAIT	1000

/*
 * Set by the first WAIT that timed out, or the first MOVE whose fences did
 * not signal in TDEXP_LATE_WAIT more either. The longest invalidation a
 * correct importer took here is about 1 s (debug kernel, swiotlb, under
 * TCG), far below the bound: an importer that kept a fence unsignalled or
 * a mapping mapped that long has lost it, and what it lost stays lost.
 * Every later test would wait out its own bound for the same cause, so
 * from then on the exporter fails fast (EIO) instead: see
 * test_dmabuf_exporter_uapi.h.
 */
static atomic_t tdexp_wedged = ATOMIC_INIT(0);

static void tdexp_wedge(const char *what)
{
	if (!atomic_xchg(&tdexp_wedged, 1))
		pr_err("%s: from now on CREATE and MOVE fail with EIO, and so does a WAIT not satisfied within 1 s\n",
		       what);
}

static bool tdexp_is_wedged(void)
{
	return atomic_read(&tdexp_wedged);
}

/*
 * One generation of the buffer's pages. The buffer holds a reference on
 * its current backing, and each mapping on the backing it was made from:
 * after a migration the old pages live on until their last mapping is
 * unmapped, as unmap_dma_buf() still needs them.
 */
struct tdexp_backing {
	struct kref kref;
	struct tdexp_buffer *buf;
	bool retired;		/* poisoned: no DMA may write here any more */
	unsigned long nr_pages;
	struct page *pages[] __counted_by(nr_pages);
};

/* The counters of struct test_dmabuf_exp_counters, in its order. */
enum tdexp_counter {
	TDEXP_BUFFERS,
	TDEXP_ATTACHMENTS,
	TDEXP_PINS,
	TDEXP_MAPS,
	TDEXP_UNMAPS,
	TDEXP_INVALIDATIONS,
	TDEXP_MIGRATIONS,
	TDEXP_FENCES_WAITED,
	TDEXP_STALE_DMA,
	TDEXP_NR_COUNTERS,
};

struct tdexp_counters {
	atomic64_t c[TDEXP_NR_COUNTERS];
};

struct tdexp_buffer {
	struct dma_buf *dmabuf;
	/* TEST_DMABUF_EXP_LAYOUT_*, and its entries' length (0: no bound) */
	u32 layout;
	u32 seg_size;
	/* The current backing: written under the resv lock and @lock. */
	struct tdexp_backing *backing;
	/* Serialises CPU faults against a migration. */
	struct mutex lock;
	struct tdexp_counters cnt;
};

/* Totals over every buffer made since the module was loaded. */
static struct tdexp_counters tdexp_total;
static DECLARE_WAIT_QUEUE_HEAD(tdexp_wq);

static void tdexp_count(struct tdexp_buffer *buf, enum tdexp_counter c,
			s64 n)
{
	atomic64_add(n, &buf->cnt.c[c]);
	atomic64_add(n, &tdexp_total.c[c]);
}

/* Only for the live counts: wake who waits for them to drop. */
static void tdexp_uncount(struct tdexp_buffer *buf, enum tdexp_counter c)
{
	atomic64_dec(&buf->cnt.c[c]);
	atomic64_dec(&tdexp_total.c[c]);
	wake_up_all(&tdexp_wq);
}

static s64 tdexp_read(struct tdexp_counters *cnt, enum tdexp_counter c)
{
	return atomic64_read(&cnt->c[c]);
}

static void tdexp_backing_free_pages(struct tdexp_backing *bk)
{
	unsigned long i;

	for (i = 0; i < bk->nr_pages; i++)
		if (bk->pages[i])
			__free_page(bk->pages[i]);
	kfree(bk);
}

static struct tdexp_backing *tdexp_backing_alloc(struct tdexp_buffer *buf,
						 unsigned long nr_pages)
{
	struct tdexp_backing *bk;
	unsigned long i;

	bk = kzalloc_flex(*bk, pages, nr_pages);
	if (!bk)
		return NULL;
	bk->nr_pages = nr_pages;
	kref_init(&bk->kref);
	bk->buf = buf;

	if (buf->layout == TEST_DMABUF_EXP_LAYOUT_CONTIG) {
		unsigned int order = get_order(nr_pages << PAGE_SHIFT);
		struct page *page;

		page = alloc_pages(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN,
				   order);
		if (!page) {
			kfree(bk);
			return NULL;
		}
		/* Pages of their own, as the other layouts have them. */
		split_page(page, order);
		for (i = 0; i < 1UL << order; i++) {
			if (i < nr_pages)
				bk->pages[i] = page + i;
			else
				__free_page(page + i);
		}
		return bk;
	}

	/* One at a time: importers see scattered pages, as in real life. */
	for (i = 0; i < nr_pages; i++) {
		bk->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!bk->pages[i]) {
			tdexp_backing_free_pages(bk);
			return NULL;
		}
	}
	return bk;
}

static bool tdexp_page_is_poison(struct page *page)
{
	u8 *p = kmap_local_page(page);
	bool poison = !memchr_inv(p, TEST_DMABUF_EXP_POISON, PAGE_SIZE);

	kunmap_local(p);
	return poison;
}

static void tdexp_backing_release(struct kref *kref)
{
	struct tdexp_backing *bk = container_of(kref, struct tdexp_backing,
						kref);
	unsigned long i, stale = 0;

	/*
	 * Retired pages were poisoned after every fence of the buffer had
	 * signalled: the importers promised that no DMA writes them after
	 * that.
	 */
	if (bk->retired) {
		for (i = 0; i < bk->nr_pages; i++)
			if (!tdexp_page_is_poison(bk->pages[i]))
				stale++;
	}
	if (stale) {
		pr_err("%lu of %lu migrated-away pages written after the move\n",
		       stale, bk->nr_pages);
		tdexp_count(bk->buf, TDEXP_STALE_DMA, stale);
	}
	tdexp_backing_free_pages(bk);
}

static void tdexp_backing_put(struct tdexp_backing *bk)
{
	kref_put(&bk->kref, tdexp_backing_release);
}

/* A mapping: the table handed to the importer and the pages it maps. */
struct tdexp_map {
	struct sg_table sgt;
	struct tdexp_backing *backing;
};

static int tdexp_attach(struct dma_buf *dmabuf,
			struct dma_buf_attachment *attach)
{
	tdexp_count((struct tdexp_buffer *)dmabuf->priv, TDEXP_ATTACHMENTS, 1);
	return 0;
}

static void tdexp_detach(struct dma_buf *dmabuf,
			 struct dma_buf_attachment *attach)
{
	struct tdexp_buffer *buf = dmabuf->priv;

	tdexp_uncount(buf, TDEXP_ATTACHMENTS);
}

/* Pinned importers keep the pages where they are: see tdexp_move(). */
static int tdexp_pin(struct dma_buf_attachment *attach)
{
	tdexp_count((struct tdexp_buffer *)attach->dmabuf->priv, TDEXP_PINS, 1);
	return 0;
}

static void tdexp_unpin(struct dma_buf_attachment *attach)
{
	struct tdexp_buffer *buf = attach->dmabuf->priv;

	tdexp_uncount(buf, TDEXP_PINS);
}

/*
 * The length of the scatterlist entry at byte @off of @bk, for @dev: the
 * layout's segment size, within the page for the layouts of scattered
 * pages, and within what @dev takes in one segment and one mapping.
 */
static size_t tdexp_seg_len(struct tdexp_backing *bk, struct device *dev,
			    size_t off)
{
	size_t len = (bk->nr_pages << PAGE_SHIFT) - off;

	if (bk->buf->seg_size)
		len = min_t(size_t, len, bk->buf->seg_size);
	if (bk->buf->layout != TEST_DMABUF_EXP_LAYOUT_CONTIG)
		return min_t(size_t, len, PAGE_SIZE - offset_in_page(off));
	len = min_t(size_t, len, dma_get_max_seg_size(dev));
	len = min_t(size_t, len, dma_max_mapping_size(dev));
	/* whole pages, at least one */
	return max_t(size_t, round_down(len, PAGE_SIZE), PAGE_SIZE);
}

static struct sg_table *tdexp_map_dma_buf(struct dma_buf_attachment *attach,
					  enum dma_data_direction dir)
{
	struct tdexp_buffer *buf = attach->dmabuf->priv;
	struct tdexp_backing *bk = buf->backing;
	size_t off, len, total = bk->nr_pages << PAGE_SHIFT;
	unsigned int nents = 0;
	struct scatterlist *sg;
	struct tdexp_map *map;
	unsigned long i;
	int ret;

	dma_resv_assert_held(attach->dmabuf->resv);

	map = kzalloc_obj(*map);
	if (!map)
		return ERR_PTR(-ENOMEM);

	/* The layout's entries; the DMA layer may merge them. */
	for (off = 0; off < total; off += tdexp_seg_len(bk, attach->dev, off))
		nents++;
	ret = sg_alloc_table(&map->sgt, nents, GFP_KERNEL);
	if (ret)
		goto err_free;
	off = 0;
	for_each_sgtable_sg(&map->sgt, sg, i) {
		len = tdexp_seg_len(bk, attach->dev, off);
		sg_set_page(sg, bk->pages[off >> PAGE_SHIFT], len,
			    offset_in_page(off));
		off += len;
	}

	/*
	 * No CPU syncs at map or unmap time, as drm_gem_map_dma_buf(): the
	 * importer syncs around each DMA it does. An unmap that copied a
	 * bounce buffer back would put stale bytes over what the CPU wrote
	 * since the last DMA, and the importer may unmap late, well after
	 * an invalidation.
	 */
	ret = dma_map_sgtable(attach->dev, &map->sgt, dir,
			      DMA_ATTR_SKIP_CPU_SYNC);
	if (ret)
		goto err_table;

	kref_get(&bk->kref);
	map->backing = bk;
	tdexp_count(buf, TDEXP_MAPS, 1);
	return &map->sgt;

err_table:
	sg_free_table(&map->sgt);
err_free:
	kfree(map);
	return ERR_PTR(ret);
}

static void tdexp_unmap_dma_buf(struct dma_buf_attachment *attach,
				struct sg_table *sgt,
				enum dma_data_direction dir)
{
	struct tdexp_map *map = container_of(sgt, struct tdexp_map, sgt);
	struct tdexp_buffer *buf = attach->dmabuf->priv;

	dma_unmap_sgtable(attach->dev, sgt, dir, DMA_ATTR_SKIP_CPU_SYNC);
	sg_free_table(sgt);
	tdexp_backing_put(map->backing);
	kfree(map);
	tdexp_count(buf, TDEXP_UNMAPS, 1);
	wake_up_all(&tdexp_wq);
}

static void tdexp_release(struct dma_buf *dmabuf)
{
	struct tdexp_buffer *buf = dmabuf->priv;

	tdexp_backing_put(buf->backing);
	mutex_destroy(&buf->lock);
	atomic64_dec(&tdexp_total.c[TDEXP_BUFFERS]);
	kfree(buf);
	wake_up_all(&tdexp_wq);
}

static vm_fault_t tdexp_vm_fault(struct vm_fault *vmf)
{
	struct tdexp_buffer *buf = vmf->vma->vm_private_data;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	/* A migration zaps the user mappings; fault in the new pages. */
	mutex_lock(&buf->lock);
	if (vmf->pgoff < buf->backing->nr_pages)
		ret = vmf_insert_pfn(vmf->vma, vmf->address,
				     page_to_pfn(buf->backing->pages[vmf->pgoff]));
	mutex_unlock(&buf->lock);
	return ret;
}

static const struct vm_operations_struct tdexp_vm_ops = {
	.fault = tdexp_vm_fault,
};

static int tdexp_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	vma->vm_ops = &tdexp_vm_ops;
	vma->vm_private_data = dmabuf->priv;
	vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	return 0;
}

/*
 * No begin/end_cpu_access: the CPU maps the pages themselves, so what it
 * reads is what is in memory, never a copy that DMA syncs would refresh.
 */
static const struct dma_buf_ops tdexp_dmabuf_ops = {
	.attach = tdexp_attach,
	.detach = tdexp_detach,
	.pin = tdexp_pin,
	.unpin = tdexp_unpin,
	.map_dma_buf = tdexp_map_dma_buf,
	.unmap_dma_buf = tdexp_unmap_dma_buf,
	.release = tdexp_release,
	.mmap = tdexp_mmap,
};

static long tdexp_create(struct test_dmabuf_exp_create __user *uarg)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	struct test_dmabuf_exp_create arg;
	struct tdexp_buffer *buf;
	struct dma_buf *dmabuf;
	int fd;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags & ~TEST_DMABUF_EXP_CLOEXEC)
		return -EINVAL;
	if (!arg.size || arg.size > TDEXP_MAX_SIZE)
		return -EINVAL;
	switch (arg.layout) {
	case TEST_DMABUF_EXP_LAYOUT_PAGES:
		if (arg.seg_size)
			return -EINVAL;
		break;
	case TEST_DMABUF_EXP_LAYOUT_SPLIT:
		if (arg.seg_size < 256 || arg.seg_size >= PAGE_SIZE)
			return -EINVAL;
		break;
	case TEST_DMABUF_EXP_LAYOUT_CONTIG:
		if (arg.size > PAGE_SIZE << MAX_PAGE_ORDER ||
		    arg.size > TDEXP_MAX_CONTIG ||
		    !IS_ALIGNED(arg.seg_size, PAGE_SIZE))
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (tdexp_is_wedged())
		return -EIO;

	buf = kzalloc_obj(*buf);
	if (!buf)
		return -ENOMEM;
	buf->layout = arg.layout;
	buf->seg_size = arg.seg_size;
	mutex_init(&buf->lock);
	buf->backing = tdexp_backing_alloc(buf, DIV_ROUND_UP(arg.size,
							     PAGE_SIZE));
	if (!buf->backing) {
		kfree(buf);
		return -ENOMEM;
	}

	exp_info.ops = &tdexp_dmabuf_ops;
	exp_info.size = arg.size;
	exp_info.flags = O_RDWR;
	exp_info.priv = buf;
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		tdexp_backing_put(buf->backing);
		kfree(buf);
		return PTR_ERR(dmabuf);
	}
	buf->dmabuf = dmabuf;
	tdexp_count(buf, TDEXP_BUFFERS, 1);

	fd = dma_buf_fd(dmabuf, arg.flags & TEST_DMABUF_EXP_CLOEXEC ?
				O_CLOEXEC : 0);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	arg.fd = fd;
	if (copy_to_user(&uarg->fd, &arg.fd, sizeof(arg.fd))) {
		/* The fd is installed: user space owns it now. */
		return -EFAULT;
	}
	return 0;
}

/* The dma-buf behind @fd if this exporter made it, with a reference. */
static struct dma_buf *tdexp_get(int fd)
{
	struct dma_buf *dmabuf = dma_buf_get(fd);

	if (IS_ERR(dmabuf))
		return dmabuf;
	if (dmabuf->ops != &tdexp_dmabuf_ops) {
		dma_buf_put(dmabuf);
		return ERR_PTR(-EINVAL);
	}
	return dmabuf;
}

static unsigned long tdexp_timeout(u32 timeout_ms)
{
	return msecs_to_jiffies(timeout_ms ?: TDEXP_DEFAULT_TIMEOUT);
}

/* Copy the pages to a new backing; the old one is poisoned and retired. */
static int tdexp_migrate(struct tdexp_buffer *buf)
{
	struct tdexp_backing *old = buf->backing, *new;
	unsigned long i;

	new = tdexp_backing_alloc(buf, old->nr_pages);
	if (!new)
		return -ENOMEM;

	mutex_lock(&buf->lock);
	/* CPU mappings fault again, and then see only the new pages. */
	unmap_mapping_range(buf->dmabuf->file->f_mapping, 0, 0, 1);
	for (i = 0; i < old->nr_pages; i++) {
		copy_highpage(new->pages[i], old->pages[i]);
		memset_page(old->pages[i], 0, TEST_DMABUF_EXP_POISON,
			    PAGE_SIZE);
	}
	old->retired = true;
	buf->backing = new;
	mutex_unlock(&buf->lock);

	tdexp_count(buf, TDEXP_MIGRATIONS, 1);
	tdexp_backing_put(old);
	return 0;
}

/*
 * The fences did not signal in time: name them and, once, show the tasks
 * blocked meanwhile (as the hung task detector would, which a wait bounded
 * below its timeout never trips) and the work items pending, so that the
 * wait that held them up can be told from a stalled CPU. Then, still under
 * the reservation lock so that no fence is added, wait up to
 * TDEXP_LATE_WAIT more and say whether they signalled after all: a guest
 * that stalled as a whole, or I/O slow to end, signals late; a lost fence
 * never does. Returns true when they did not signal: lost.
 */
static bool tdexp_show_stuck(struct dma_resv *resv)
{
	static atomic_t shown = ATOMIC_INIT(0);
	struct dma_resv_iter cursor;
	struct task_struct *g, *t;
	struct dma_fence *fence;
	unsigned long start;
	long ret;

	dma_resv_for_each_fence(&cursor, resv, DMA_RESV_USAGE_BOOKKEEP, fence)
		if (!dma_fence_is_signaled(fence))
			pr_err("  not signalled: fence %llu:%llu\n",
			       fence->context, fence->seqno);
	if (!atomic_xchg(&shown, 1)) {
		pr_err("tasks blocked while the fences were waited for:\n");
		rcu_read_lock();
		for_each_process_thread(g, t) {
			unsigned int state = READ_ONCE(t->__state);

			if ((state & TASK_UNINTERRUPTIBLE) &&
			    !(state & (TASK_WAKEKILL | TASK_NOLOAD)))
				sched_show_task(t);
		}
		rcu_read_unlock();
#if IS_BUILTIN(CONFIG_TEST_DMABUF_EXPORTER)
		/* The importers' fences may wait for a work item: not exported */
		show_all_workqueues();
#endif
	}

	start = jiffies;
	ret = dma_resv_wait_timeout(resv, DMA_RESV_USAGE_BOOKKEEP, true,
				    msecs_to_jiffies(TDEXP_LATE_WAIT));
	if (ret > 0)
		pr_err("the fences signalled late: %u ms after the bound\n",
		       jiffies_to_msecs(jiffies - start));
	else if (!ret)
		pr_err("the fences did not signal: not in %u ms after the bound either\n",
		       TDEXP_LATE_WAIT);
	else
		pr_err("the wait for the fences after the bound: error %ld\n",
		       ret);
	return !ret;
}

static long tdexp_move(struct test_dmabuf_exp_move __user *uarg)
{
	struct test_dmabuf_exp_move arg;
	struct dma_resv_iter cursor;
	struct tdexp_buffer *buf;
	struct dma_buf *dmabuf;
	struct dma_fence *fence;
	u32 unsignalled = 0;
	long ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags & ~TEST_DMABUF_EXP_MIGRATE)
		return -EINVAL;

	dmabuf = tdexp_get(arg.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	buf = dmabuf->priv;
	if (tdexp_is_wedged()) {
		ret = -EIO;
		goto out_put;
	}

	ret = dma_resv_lock_interruptible(dmabuf->resv, NULL);
	if (ret)
		goto out_put;

	if ((arg.flags & TEST_DMABUF_EXP_MIGRATE) &&
	    tdexp_read(&buf->cnt, TDEXP_PINS)) {
		ret = -EBUSY;
		goto out_unlock;
	}

	dma_buf_invalidate_mappings(dmabuf);
	tdexp_count(buf, TDEXP_INVALIDATIONS, 1);

	/* Importers publish a fence per mapping still in use: wait for all. */
	dma_resv_for_each_fence(&cursor, dmabuf->resv, DMA_RESV_USAGE_BOOKKEEP,
				fence)
		if (!dma_fence_is_signaled(fence))
			unsignalled++;
	tdexp_count(buf, TDEXP_FENCES_WAITED, unsignalled);

	ret = dma_resv_wait_timeout(dmabuf->resv, DMA_RESV_USAGE_BOOKKEEP,
				    true, tdexp_timeout(arg.timeout_ms));
	if (ret == 0) {
		pr_err("fences of an invalidated dma-buf did not signal in %u ms\n",
		       arg.timeout_ms ?: TDEXP_DEFAULT_TIMEOUT);
		if (tdexp_show_stuck(dmabuf->resv))
			tdexp_wedge("the fences of an invalidation were lost");
		ret = -ETIMEDOUT;
		goto out_unlock;
	}
	if (ret < 0)
		goto out_unlock;

	ret = 0;
	if (arg.flags & TEST_DMABUF_EXP_MIGRATE)
		ret = tdexp_migrate(buf);

out_unlock:
	dma_resv_unlock(dmabuf->resv);
out_put:
	dma_buf_put(dmabuf);
	if (!ret && put_user(unsignalled, &uarg->fences))
		ret = -EFAULT;
	return ret;
}

static void tdexp_read_counters(struct test_dmabuf_exp_counters *out,
				struct tdexp_counters *cnt)
{
	out->buffers = tdexp_read(cnt, TDEXP_BUFFERS);
	out->attachments = tdexp_read(cnt, TDEXP_ATTACHMENTS);
	out->pins = tdexp_read(cnt, TDEXP_PINS);
	out->maps = tdexp_read(cnt, TDEXP_MAPS);
	out->unmaps = tdexp_read(cnt, TDEXP_UNMAPS);
	out->invalidations = tdexp_read(cnt, TDEXP_INVALIDATIONS);
	out->migrations = tdexp_read(cnt, TDEXP_MIGRATIONS);
	out->fences_waited = tdexp_read(cnt, TDEXP_FENCES_WAITED);
	out->stale_dma = tdexp_read(cnt, TDEXP_STALE_DMA);
}

static long tdexp_counters(struct test_dmabuf_exp_counters __user *uarg)
{
	struct test_dmabuf_exp_counters arg;
	struct dma_buf *dmabuf;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.pad)
		return -EINVAL;

	if (arg.fd == -1) {
		tdexp_read_counters(&arg, &tdexp_total);
	} else {
		dmabuf = tdexp_get(arg.fd);
		if (IS_ERR(dmabuf))
			return PTR_ERR(dmabuf);
		tdexp_read_counters(&arg, &((struct tdexp_buffer *)dmabuf->priv)->cnt);
		dma_buf_put(dmabuf);
	}
	return copy_to_user(uarg, &arg, sizeof(arg)) ? -EFAULT : 0;
}

static bool tdexp_settled(struct tdexp_counters *cnt,
			  const struct test_dmabuf_exp_wait *arg)
{
	if ((arg->flags & TEST_DMABUF_EXP_UNMAPPED) &&
	    tdexp_read(cnt, TDEXP_MAPS) != tdexp_read(cnt, TDEXP_UNMAPS))
		return false;
	if ((arg->flags & TEST_DMABUF_EXP_DETACHED) &&
	    tdexp_read(cnt, TDEXP_ATTACHMENTS) > arg->attachments)
		return false;
	if ((arg->flags & TEST_DMABUF_EXP_RELEASED) &&
	    tdexp_read(cnt, TDEXP_BUFFERS) > arg->buffers)
		return false;
	return true;
}

static long tdexp_wait(struct test_dmabuf_exp_wait __user *uarg)
{
	const u32 all = TEST_DMABUF_EXP_UNMAPPED | TEST_DMABUF_EXP_DETACHED |
			TEST_DMABUF_EXP_RELEASED;
	struct test_dmabuf_exp_wait arg;
	struct dma_buf *dmabuf = NULL;
	struct tdexp_counters *cnt;
	bool wedged;
	long ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (!arg.flags || (arg.flags & ~all))
		return -EINVAL;
	if (arg.buffers && !(arg.flags & TEST_DMABUF_EXP_RELEASED))
		return -EINVAL;
	if (arg.attachments && !(arg.flags & TEST_DMABUF_EXP_DETACHED))
		return -EINVAL;

	if (arg.fd == -1) {
		cnt = &tdexp_total;
	} else {
		/* Our own reference keeps one buffer from being released. */
		if (arg.flags & TEST_DMABUF_EXP_RELEASED)
			return -EINVAL;
		dmabuf = tdexp_get(arg.fd);
		if (IS_ERR(dmabuf))
			return PTR_ERR(dmabuf);
		cnt = &((struct tdexp_buffer *)dmabuf->priv)->cnt;
	}

	wedged = tdexp_is_wedged();
	ret = wait_event_interruptible_timeout(tdexp_wq,
					       tdexp_settled(cnt, &arg),
					       wedged ? msecs_to_jiffies(TDEXP_WEDGED_WAIT) :
					       tdexp_timeout(arg.timeout_ms));
	if (dmabuf)
		dma_buf_put(dmabuf);
	if (ret < 0)
		return ret;
	if (!ret && wedged)
		return -EIO;
	if (!ret) {
		pr_err("importers kept their mappings, attachments or dma-bufs for %u ms\n",
		       arg.timeout_ms ?: TDEXP_DEFAULT_TIMEOUT);
		tdexp_wedge("a wait for importers timed out");
		return -ETIMEDOUT;
	}
	return 0;
}

static long tdexp_ioctl(struct file *file, unsigned int cmd,
			unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case TEST_DMABUF_EXP_IOC_CREATE:
		return tdexp_create(uarg);
	case TEST_DMABUF_EXP_IOC_MOVE:
		return tdexp_move(uarg);
	case TEST_DMABUF_EXP_IOC_COUNTERS:
		return tdexp_counters(uarg);
	case TEST_DMABUF_EXP_IOC_WAIT:
		return tdexp_wait(uarg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations tdexp_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = tdexp_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice tdexp_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "test_dmabuf_exporter",
	.fops = &tdexp_fops,
};
module_misc_device(tdexp_misc);

MODULE_DESCRIPTION("Test dma-buf exporter that invalidates and migrates");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("DMA_BUF");
