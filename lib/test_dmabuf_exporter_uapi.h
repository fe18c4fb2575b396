/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * User interface of the test dma-buf exporter (lib/test_dmabuf_exporter.c,
 * CONFIG_TEST_DMABUF_EXPORTER): dma-bufs for dynamic importers that the
 * test can invalidate and migrate, with counters for leak checks. Used by
 * tools/testing/selftests/dmabuf-rw.
 *
 * Every ioctl is issued on /dev/test_dmabuf_exporter.
 *
 * Wedged: once a WAIT has timed out, or a MOVE's fences did not signal in
 * 10 s more either, since the exporter was loaded, an importer has lost a
 * fence or a mapping, and every later wait would only wait out its bound
 * for the same cause. From then on CREATE and MOVE fail with EIO, and so
 * does a WAIT whose condition does not hold within 1 s: the tests that
 * follow fail fast, and the first failure names the cause.
 */
#ifndef _LIB_TEST_DMABUF_EXPORTER_UAPI_H
#define _LIB_TEST_DMABUF_EXPORTER_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

/*
 * TEST_DMABUF_EXP_CREATE: a new dma-buf of @size bytes, backed by zeroed
 * system pages (the last one only partly used when @size is not a
 * multiple of the page size). Its file can be mmap()ed (MAP_SHARED) for
 * CPU access without any bounce buffer.
 *
 * @layout chooses the pages and the scatterlist map_dma_buf() hands out;
 * the buffer's bytes are the same whatever the layout:
 *
 * TEST_DMABUF_EXP_LAYOUT_PAGES: pages allocated one at a time, one
 *	entry a page (the DMA layer may merge them). @seg_size must be 0.
 * TEST_DMABUF_EXP_LAYOUT_SPLIT: pages allocated one at a time, each
 *	described by entries of @seg_size bytes (256 to the page size - 1),
 *	the last entry of a page shorter: segments whose length is not a
 *	multiple of the page size, and that start inside a page.
 * TEST_DMABUF_EXP_LAYOUT_CONTIG: one physically contiguous allocation
 *	(at most 4 MiB), described by entries of @seg_size bytes (a
 *	multiple of the page size; 0 for the whole buffer), none longer
 *	than the importing device takes in one segment or one mapping
 *	(dma_get_max_seg_size(), dma_max_mapping_size()).
 *
 * A migration (TEST_DMABUF_EXP_MIGRATE) allocates the new pages in the
 * same layout.
 *
 * Errors: EINVAL (a size, flag, layout or @seg_size out of range),
 * ENOMEM, EIO (wedged, see above).
 *
 * @size: (in) bytes, 1 to 64 MiB
 * @flags: (in) TEST_DMABUF_EXP_CLOEXEC or 0
 * @fd: (out) the dma-buf's file descriptor
 * @layout: (in) TEST_DMABUF_EXP_LAYOUT_*
 * @seg_size: (in) see the layouts
 */
struct test_dmabuf_exp_create {
	__u64 size;
	__u32 flags;
	__s32 fd;
	__u32 layout;
	__u32 seg_size;
};

#define TEST_DMABUF_EXP_CLOEXEC		0x1

#define TEST_DMABUF_EXP_LAYOUT_PAGES	0
#define TEST_DMABUF_EXP_LAYOUT_SPLIT	1
#define TEST_DMABUF_EXP_LAYOUT_CONTIG	2

