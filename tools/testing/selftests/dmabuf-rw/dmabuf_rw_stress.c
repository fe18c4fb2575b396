// SPDX-License-Identifier: GPL-2.0
/*
 * Stress of dmabuf read/write via io_uring against the exporter's
 * invalidation: submitter threads keep reads and writes in flight through
 * test-exporter dma-bufs registered as fixed buffers for the NVMe block
 * device named in DMABUF_RW_DEV (without it the tests skip), while an
 * invalidator thread invalidates the dma-bufs, and migrates their
 * contents to new pages, at random intervals.
 *
 * Every sector a write carries describes itself (sector number, the
 * write's sequence number, the buffer's generation) and every read is
 * checked against the last write that completed there. Every completion
 * must be the full length, or -EAGAIN where the submission asked for
 * RWF_NOWAIT; such a request is submitted again without it. At the end
 * all I/O is drained and the exporter must find every mapping unmapped,
 * every attachment gone and no DMA into a page it had retired.
 *
 * The races of the invalidation with the end of a buffer's use have a
 * test each: unregistering, ring exit, process exit, and closing the
 * dma-buf and block device fds, all with I/O in flight.
 *
 * Options, before the harness's own, or from the environment (a guest's
 * kernel command line sets the environment of its init):
 *   --seed N      DMABUF_RW_STRESS_SEED     random seed (default: the clock)
 *   --seconds N   DMABUF_RW_STRESS_SECONDS  bound per stress test (default 5)
 *   --ops N       DMABUF_RW_STRESS_OPS      I/O bound per stress test
 *                                           (default 1000000)
 * The seed is printed; giving it again replays the same choices (the
 * interleaving is the scheduler's).
 */
#include "dmabuf_rw.h"

#include <glob.h>
#include <limits.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "kselftest_harness.h"

#define NR_DMABUFS		2
#define NR_THREADS		2
#define QD			32
#define NR_SLOTS		(NR_THREADS * QD)
/* Each slot has one I/O in flight at most, in its own part of a dma-buf
 * and of the device, so that what it reads back is known.
 */
#define IO_UNIT			4096
#define IO_MAX			(64 * 1024)
#define SLOT_DEV_SIZE		(256 * 1024)
#define SECTORS_PER_SLOT	(SLOT_DEV_SIZE / DMABUF_RW_SECTOR)
#define DMABUF_SIZE		((size_t)NR_SLOTS * IO_MAX)
#define DEV_BASE		(64ULL << 20)
#define DEV_BYTES		(DEV_BASE + (__u64)NR_SLOTS * SLOT_DEV_SIZE)
/* What a read's buffer holds until the read lands. */
#define READ_MARK		0xa5
/* No completion for this long with I/O in flight: the I/O is lost. */
#define WATCHDOG_SEC		30
#define MAX_INTERVAL_US		2000
#define RACE_ROUNDS		20
#define KILL_ROUNDS		8

struct stress;

struct slot {
	struct stress *st;
	unsigned int id;
	unsigned int buf;	/* dma-buf, and registered buffer index */
	__u64 buf_off;		/* this slot's region of the dma-buf */
	__u64 dev_base;		/* this slot's area of the device */
	__u32 next_seq;
	__u32 shadow[SECTORS_PER_SLOT];	/* last write completed per sector */
	/* The slot's I/O, in flight when busy. */
	bool busy, retry, write, nowait;
	__u64 dev_off;
	unsigned int len;
	__u32 seq;
};

/* A ring and the submitters that use it. */
struct stress_ring {
	struct io_uring ring;
	bool live;
	pthread_mutex_t lock;
	unsigned int inflight;
};

struct submitter {
	struct stress *st;
	struct stress_ring *r;
	struct slot *slots;	/* QD of them */
	__u64 rng;
	bool write_only;
	pthread_t thread;
	/* counted under r->lock */
	__u64 reads, writes, bytes, eagain;
};

struct stress {
	int dev_fd;
	unsigned int nr_dmabufs;
	struct dmabuf_rw_buf dbuf[NR_DMABUFS];
	atomic_uint gen[NR_DMABUFS];	/* migrations seen, for the patterns */
	struct stress_ring rings[NR_THREADS];
	unsigned int nr_rings;
	struct submitter sub[NR_THREADS];
	struct slot slots[NR_SLOTS];
	bool nowait;

	/* bounds */
	__u64 seed;
	struct timespec deadline;
	__u64 ops_limit;
	atomic_ullong ops;
	atomic_bool stop;

	/* the invalidator */
	pthread_t inval_thread;
	bool inval_running;
	__u64 inval_rng;
	__u64 invalidations, migrations;
	__u64 inval_max_ms;	/* the longest invalidation */

	pthread_mutex_t fail_lock;
	char failure[1024];
};

static __u64 opt_seed, opt_seconds = 5, opt_ops = 1000000;
static bool opt_seed_given;

static __u64 splitmix64(__u64 *x)
{
	__u64 z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned int rnd(__u64 *state, unsigned int n)
{
	return splitmix64(state) % n;
}

/* Record the first failure and stop everyone. */
static void __printf(2, 3) stress_fail(struct stress *st, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&st->fail_lock);
	if (!st->failure[0]) {
		va_start(ap, fmt);
		vsnprintf(st->failure, sizeof(st->failure), fmt, ap);
		va_end(ap);
		/* Now: if the I/O in flight never ends, the test never reports. */
		ksft_print_msg("first failure: %s\n", st->failure);
	}
	pthread_mutex_unlock(&st->fail_lock);
	atomic_store(&st->stop, true);
}

static __u64 elapsed_ms(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000ULL +
	       (now.tv_nsec - start->tv_nsec) / 1000000;
}

static bool stress_stopping(struct stress *st)
{
	struct timespec now;

	if (atomic_load(&st->stop))
		return true;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec > st->deadline.tv_sec ||
	    (now.tv_sec == st->deadline.tv_sec &&
	     now.tv_nsec >= st->deadline.tv_nsec) ||
	    atomic_load(&st->ops) >= st->ops_limit)
		atomic_store(&st->stop, true);
	return atomic_load(&st->stop);
}

/*
 * A sector as a write leaves it: a header (sector, seq, generation of the
 * dma-buf when it was filled, for the log only) and a body that follows
 * from sector and seq.
 */
struct sector_hdr {
	__u64 sector;
	__u32 seq;
	__u32 gen;
};

static void fill_sector(__u8 *p, __u64 sector, __u32 seq, __u32 gen)
{
	struct sector_hdr hdr = { .sector = sector, .seq = seq, .gen = gen };
	__u64 x = (sector << 32 | seq) * 0x9e3779b97f4a7c15ULL + 1;
	size_t i;

	memcpy(p, &hdr, sizeof(hdr));
	for (i = sizeof(hdr); i < DMABUF_RW_SECTOR; i += sizeof(x)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, sizeof(x));
	}
}

/* Offset of the first byte of @p that is not sector @sector of write @seq. */
static ssize_t check_sector(const __u8 *p, __u64 sector, __u32 seq)
{
	__u8 want[DMABUF_RW_SECTOR];
	struct sector_hdr hdr;
	size_t i;

	memcpy(&hdr, p, sizeof(hdr));
	fill_sector(want, sector, seq, hdr.gen);
	for (i = 0; i < DMABUF_RW_SECTOR; i++)
		if (p[i] != want[i])
			return i;
	return -1;
}

static const char *found_what(const __u8 *p)
{
	size_t i;

	for (i = 0; i < DMABUF_RW_SECTOR && p[i] == p[0]; i++)
		;
	if (i < DMABUF_RW_SECTOR)
		return "other data";
	if (p[0] == READ_MARK)
		return "the read never landed";
	if (p[0] == TEST_DMABUF_EXP_POISON)
		return "the exporter's poison: DMA went to retired pages";
	return "a constant byte";
}

/* Check the sectors of @slot's read that just completed. */
static void verify_read(struct slot *s)
{
	const __u8 *p = (const __u8 *)s->st->dbuf[s->buf].map + s->buf_off;
	unsigned int i;

	for (i = 0; i < s->len / DMABUF_RW_SECTOR; i++) {
		__u64 off = s->dev_off + i * DMABUF_RW_SECTOR;
		__u32 seq = s->shadow[(off - s->dev_base) / DMABUF_RW_SECTOR];
		const __u8 *sec = p + i * DMABUF_RW_SECTOR;
		struct sector_hdr found;
		ssize_t bad;

		bad = check_sector(sec, off / DMABUF_RW_SECTOR, seq);
		if (bad < 0)
			continue;
		memcpy(&found, sec, sizeof(found));
		stress_fail(s->st,
			    "data mismatch: read of %u bytes at device offset %llu into dma-buf %u offset %llu: sector %llu (byte %zd of it, %u into the read) should be write seq %u; found sector %llu seq %u gen %u, byte 0x%02x (%s)",
			    s->len, (unsigned long long)s->dev_off, s->buf,
			    (unsigned long long)s->buf_off,
			    (unsigned long long)(off / DMABUF_RW_SECTOR), bad,
			    i * DMABUF_RW_SECTOR, seq,
			    (unsigned long long)found.sector, found.seq,
			    found.gen, sec[bad], found_what(sec));
		return;
	}
}

/* Prepare @s's next I/O (or its retry) on an SQE of @sub's ring. */
static bool prep_io(struct submitter *sub, struct slot *s)
{
	struct stress *st = sub->st;
	__u8 *p = (__u8 *)st->dbuf[s->buf].map + s->buf_off;
	struct io_uring_sqe *sqe;
	unsigned int i;

	sqe = io_uring_get_sqe(&sub->r->ring);
	if (!sqe) {
		stress_fail(st, "no SQE free with %u I/Os in flight",
			    sub->r->inflight);
		return false;
	}
	if (!s->retry) {
		s->write = sub->write_only || rnd(&sub->rng, 2);
		s->nowait = st->nowait;
		s->len = (1 + rnd(&sub->rng, IO_MAX / IO_UNIT)) * IO_UNIT;
		s->dev_off = s->dev_base + (__u64)IO_UNIT *
			     rnd(&sub->rng, (SLOT_DEV_SIZE - s->len) / IO_UNIT + 1);
		if (s->write) {
			unsigned int gen = atomic_load(&st->gen[s->buf]);

			s->seq = ++s->next_seq;
			for (i = 0; i < s->len / DMABUF_RW_SECTOR; i++)
				fill_sector(p + i * DMABUF_RW_SECTOR,
					    s->dev_off / DMABUF_RW_SECTOR + i,
					    s->seq, gen);
		} else {
			memset(p, READ_MARK, s->len);
		}
	}
	s->retry = false;

	/* For a dma-buf buffer the address is the offset into it. */
	if (s->write)
		io_uring_prep_write_fixed(sqe, st->dev_fd,
					  (void *)(uintptr_t)s->buf_off,
					  s->len, s->dev_off, s->buf);
	else
		io_uring_prep_read_fixed(sqe, st->dev_fd,
					 (void *)(uintptr_t)s->buf_off,
					 s->len, s->dev_off, s->buf);
	if (s->nowait)
		sqe->rw_flags = RWF_NOWAIT;
	io_uring_sqe_set_data(sqe, s);
	s->busy = true;
	sub->r->inflight++;
	return true;
}