/*
 * TEST_DMABUF_EXP_MOVE: with the reservation lock held, tell every
 * importer to drop its mappings (dma_buf_invalidate_mappings()), then wait
 * for all fences of the reservation object, as an exporter must before it
 * touches the memory. With TEST_DMABUF_EXP_MIGRATE, then also move the
 * contents to newly allocated pages: the old pages are filled with
 * TEST_DMABUF_EXP_POISON and freed once the last mapping of them is
 * unmapped, so an importer that uses a stale mapping moves the wrong
 * bytes, and writes into the old pages are counted (stale_dma).
 *
 * Errors: EINVAL (not a dma-buf of this exporter, unknown flag), EBUSY
 * (migrate while an importer has the buffer pinned), ETIMEDOUT (a fence
 * did not signal within @timeout_ms; nothing was moved), EINTR, ENOMEM,
 * EIO (wedged, see above: nothing was invalidated).
 * On ETIMEDOUT the exporter logs what it waited for (the first time, with
 * the blocked tasks), then waits up to 10 s more, to log whether the
 * fences signalled late.
 *
 * @fd: (in) the dma-buf
 * @flags: (in) 0 or TEST_DMABUF_EXP_MIGRATE
 * @timeout_ms: (in) how long to wait for the fences; 0 means 10 s
 * @fences: (out) fences that had not signalled when the wait began
 */
struct test_dmabuf_exp_move {
	__s32 fd;
	__u32 flags;
	__u32 timeout_ms;
	__u32 fences;
};

#define TEST_DMABUF_EXP_MIGRATE		0x1

/* What old pages hold after a migration. */
#define TEST_DMABUF_EXP_POISON		0x6b

/*
 * TEST_DMABUF_EXP_COUNTERS: the counters of one dma-buf (@fd), or the sum
 * over all dma-bufs this exporter made since it was loaded, live or not
 * (@fd == -1). maps and unmaps count map_dma_buf()/unmap_dma_buf() calls,
 * so maps - unmaps mappings are live.
 */
struct test_dmabuf_exp_counters {
	__s32 fd;
	__u32 pad;
	__u64 buffers;		/* live dma-bufs (0 or 1 for one dma-buf) */
	__u64 attachments;	/* live attachments */
	__u64 pins;		/* live pins */
	__u64 maps;
	__u64 unmaps;
	__u64 invalidations;
	__u64 migrations;
	__u64 fences_waited;	/* unsignalled fences found by MOVE */
	__u64 stale_dma;	/* old pages written after their fences signalled */
};

/*
 * TEST_DMABUF_EXP_WAIT: wait until the dma-buf @fd (or, with @fd == -1,
 * the whole exporter) has no live mapping (TEST_DMABUF_EXP_UNMAPPED), no
 * more than @attachments live attachments (TEST_DMABUF_EXP_DETACHED) and,
 * for the whole exporter only, no more than @buffers live dma-bufs
 * (TEST_DMABUF_EXP_RELEASED). @attachments and @buffers must be 0
 * without the flag that uses them.
 * Importers may drop mappings, attachments and their dma-buf references
 * from a workqueue after the operation that ended them returned; this is
 * how a test waits for that instead of sleeping.
 *
 * Errors: EINVAL, ETIMEDOUT (@timeout_ms passed; 0 means 10 s), EINTR,
 * EIO (wedged, see above, and the condition did not hold within 1 s).
 */
struct test_dmabuf_exp_wait {
	__s32 fd;
	__u32 flags;
	__u32 timeout_ms;
	__u32 buffers;
	__u32 attachments;
};

#define TEST_DMABUF_EXP_UNMAPPED	0x1
#define TEST_DMABUF_EXP_DETACHED	0x2
#define TEST_DMABUF_EXP_RELEASED	0x4

#define TEST_DMABUF_EXP_IOC_CREATE	_IOWR('X', 0xd0, struct test_dmabuf_exp_create)
#define TEST_DMABUF_EXP_IOC_MOVE	_IOWR('X', 0xd1, struct test_dmabuf_exp_move)
#define TEST_DMABUF_EXP_IOC_COUNTERS	_IOWR('X', 0xd2, struct test_dmabuf_exp_counters)
#define TEST_DMABUF_EXP_IOC_WAIT	_IOW('X', 0xd3, struct test_dmabuf_exp_wait)

#endif /* _LIB_TEST_DMABUF_EXPORTER_UAPI_H */