static void complete_io(struct submitter *sub, struct slot *s, int res)
{
	struct stress *st = s->st;
	unsigned int i;

	s->busy = false;
	sub->r->inflight--;
	if (res == -EAGAIN && s->nowait) {
		/* Documented for RWF_NOWAIT: the map was gone. Again, blocking. */
		sub->eagain++;
		s->nowait = false;
		s->retry = true;
		return;
	}
	if (res != (int)s->len) {
		stress_fail(st,
			    "%s of %u bytes at device offset %llu, dma-buf %u offset %llu%s: %s (res %d)",
			    s->write ? "write" : "read", s->len,
			    (unsigned long long)s->dev_off, s->buf,
			    (unsigned long long)s->buf_off,
			    s->nowait ? ", RWF_NOWAIT" : "",
			    res < 0 ? strerror(-res) : "short transfer", res);
		return;
	}
	atomic_fetch_add(&st->ops, 1);
	sub->bytes += s->len;
	if (s->write) {
		sub->writes++;
		for (i = 0; i < s->len / DMABUF_RW_SECTOR; i++)
			s->shadow[(s->dev_off - s->dev_base) / DMABUF_RW_SECTOR + i] = s->seq;
	} else {
		sub->reads++;
		verify_read(s);
	}
}

/* Give every idle slot of @sub an I/O and submit. Under sub->r->lock. */
static bool refill(struct submitter *sub)
{
	unsigned int i;
	int ret;

	for (i = 0; i < QD; i++)
		if (!sub->slots[i].busy && !prep_io(sub, &sub->slots[i]))
			return false;
	ret = io_uring_submit(&sub->r->ring);
	if (ret < 0) {
		stress_fail(sub->st, "io_uring_submit: %s", strerror(-ret));
		return false;
	}
	return true;
}

/*
 * Wait for at least one completion and handle all there are. Under
 * sub->r->lock. False when nothing completed in WATCHDOG_SEC.
 */
static bool reap(struct submitter *sub)
{
	struct __kernel_timespec ts = { .tv_sec = WATCHDOG_SEC };
	struct io_uring *ring = &sub->r->ring;
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0;
	int ret;

	ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	if (ret == -EINTR)
		return true;
	if (ret) {
		stress_fail(sub->st, "no completion in %d s with %u I/Os in flight: %s",
			    WATCHDOG_SEC, sub->r->inflight, strerror(-ret));
		return false;
	}
	io_uring_for_each_cqe(ring, head, cqe) {
		struct slot *s = io_uring_cqe_get_data(cqe);
		struct submitter *owner = &sub->st->sub[s->id / QD];

		complete_io(owner, s, cqe->res);
		n++;
	}
	io_uring_cq_advance(ring, n);
	return true;
}

static void *submitter_fn(void *arg)
{
	struct submitter *sub = arg;
	struct stress_ring *r = sub->r;
	bool done = false;

	while (!done) {
		pthread_mutex_lock(&r->lock);
		if (!stress_stopping(sub->st) && !refill(sub))
			done = true;
		else if (!r->inflight)
			done = stress_stopping(sub->st);
		else if (!reap(sub))
			done = true;
		pthread_mutex_unlock(&r->lock);
	}
	return NULL;
}

/* Print every line of @path, each after @tag; return how many. */
static unsigned int show_file(const char *tag, const char *path)
{
	unsigned int n = 0;
	char line[512];
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		ksft_print_msg("  %s: %s\n", tag, strerror(errno));
		return 0;
	}
	for (; fgets(line, sizeof(line), f); n++)
		ksft_print_msg("  %s: %s", tag, line);
	fclose(f);
	return n;
}

/*
 * An invalidation did not end: show the requests the block layer holds
 * for the device (blk-mq debugfs: "busy" has those started in the driver,
 * "dispatch" and the per-CPU lists those waiting for it), so that an I/O
 * lost in the device can be told from one that never reached it, and
 * from none at all (the fence waits on something else).
 */
static void show_disk_requests(struct stress *st)
{
	char link[256], path[PATH_MAX], *disk;
	struct stat sb;
	ssize_t len;
	unsigned int n = 0;
	glob_t g;
	size_t i;

	if (fstat(st->dev_fd, &sb)) {
		ksft_print_msg("the disk's requests: fstat: %s\n",
			       strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u",
		 major(sb.st_rdev), minor(sb.st_rdev));
	len = readlink(path, link, sizeof(link) - 1);
	if (len < 0) {
		ksft_print_msg("%s: %s\n", path, strerror(errno));
		return;
	}
	link[len] = '\0';
	disk = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;

	snprintf(path, sizeof(path), "/sys/block/%s/inflight", disk);
	ksft_print_msg("requests of %s (reads, writes in the driver):\n", disk);
	show_file("inflight", path);
	snprintf(path, sizeof(path),
		 "/sys/kernel/debug/block/%s/hctx*/{busy,dispatch,cpu*/*_rq_list}",
		 disk);
	if (glob(path, GLOB_BRACE, NULL, &g)) {
		ksft_print_msg("%s: nothing (CONFIG_BLK_DEBUG_FS?)\n", path);
		return;
	}
	for (i = 0; i < g.gl_pathc; i++)
		n += show_file(g.gl_pathv[i] + strlen("/sys/kernel/debug/block/"),
			       g.gl_pathv[i]);
	ksft_print_msg("blk-mq: %u requests listed in %zu files\n", n,
		       g.gl_pathc);
	globfree(&g);
}

static void *invalidator_fn(void *arg)
{
	struct stress *st = arg;

	while (!stress_stopping(st)) {
		unsigned int us = rnd(&st->inval_rng, MAX_INTERVAL_US);
		struct timespec delay = { .tv_nsec = us * 1000L };
		unsigned int i = rnd(&st->inval_rng, st->nr_dmabufs);
		bool migrate = rnd(&st->inval_rng, 2);
		struct timespec start;
		__u64 ms;
		int ret;

		/* Load shaping: how long I/O runs between two invalidations. */
		nanosleep(&delay, NULL);
		clock_gettime(CLOCK_MONOTONIC, &start);
		ret = test_dmabuf_exp_move(st->dbuf[i].fd,
					   migrate ? TEST_DMABUF_EXP_MIGRATE : 0);
		ms = elapsed_ms(&start);
		if (ret) {
			stress_fail(st, "invalidating%s dma-buf %u: %s after %llu ms",
				    migrate ? " and migrating" : "", i,
				    strerror(-ret), (unsigned long long)ms);
			if (ret == -ETIMEDOUT)
				show_disk_requests(st);
			break;
		}
		if (ms > st->inval_max_ms)
			st->inval_max_ms = ms;
		st->invalidations++;
		if (migrate) {
			st->migrations++;
			atomic_fetch_add(&st->gen[i], 1);
		}
	}
	return NULL;
}

/*
 * Write every slot's device area with write seq 0, through the page
 * cache-less normal path, so that every read has a known answer.
 */
static int prefill_device(struct stress *st)
{
	__u8 *area;
	unsigned int i, j;
	int ret = 0;

	if (posix_memalign((void **)&area, 4096, SLOT_DEV_SIZE))
		return -ENOMEM;
	for (i = 0; i < NR_SLOTS && !ret; i++) {
		for (j = 0; j < SECTORS_PER_SLOT; j++)
			fill_sector(area + j * DMABUF_RW_SECTOR,
				    st->slots[i].dev_base / DMABUF_RW_SECTOR + j,
				    0, 0);
		if (pwrite(st->dev_fd, area, SLOT_DEV_SIZE,
			   st->slots[i].dev_base) != SLOT_DEV_SIZE)
			ret = -EIO;
	}
	free(area);
	return ret;
}

/* Check the device holds what the slots' shadows say, with plain reads. */
static int check_device(struct stress *st, char *why, size_t len)
{
	__u8 *area;
	unsigned int i, j;
	int ret = 0;

	if (posix_memalign((void **)&area, 4096, SLOT_DEV_SIZE))
		return -ENOMEM;
	for (i = 0; i < NR_SLOTS && !ret; i++) {
		struct slot *s = &st->slots[i];

		if (pread(st->dev_fd, area, SLOT_DEV_SIZE, s->dev_base) !=
		    SLOT_DEV_SIZE) {
			ret = -EIO;
			break;
		}
		for (j = 0; j < SECTORS_PER_SLOT; j++) {
			__u64 sector = s->dev_base / DMABUF_RW_SECTOR + j;
			ssize_t bad = check_sector(area + j * DMABUF_RW_SECTOR,
						   sector, s->shadow[j]);

			if (bad >= 0) {
				snprintf(why, len, "sector %llu, byte %zd: not write seq %u",
					 (unsigned long long)sector, bad,
					 s->shadow[j]);
				ret = -EILSEQ;
				break;
			}
		}
	}
	free(area);
	return ret;
}

static int ring_setup(struct stress *st, struct stress_ring *r)
{
	unsigned int i;
	int ret;

	ret = dmabuf_rw_ring_init(&r->ring, 2 * NR_SLOTS);
	if (ret)
		return ret;
	r->live = true;
	ret = io_uring_register_buffers_sparse(&r->ring, NR_DMABUFS);
	for (i = 0; !ret && i < st->nr_dmabufs; i++) {
		ret = dmabuf_rw_register_dmabuf(&r->ring, i, st->dev_fd,
						st->dbuf[i].fd);
		ret = ret == 1 ? 0 : ret < 0 ? ret : -EIO;
	}
	return ret;
}

static void ring_teardown(struct stress_ring *r)
{
	if (r->live)
		io_uring_queue_exit(&r->ring);
	r->live = false;
	r->inflight = 0;
}

static void stress_init(struct stress *st, unsigned int nr_dmabufs,
			unsigned int nr_rings)
{
	unsigned int i;

	st->dev_fd = -1;
	st->nr_dmabufs = nr_dmabufs;
	st->nr_rings = nr_rings;
	pthread_mutex_init(&st->fail_lock, NULL);
	for (i = 0; i < NR_DMABUFS; i++)
		dmabuf_rw_buf_init(&st->dbuf[i]);
	for (i = 0; i < NR_THREADS; i++)
		pthread_mutex_init(&st->rings[i].lock, NULL);
	st->seed = opt_seed;
	st->inval_rng = st->seed ^ 0x1234567;
	for (i = 0; i < NR_THREADS; i++) {
		struct submitter *sub = &st->sub[i];

		sub->st = st;
		sub->r = &st->rings[i % nr_rings];
		sub->slots = &st->slots[i * QD];
		sub->rng = st->seed + i + 1;
	}
	for (i = 0; i < NR_SLOTS; i++) {
		struct slot *s = &st->slots[i];

		s->st = st;
		s->id = i;
		s->buf = i % nr_dmabufs;
		s->buf_off = (__u64)(i / nr_dmabufs) * IO_MAX;
		s->dev_base = DEV_BASE + (__u64)i * SLOT_DEV_SIZE;
	}
}

static void stress_arm(struct stress *st, __u64 seconds)
{
	clock_gettime(CLOCK_MONOTONIC, &st->deadline);
	st->deadline.tv_sec += seconds;
	st->ops_limit = opt_ops;
	atomic_store(&st->ops, 0);
	atomic_store(&st->stop, false);
}

static int start_invalidator(struct stress *st)
{
	int ret = pthread_create(&st->inval_thread, NULL, invalidator_fn, st);

	st->inval_running = !ret;
	return -ret;
}

static void stop_invalidator(struct stress *st)
{
	atomic_store(&st->stop, true);
	if (st->inval_running)
		pthread_join(st->inval_thread, NULL);
	st->inval_running = false;
}

/*
 * Set up a stress run: @nr_dmabufs test-exporter dma-bufs in @layout
 * (TEST_DMABUF_EXP_LAYOUT_*, whole segments), registered in each of
 * @nr_rings rings for the device, whose test area is written. False when
 * the test was skipped.
 */
static bool run_setup(struct __test_metadata *_metadata,
		      struct stress **out, const char **dev_path,
		      struct test_dmabuf_exp_counters *before,
		      unsigned int nr_dmabufs, unsigned int nr_rings,
		      bool nowait, __u32 layout)
{
	char why[DMABUF_RW_WHY_LEN];
	struct stress *st;
	__u64 dev_size;
	unsigned int i;
	int ret;

	st = calloc(1, sizeof(*st));
	ASSERT_NE(NULL, st);
	*out = st;
	stress_init(st, nr_dmabufs, nr_rings);
	st->nowait = nowait;

	*dev_path = dmabuf_rw_dev_path();
	st->dev_fd = dmabuf_rw_dev_open(*dev_path, why, sizeof(why));
	if (st->dev_fd == -ENODEV)
		SKIP(return false, "%s", why);
	ASSERT_LE(0, st->dev_fd) TH_LOG("%s", why);
	ASSERT_EQ(0, ioctl(st->dev_fd, BLKGETSIZE64, &dev_size));
	if (dev_size < DEV_BYTES)
		SKIP(return false, "%s: %llu bytes is too small", *dev_path,
		     (unsigned long long)dev_size);
	if (access("/proc/sys/kernel/io_uring_disabled", F_OK))
		SKIP(return false, "io_uring not available (CONFIG_IO_URING)");

	ret = test_dmabuf_exp_counters(-1, before);
	if (ret == -ENOENT)
		SKIP(return false, "%s",
		     dmabuf_rw_exporter_missing(DMABUF_RW_TEST_EXPORTER));
	ASSERT_EQ(0, ret) TH_LOG("exporter counters: %s", strerror(-ret));
	for (i = 0; i < st->nr_dmabufs; i++) {
		ret = dmabuf_rw_buf_create_layout(&st->dbuf[i],
						  DMABUF_RW_TEST_EXPORTER,
						  DMABUF_SIZE, layout, 0);
		ASSERT_EQ(0, ret)
			TH_LOG("creating dma-buf %u: %s", i, strerror(-ret));
	}
	ASSERT_EQ(0, prefill_device(st));
	for (i = 0; i < st->nr_rings; i++) {
		ret = ring_setup(st, &st->rings[i]);
		ASSERT_EQ(0, ret) TH_LOG("ring %u: %s", i, strerror(-ret));
	}
	TH_LOG("seed %llu (replay: --seed %llu, or DMABUF_RW_STRESS_SEED=%llu)",
	       (unsigned long long)st->seed, (unsigned long long)st->seed,
	       (unsigned long long)st->seed);
	return true;
}

/*
 * Stop everything, exit the rings, and expect every dma-buf still open
 * unmapped and detached, with no DMA into retired pages.
 */
static void run_teardown(struct __test_metadata *_metadata,
			 struct stress *st)
{
	unsigned int i;

	if (!st)
		return;
	stop_invalidator(st);
	for (i = 0; i < NR_THREADS; i++)
		ring_teardown(&st->rings[i]);
	for (i = 0; i < st->nr_dmabufs; i++)
		if (st->dbuf[i].fd >= 0)
			DMABUF_RW_EXPECT_SETTLED(st->dbuf[i].fd,
						 "after the rings' exit");
	for (i = 0; i < NR_DMABUFS; i++)
		dmabuf_rw_buf_destroy(&st->dbuf[i]);
	if (st->dev_fd >= 0)
		close(st->dev_fd);
	free(st);
}

FIXTURE(stress) {
	struct stress *st;
	const char *dev_path;
	struct test_dmabuf_exp_counters before;
};

FIXTURE_VARIANT(stress) {
	unsigned int nr_dmabufs;
	unsigned int nr_rings;	/* the threads share a ring when 1 */
	bool nowait;
	__u32 layout;
};

/* Each thread its ring; both dma-bufs in both rings. */
FIXTURE_VARIANT_ADD(stress, private_rings) {
	.nr_dmabufs = 2, .nr_rings = 2,
};

/* The threads submit to one ring and reap each other's completions. */
FIXTURE_VARIANT_ADD(stress, shared_ring) {
	.nr_dmabufs = 2, .nr_rings = 1,
};

/* One dma-buf in two rings: each invalidation hits both importers. */
FIXTURE_VARIANT_ADD(stress, one_dmabuf_two_rings) {
	.nr_dmabufs = 1, .nr_rings = 2,
};

/* Every I/O asks for RWF_NOWAIT: -EAGAIN while the map is gone. */
FIXTURE_VARIANT_ADD(stress, nowait) {
	.nr_dmabufs = 2, .nr_rings = 2, .nowait = true,
};

/*
 * Each dma-buf one physically contiguous allocation, in as few segments
 * as the DMA mapping takes, and contiguous again after each migration.
 */
FIXTURE_VARIANT_ADD(stress, contig_dmabufs) {
	.nr_dmabufs = 2, .nr_rings = 2,
	.layout = TEST_DMABUF_EXP_LAYOUT_CONTIG,
};

FIXTURE_SETUP(stress)
{
	run_setup(_metadata, &self->st, &self->dev_path, &self->before,
		  variant->nr_dmabufs, variant->nr_rings, variant->nowait,
		  variant->layout);
}

FIXTURE_TEARDOWN(stress)
{
	run_teardown(_metadata, self->st);
}

TEST_F_TIMEOUT(stress, io_during_invalidation, 240)
{
	struct stress *st = self->st;
	struct test_dmabuf_exp_counters c, sum = { 0 };
	__u64 reads = 0, writes = 0, bytes = 0, eagain = 0;
	struct timespec start;
	unsigned int i;
	char why[256];
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &start);
	stress_arm(st, opt_seconds);
	ASSERT_EQ(0, start_invalidator(st));
	for (i = 0; i < NR_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&st->sub[i].thread, NULL,
					    submitter_fn, &st->sub[i]));
	for (i = 0; i < NR_THREADS; i++)
		pthread_join(st->sub[i].thread, NULL);
	stop_invalidator(st);
	ASSERT_EQ('\0', st->failure[0]) TH_LOG("%s", st->failure);

	for (i = 0; i < NR_THREADS; i++) {
		reads += st->sub[i].reads;
		writes += st->sub[i].writes;
		bytes += st->sub[i].bytes;
		eagain += st->sub[i].eagain;
	}
	/* What the completions said is on the device must be there. */
	ret = check_device(st, why, sizeof(why));
	ASSERT_EQ(0, ret) TH_LOG("after the stress: %s", ret == -EILSEQ ? why : strerror(-ret));

	for (i = 0; i < st->nr_rings; i++) {
		ASSERT_EQ(0, io_uring_unregister_buffers(&st->rings[i].ring));
		ring_teardown(&st->rings[i]);
	}
	for (i = 0; i < st->nr_dmabufs; i++) {
		ret = test_dmabuf_exp_settle(st->dbuf[i].fd, &c);
		EXPECT_EQ(0, ret)
			TH_LOG("dma-buf %u after unregistering: %s: %s", i,
			       test_dmabuf_exp_str(&c, why, sizeof(why)),
			       strerror(-ret));
		sum.maps += c.maps;
		sum.invalidations += c.invalidations;
		sum.migrations += c.migrations;
		sum.fences_waited += c.fences_waited;
	}
	TH_LOG("%llu I/Os (%llu reads, %llu writes, %llu MiB) in %llu ms",
	       (unsigned long long)(reads + writes), (unsigned long long)reads,
	       (unsigned long long)writes, (unsigned long long)(bytes >> 20),
	       (unsigned long long)elapsed_ms(&start));
	TH_LOG("%llu invalidations (%llu with migration), %llu fences waited for, %llu maps",
	       (unsigned long long)st->invalidations,
	       (unsigned long long)st->migrations,
	       (unsigned long long)sum.fences_waited,
	       (unsigned long long)sum.maps);
	TH_LOG("the longest invalidation took %llu ms",
	       (unsigned long long)st->inval_max_ms);
	TH_LOG("errors: %llu EAGAIN (RWF_NOWAIT, submitted again), 0 other; 0 mismatches",
	       (unsigned long long)eagain);

	EXPECT_EQ(st->invalidations, sum.invalidations);
	EXPECT_EQ(st->migrations, sum.migrations);
	/*
	 * Each importer maps again only after an invalidation: at most one
	 * map per ring per invalidation epoch of each dma-buf.
	 */
	EXPECT_GE((sum.invalidations + st->nr_dmabufs) * st->nr_rings,
		  sum.maps);
	/*
	 * With 64 I/Os kept in flight, invalidations must have found I/O in
	 * flight and waited for the importers' fences: else this test did
	 * not test what it is for.
	 */
	EXPECT_LT(0, sum.fences_waited);
	if (st->nowait)
		EXPECT_LT(0, eagain);
}

/*
 * Races: the end of a buffer's use, with I/O in flight, against the
 * invalidator; two dma-bufs, each in two rings.
 */
FIXTURE(race) {
	struct stress *st;
	const char *dev_path;
	struct test_dmabuf_exp_counters before;
};

FIXTURE_SETUP(race)
{
	run_setup(_metadata, &self->st, &self->dev_path, &self->before,
		  NR_DMABUFS, NR_THREADS, false, TEST_DMABUF_EXP_LAYOUT_PAGES);
}

FIXTURE_TEARDOWN(race)
{
	run_teardown(_metadata, self->st);
}

/* Submit an I/O on every idle slot of @sub, without waiting. */
static void burst(struct submitter *sub)
{
	pthread_mutex_lock(&sub->r->lock);
	refill(sub);
	pthread_mutex_unlock(&sub->r->lock);
}

/* Complete every I/O in flight on @sub's ring. */
static void drain(struct submitter *sub)
{
	pthread_mutex_lock(&sub->r->lock);
	while (sub->r->inflight && reap(sub))
		;
	pthread_mutex_unlock(&sub->r->lock);
}

/*
 * RACE_ROUNDS times, under the invalidator: a burst of I/O on a new ring,
 * then, with the I/O in flight, its buffers unregistered (@unregister:
 * the I/O keeps what it imported) and the I/O drained, or the ring
 * exited at once (it waits for the I/O itself).
 */
static void end_during_io(struct __test_metadata *_metadata,
			  struct stress *st, bool unregister)
{
	struct submitter *sub = &st->sub[0];
	unsigned int round, i;
	int ret;

	stress_arm(st, 3600);
	ASSERT_EQ(0, start_invalidator(st));
	for (round = 0; round < RACE_ROUNDS && !st->failure[0]; round++) {
		if (round) {
			ret = ring_setup(st, sub->r);
			ASSERT_EQ(0, ret) TH_LOG("ring: %s", strerror(-ret));
		}
		burst(sub);
		if (unregister) {
			ASSERT_EQ(0, io_uring_unregister_buffers(&sub->r->ring));
			drain(sub);
		}
		ring_teardown(sub->r);
		for (i = 0; i < QD; i++)
			sub->slots[i].busy = false;
	}
	stop_invalidator(st);
	ASSERT_EQ('\0', st->failure[0]) TH_LOG("%s", st->failure);
	TH_LOG("%u rounds, %llu invalidations, the longest %llu ms", round,
	       (unsigned long long)st->invalidations,
	       (unsigned long long)st->inval_max_ms);
}

TEST_F_TIMEOUT(race, unregister_during_io, 240)
{
	char why[256];
	int ret;

	end_during_io(_metadata, self->st, true);
	/* Every write was reaped: the device holds what they wrote. */
	ret = check_device(self->st, why, sizeof(why));
	ASSERT_EQ(0, ret) TH_LOG("%s", ret == -EILSEQ ? why : strerror(-ret));
}

/*
 * What the writes in flight at each exit left is not known: the device
 * is not checked. Teardown: every mapping unmapped, every attachment gone.
 */
TEST_F_TIMEOUT(race, ring_exit_during_io, 240)
{
	end_during_io(_metadata, self->st, false);
}

/* The child: keep I/O in flight until killed. */
static void __noreturn io_until_killed(struct stress *st, int ready_fd)
{
	struct submitter *sub = &st->sub[0];
	bool told = false;

	/* The ring inherited is the parent's: make one of our own. */
	ring_teardown(sub->r);
	if (ring_setup(st, sub->r))
		_exit(3);
	for (;;) {
		burst(sub);
		if (st->failure[0]) {
			fprintf(stderr, "child: %s\n", st->failure);
			_exit(1);
		}
		if (!told) {
			told = write(ready_fd, "x", 1) == 1;
			if (!told)
				_exit(2);
		}
		pthread_mutex_lock(&sub->r->lock);
		reap(sub);
		pthread_mutex_unlock(&sub->r->lock);
	}
}

TEST_F_TIMEOUT(race, kill_during_io, 240)
{
	struct stress *st = self->st;
	__u64 attached[NR_DMABUFS];
	struct test_dmabuf_exp_counters c;
	unsigned int round, i;
	int status, ret;

	/* What our own rings hold: each child's ring adds to it. */
	for (i = 0; i < st->nr_dmabufs; i++) {
		ASSERT_EQ(0, test_dmabuf_exp_counters(st->dbuf[i].fd, &c));
		attached[i] = c.attachments;
	}
	stress_arm(st, 3600);
	for (round = 0; round < KILL_ROUNDS; round++) {
		int pipefd[2];
		pid_t pid;
		char x;

		ASSERT_EQ(0, pipe2(pipefd, O_CLOEXEC));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			close(pipefd[0]);
			io_until_killed(st, pipefd[1]);
		}
		close(pipefd[1]);
		ASSERT_EQ(1, read(pipefd[0], &x, 1))
			TH_LOG("the child did not start its I/O");
		close(pipefd[0]);
		ret = test_dmabuf_exp_move(st->dbuf[round % 2].fd,
					   TEST_DMABUF_EXP_MIGRATE);
		EXPECT_EQ(0, ret) TH_LOG("MOVE: %s", strerror(-ret));
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFSIGNALED(status))
			TH_LOG("the child exited %d", WEXITSTATUS(status));
		/*
		 * The dead child's ring is torn down from a workqueue: its
		 * buffers, and so its attachments, go once the last of its
		 * I/O completed. Wait for that, so none of its writes lands
		 * after the area is written again for the next child.
		 */
		for (i = 0; i < st->nr_dmabufs; i++) {
			struct test_dmabuf_exp_wait wait = {
				.fd = st->dbuf[i].fd,
				.flags = TEST_DMABUF_EXP_DETACHED,
				.attachments = attached[i],
			};

			ret = test_dmabuf_exp_ioctl(TEST_DMABUF_EXP_IOC_WAIT,
						    &wait);
			ASSERT_EQ(0, ret)
				TH_LOG("round %u: the dead child kept dma-buf %u: %s",
				       round, i, strerror(-ret));
		}
		ASSERT_EQ(0, prefill_device(st));
	}
	/* Teardown: the killed children's rings let go of everything. */
}

TEST_F_TIMEOUT(race, close_fds_during_io, 240)
{
	struct test_dmabuf_exp_wait wait = {
		.fd = -1,
		.flags = TEST_DMABUF_EXP_UNMAPPED | TEST_DMABUF_EXP_DETACHED |
			 TEST_DMABUF_EXP_RELEASED,
		.buffers = self->before.buffers,
	};
	struct stress *st = self->st;
	struct submitter *sub = &st->sub[0];
	unsigned int i;
	char why[256];
	int dev_fd, ret;

	stress_arm(st, 3600);
	sub->write_only = true;
	burst(sub);
	ASSERT_EQ(0, test_dmabuf_exp_move(st->dbuf[0].fd, 0));
	/* Only the ring still holds the dma-bufs and the device. */
	dev_fd = st->dev_fd;
	st->dev_fd = -1;
	for (i = 0; i < st->nr_dmabufs; i++)
		dmabuf_rw_buf_destroy(&st->dbuf[i]);
	ASSERT_EQ(0, close(dev_fd));
	drain(sub);
	ASSERT_EQ('\0', st->failure[0]) TH_LOG("%s", st->failure);

	ring_teardown(&st->rings[0]);
	ring_teardown(&st->rings[1]);
	ret = test_dmabuf_exp_ioctl(TEST_DMABUF_EXP_IOC_WAIT, &wait);
	EXPECT_EQ(0, ret) TH_LOG("dma-bufs not released: %s", strerror(-ret));

	st->dev_fd = open(self->dev_path, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, st->dev_fd);
	ret = check_device(st, why, sizeof(why));
	ASSERT_EQ(0, ret) TH_LOG("%s", ret == -EILSEQ ? why : strerror(-ret));
}

static bool parse_u64(const char *s, __u64 *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return s[0] && !*end && !errno;
}

/* Our options first; the harness gets the rest. */
static int parse_options(int *argc, char **argv)
{
	static const char * const env[] = {
		"DMABUF_RW_STRESS_SEED", "DMABUF_RW_STRESS_SECONDS",
		"DMABUF_RW_STRESS_OPS",
	};
	static const char * const opt[] = { "--seed", "--seconds", "--ops" };
	__u64 *val[] = { &opt_seed, &opt_seconds, &opt_ops };
	int i, j, out = 1;

	for (j = 0; j < 3; j++) {
		const char *e = getenv(env[j]);

		if (e && *e && !parse_u64(e, val[j])) {
			fprintf(stderr, "%s=%s: not a number\n", env[j], e);
			return -1;
		}
		if (e && *e && j == 0)
			opt_seed_given = true;
	}
	for (i = 1; i < *argc; i++) {
		for (j = 0; j < 3; j++)
			if (!strcmp(argv[i], opt[j]))
				break;
		if (j == 3) {
			argv[out++] = argv[i];
			continue;
		}
		if (i + 1 >= *argc || !parse_u64(argv[i + 1], val[j])) {
			fprintf(stderr, "%s needs a number\n", opt[j]);
			return -1;
		}
		if (j == 0)
			opt_seed_given = true;
		i++;
	}
	*argc = out;
	argv[out] = NULL;
	if (!opt_seed_given) {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		opt_seed = now.tv_sec * 1000000ULL + now.tv_nsec / 1000;
	}
	if (!opt_seconds || !opt_ops) {
		fprintf(stderr, "--seconds and --ops must be positive\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (parse_options(&argc, argv))
		return KSFT_FAIL;
	return test_harness_run(argc, argv);
}
