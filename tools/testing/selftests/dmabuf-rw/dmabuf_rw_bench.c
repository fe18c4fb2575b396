// SPDX-License-Identifier: GPL-2.0
/*
 * Benchmark of O_DIRECT random reads and writes with io_uring on a block
 * device (-d DEV or DMABUF_RW_DEV; no default: it is overwritten), the
 * buffer being one of:
 *
 *   user      plain user memory (IORING_OP_READ/WRITE): pinned and mapped
 *             for DMA on every I/O
 *   fixed     a registered fixed buffer (READ/WRITE_FIXED): pinned once,
 *             mapped for DMA on every I/O
 *   udmabuf   a udmabuf dma-buf registered for the device: mapped once
 *   exporter  a test-exporter dma-buf registered for the device: mapped
 *             once
 *
 * for every combination of the kinds, operations, block sizes and queue
 * depths given, each run repeated. A run stops after a number of I/Os or
 * a duration, whichever comes first, and prints one line:
 *
 *   bench kind=K op=O bs=B qd=Q rep=R ios=N sec=S iops=I cpu_ns=C
 *         task_ns=T p50_us=L p99_us=L p999_us=L
 *
 * task_ns is this process's user + system time per I/O (all its threads,
 * io-wq workers included; the scheduler's runtime, not tick samples): the
 * figure to compare. cpu_ns is the CPU time of the whole machine per
 * I/O: the run's elapsed time on every online CPU less their idle and
 * iowait time from /proc/stat, so interrupts and softirqs count wherever
 * they ran. Its resolution is /proc/stat's clock tick (10 ms) over the
 * run, and under TCG it reads lower than task_ns at queue depth 1, which
 * it cannot be: use it for ratios only. The latencies are from the
 * preparation of an SQE (submitted at the next io_uring_submit_and_wait,
 * once the completions at hand are handled) to the handling of its
 * completion, over the first million I/Os of a run. At the end a
 * table gives, per cell, the median of the runs and their spread
 * (max - min, in % of the median).
 *
 * The device's contents are overwritten. Not a test: it is built with
 * the kselftests and not run by default (ci/bench runs it).
 */
#include "dmabuf_rw.h"

#include <getopt.h>
#include <math.h>
#include <time.h>
#include <sys/resource.h>
#include <linux/fs.h>

enum bench_kind { KIND_USER, KIND_FIXED, KIND_UDMABUF, KIND_EXPORTER, NR_KINDS };

static const char *const kind_names[NR_KINDS] = {
	"user", "fixed", "udmabuf", "exporter",
};

#define MAX_LIST	8
#define MAX_QD		256
#define MAX_BS		(1024 * 1024)
#define MAX_REPS	32
#define MAX_LAT		1048576UL

struct bench_opts {
	unsigned int kinds[NR_KINDS];
	unsigned int nr_kinds;
	bool ops[2];			/* [0] read, [1] write */
	unsigned int bs[MAX_LIST];
	unsigned int nr_bs;
	unsigned int qd[MAX_LIST];
	unsigned int nr_qd;
	unsigned long nr_ios;
	double seconds;
	unsigned int reps;
	__u64 seed;
	const char *dev;
};

struct bench_result {
	unsigned long ios;
	double sec;
	double iops;
	double cpu_ns;
	double task_ns;
	double p50_us, p99_us, p999_us;
};

/* One ring, one buffer of qd blocks, and the latencies of a run. */
struct bench_ctx {
	struct io_uring ring;
	bool ring_ready;
	int dev_fd;
	enum bench_kind kind;
	bool write;
	unsigned int bs, qd;
	__u64 dev_blocks;		/* device size in bs blocks */
	__u64 rng;
	void *user_buf;			/* user and fixed kinds */
	struct dmabuf_rw_buf dbuf;	/* udmabuf and exporter kinds */
	struct timespec *submitted;	/* per slot */
	__u64 *lat_ns;
	unsigned long nr_lat, max_lat;
};

static double ts_ns(const struct timespec *ts)
{
	return ts->tv_sec * 1e9 + ts->tv_nsec;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts_ns(&ts);
}

/* Idle and iowait time of all CPUs, in clock ticks, from /proc/stat. */
static int idle_ticks(unsigned long long *idle)
{
	unsigned long long v[5];
	FILE *f;
	int n;

	f = fopen("/proc/stat", "re");
	if (!f)
		return -errno;
	/* user nice system idle iowait ... */
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu",
		   &v[0], &v[1], &v[2], &v[3], &v[4]);
	fclose(f);
	if (n != 5)
		return -EIO;
	*idle = v[3] + v[4];
	return 0;
}

static double task_cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

static __u64 next_block(struct bench_ctx *c)
{
	/* xorshift64 */
	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	return c->rng % c->dev_blocks;
}

static int prep_io(struct bench_ctx *c, unsigned int slot)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);
	__u64 dev_off = next_block(c) * c->bs;
	size_t buf_off = (size_t)slot * c->bs;
	void *addr;

	if (!sqe)
		return -EBUSY;
	switch (c->kind) {
	case KIND_USER:
		addr = (char *)c->user_buf + buf_off;
		if (c->write)
			io_uring_prep_write(sqe, c->dev_fd, addr, c->bs, dev_off);
		else
			io_uring_prep_read(sqe, c->dev_fd, addr, c->bs, dev_off);
		break;
	case KIND_FIXED:
		addr = (char *)c->user_buf + buf_off;
		goto fixed;
	default:
		/* For a dma-buf buffer the address is the offset into it. */
		addr = (void *)(uintptr_t)buf_off;
fixed:
		if (c->write)
			io_uring_prep_write_fixed(sqe, c->dev_fd, addr, c->bs,
						  dev_off, 0);
		else
			io_uring_prep_read_fixed(sqe, c->dev_fd, addr, c->bs,
						 dev_off, 0);
		break;
	}
	io_uring_sqe_set_data64(sqe, slot);
	clock_gettime(CLOCK_MONOTONIC, &c->submitted[slot]);
	return 0;
}

/*
 * Keep qd I/Os in flight until @nr_ios have completed or @deadline_ns has
 * passed, then drain. With @record, completion latencies go into
 * c->lat_ns. Returns the number of I/Os completed or a negative errno
 * (-EIO when an I/O did not transfer its full length).
 */
static long run_ios(struct bench_ctx *c, unsigned long nr_ios,
		    double deadline_ns, bool record)
{
	unsigned long submitted = 0, done = 0;
	unsigned int slot, inflight = 0;
	struct io_uring_cqe *cqe;
	bool stop = false;
	int ret;

	for (slot = 0; slot < c->qd && submitted < nr_ios; slot++, submitted++) {
		ret = prep_io(c, slot);
		if (ret)
			return ret;
		inflight++;
	}
	while (inflight) {
		ret = io_uring_submit_and_wait(&c->ring, 1);
		if (ret == -EINTR)
			continue;
		if (ret < 0)
			return ret;
		while (!io_uring_peek_cqe(&c->ring, &cqe)) {
			struct timespec now;

			slot = io_uring_cqe_get_data64(cqe);
			if (cqe->res != (int)c->bs) {
				fprintf(stderr, "bench: %s %s of %u bytes: %s\n",
					kind_names[c->kind],
					c->write ? "write" : "read", c->bs,
					cqe->res < 0 ? strerror(-cqe->res) :
					"short transfer");
				return cqe->res < 0 ? cqe->res : -EIO;
			}
			io_uring_cqe_seen(&c->ring, cqe);
			inflight--;
			done++;
			if (record && c->nr_lat < c->max_lat) {
				clock_gettime(CLOCK_MONOTONIC, &now);
				c->lat_ns[c->nr_lat++] = ts_ns(&now) -
					ts_ns(&c->submitted[slot]);
			}
			if (!stop && ((done & 63) == 0 || done == 1) &&
			    now_ns() >= deadline_ns)
				stop = true;
			if (stop || submitted >= nr_ios)
				continue;
			ret = prep_io(c, slot);
			if (ret)
				return ret;
			submitted++;
			inflight++;
		}
	}
	return done;
}

static void ctx_destroy(struct bench_ctx *c)
{
	if (c->ring_ready)
		io_uring_queue_exit(&c->ring);
	dmabuf_rw_buf_destroy(&c->dbuf);
	free(c->user_buf);
	free(c->submitted);
	free(c->lat_ns);
}

/* Set up ring and buffer for one cell. Returns 0 or a negative errno. */
static int ctx_init(struct bench_ctx *c, const struct bench_opts *o,
		    enum bench_kind kind, bool write, unsigned int bs,
		    unsigned int qd, int dev_fd, __u64 dev_size)
{
	size_t page = sysconf(_SC_PAGESIZE);
	/* udmabuf and the test exporter take whole pages */
	size_t size = ((size_t)bs * qd + page - 1) / page * page;
	struct iovec iov;
	int ret;

	memset(c, 0, sizeof(*c));
	dmabuf_rw_buf_init(&c->dbuf);
	c->dev_fd = dev_fd;
	c->kind = kind;
	c->write = write;
	c->bs = bs;
	c->qd = qd;
	c->dev_blocks = dev_size / bs;
	c->max_lat = o->nr_ios < MAX_LAT ? o->nr_ios : MAX_LAT;
	if (!c->dev_blocks)
		return -ENOSPC;
	c->submitted = calloc(qd, sizeof(*c->submitted));
	c->lat_ns = calloc(c->max_lat, sizeof(*c->lat_ns));
	if (!c->submitted || !c->lat_ns)
		return -ENOMEM;

	ret = dmabuf_rw_ring_init(&c->ring, qd);
	if (ret)
		return ret;
	c->ring_ready = true;

	switch (kind) {
	case KIND_USER:
	case KIND_FIXED:
		ret = posix_memalign(&c->user_buf, 4096, size);
		if (ret)
			return -ret;
		memset(c->user_buf, 0x5a, size);
		if (kind == KIND_FIXED) {
			iov.iov_base = c->user_buf;
			iov.iov_len = size;
			ret = io_uring_register_buffers(&c->ring, &iov, 1);
		}
		return ret;
	default:
		ret = dmabuf_rw_buf_create(&c->dbuf, kind == KIND_UDMABUF ?
					   DMABUF_RW_UDMABUF :
					   DMABUF_RW_TEST_EXPORTER, size);
		if (ret)
			return ret;
		ret = io_uring_register_buffers_sparse(&c->ring, 1);
		if (ret)
			return ret;
		ret = dmabuf_rw_register_dmabuf(&c->ring, 0, dev_fd,
						c->dbuf.fd);
		return ret < 0 ? ret : 0;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static double percentile_us(const __u64 *v, unsigned long n, double p)
{
	unsigned long i;

	if (!n)
		return 0;
	i = (unsigned long)ceil(p * n) - 1;
	if (i >= n)
		i = n - 1;
	return v[i] / 1e3;
}

/* One measured run of a set-up cell. Returns 0 or a negative errno. */
static int bench_run(struct bench_ctx *c, const struct bench_opts *o,
		     struct bench_result *r)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned long long idle0, idle1;
	double t0, t1, task0, task1;
	long ticks = sysconf(_SC_CLK_TCK);
	unsigned long warmup;
	long done;
	int ret;

	/* The first I/Os map a dma-buf: not part of the figures. */
	warmup = 4UL * c->qd;
	done = run_ios(c, warmup, now_ns() + 1e9 * o->seconds, false);
	if (done < 0)
		return done;

	c->nr_lat = 0;
	ret = idle_ticks(&idle0);
	if (ret)
		return ret;
	task0 = task_cpu_ns();
	t0 = now_ns();
	done = run_ios(c, o->nr_ios, t0 + 1e9 * o->seconds, true);
	t1 = now_ns();
	task1 = task_cpu_ns();
	ret = idle_ticks(&idle1);
	if (done < 0)
		return done;
	if (ret)
		return ret;
	if (!done)
		return -EIO;

	qsort(c->lat_ns, c->nr_lat, sizeof(*c->lat_ns), cmp_u64);
	r->ios = done;
	r->sec = (t1 - t0) / 1e9;
	r->iops = done / r->sec;
	r->cpu_ns = ((t1 - t0) * cpus - (idle1 - idle0) * (1e9 / ticks)) / done;
	if (r->cpu_ns < 0)
		r->cpu_ns = 0;
	r->task_ns = (task1 - task0) / done;
	r->p50_us = percentile_us(c->lat_ns, c->nr_lat, 0.50);
	r->p99_us = percentile_us(c->lat_ns, c->nr_lat, 0.99);
	r->p999_us = percentile_us(c->lat_ns, c->nr_lat, 0.999);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of @n values, and their spread (max - min) in % of it. */
static double median(const double *v, unsigned int n, double *spread)
{
	double s[MAX_REPS];
	double m;

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	*spread = m > 0 ? 100 * (s[n - 1] - s[0]) / m : 0;
	return m;
}

struct cell_summary {
	enum bench_kind kind;
	bool write;
	unsigned int bs, qd;
	double iops, iops_spread, cpu_ns, cpu_spread, task_ns, p50, p99;
};

/* Run every rep of one cell and summarise it in @s. */
static int bench_cell(const struct bench_opts *o, enum bench_kind kind,
		      bool write, unsigned int bs, unsigned int qd, int dev_fd,
		      __u64 dev_size, struct cell_summary *s)
{
	double iops[MAX_REPS], cpu[MAX_REPS], task[MAX_REPS];
	double p50[MAX_REPS], p99[MAX_REPS], unused;
	struct bench_result r = { 0 };
	struct bench_ctx c;
	unsigned int rep;
	int ret;

	for (rep = 0; rep < o->reps; rep++) {
		ret = ctx_init(&c, o, kind, write, bs, qd, dev_fd, dev_size);
		/* Each rep its own offsets, reproducible from the seed. */
		c.rng = o->seed ^ (__u64)(rep + 1) * 0x9e3779b97f4a7c15ULL;
		if (!c.rng)
			c.rng = 1;
		if (!ret)
			ret = bench_run(&c, o, &r);
		ctx_destroy(&c);
		if (ret)
			return ret;
		printf("bench kind=%s op=%s bs=%u qd=%u rep=%u ",
		       kind_names[kind], write ? "write" : "read", bs, qd, rep);
		printf("ios=%lu sec=%.3f iops=%.0f cpu_ns=%.0f task_ns=%.0f ",
		       r.ios, r.sec, r.iops, r.cpu_ns, r.task_ns);
		printf("p50_us=%.1f p99_us=%.1f p999_us=%.1f\n",
		       r.p50_us, r.p99_us, r.p999_us);
		fflush(stdout);
		iops[rep] = r.iops;
		cpu[rep] = r.cpu_ns;
		task[rep] = r.task_ns;
		p50[rep] = r.p50_us;
		p99[rep] = r.p99_us;
	}
	s->kind = kind;
	s->write = write;
	s->bs = bs;
	s->qd = qd;
	s->iops = median(iops, o->reps, &s->iops_spread);
	s->cpu_ns = median(cpu, o->reps, &s->cpu_spread);
	s->task_ns = median(task, o->reps, &unused);
	s->p50 = median(p50, o->reps, &unused);
	s->p99 = median(p99, o->reps, &unused);
	return 0;
}

static void print_help(FILE *f)
{
	fprintf(f,
		"usage: dmabuf_rw_bench [options]\n"
		"  -k KINDS  buffer kinds, of user,fixed,udmabuf,exporter (default: all)\n"
		"  -o OPS    read,write (default: both)\n"
		"  -b SIZES  block sizes in bytes (default: 4096,65536)\n"
		"  -q DEPTHS queue depths (default: 1,32)\n"
		"  -n IOS    I/Os per run at most (default: 100000)\n"
		"  -t SECS   seconds per run at most (default: 1)\n"
		"  -r REPS   runs per cell, 1 to 32 (default: 3)\n"
		"  -s SEED   seed of the random offsets (default: 1)\n"
		"  -d DEV    block device (default: $DMABUF_RW_DEV)\n"
		"The device's contents are overwritten.\n");
}

/* A comma separated list of numbers in [1, @max]. Returns its length or -1. */
static int parse_list(const char *arg, unsigned int *v, unsigned long max)
{
	char *copy = strdup(arg), *tok, *save, *end;
	int n = 0;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned long x = strtoul(tok, &end, 0);

		if (*end || !x || x > max || n == MAX_LIST) {
			n = -1;
			break;
		}
		v[n++] = x;
	}
	free(copy);
	return n ? n : -1;
}

static int parse_kinds(const char *arg, struct bench_opts *o)
{
	char *copy = strdup(arg), *tok, *save;
	int k, ret = 0;

	if (!copy)
		return -1;
	o->nr_kinds = 0;
	for (tok = strtok_r(copy, ",", &save); tok && !ret;
	     tok = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < NR_KINDS; k++)
			if (!strcmp(tok, kind_names[k]))
				break;
		if (k == NR_KINDS || o->nr_kinds == NR_KINDS)
			ret = -1;
		else
			o->kinds[o->nr_kinds++] = k;
	}
	free(copy);
	return ret || !o->nr_kinds ? -1 : 0;
}

static int parse_ops(const char *arg, struct bench_opts *o)
{
	char *copy = strdup(arg), *tok, *save;
	int ret = 0;

	if (!copy)
		return -1;
	o->ops[0] = false;
	o->ops[1] = false;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "read"))
			o->ops[0] = true;
		else if (!strcmp(tok, "write"))
			o->ops[1] = true;
		else
			ret = -1;
	}
	free(copy);
	return ret || !(o->ops[0] || o->ops[1]) ? -1 : 0;
}

static int parse_opts(int argc, char **argv, struct bench_opts *o)
{
	char *end;
	int opt, k;

	*o = (struct bench_opts) {
		.nr_kinds = NR_KINDS,
		.ops = { true, true },
		.bs = { 4096, 65536 },
		.nr_bs = 2,
		.qd = { 1, 32 },
		.nr_qd = 2,
		.nr_ios = 100000,
		.seconds = 1,
		.reps = 3,
		.seed = 1,
		.dev = dmabuf_rw_dev_path(),
	};
	for (k = 0; k < NR_KINDS; k++)
		o->kinds[k] = k;

	while ((opt = getopt(argc, argv, "k:o:b:q:n:t:r:s:d:h")) != -1) {
		switch (opt) {
		case 'k':
			if (parse_kinds(optarg, o))
				goto bad;
			break;
		case 'o':
			if (parse_ops(optarg, o))
				goto bad;
			break;
		case 'b':
			o->nr_bs = parse_list(optarg, o->bs, MAX_BS);
			if ((int)o->nr_bs < 0)
				goto bad;
			for (k = 0; k < (int)o->nr_bs; k++)
				if (o->bs[k] % 512)
					goto bad;
			break;
		case 'q':
			o->nr_qd = parse_list(optarg, o->qd, MAX_QD);
			if ((int)o->nr_qd < 0)
				goto bad;
			break;
		case 'n':
			o->nr_ios = strtoul(optarg, &end, 0);
			if (*end || !o->nr_ios || o->nr_ios > 100000000)
				goto bad;
			break;
		case 't':
			o->seconds = strtod(optarg, &end);
			if (*end || !(o->seconds > 0))
				goto bad;
			break;
		case 'r':
			o->reps = strtoul(optarg, &end, 0);
			if (*end || !o->reps || o->reps > MAX_REPS)
				goto bad;
			break;
		case 's':
			o->seed = strtoull(optarg, &end, 0);
			if (*end)
				goto bad;
			break;
		case 'd':
			o->dev = optarg;
			break;
		case 'h':
			print_help(stdout);
			exit(0);
		default:
			print_help(stderr);
			return -1;
		}
	}
	if (!o->dev || !*o->dev) {
		fprintf(stderr,
			"dmabuf_rw_bench: no device: name one whose contents may be destroyed with -d DEV or DMABUF_RW_DEV\n");
		print_help(stderr);
		return -1;
	}
	if (optind == argc)
		return 0;
	fprintf(stderr, "dmabuf_rw_bench: unexpected argument %s\n",
		argv[optind]);
	print_help(stderr);
	return -1;
bad:
	fprintf(stderr, "dmabuf_rw_bench: bad value for -%c: %s\n", opt,
		optarg);
	print_help(stderr);
	return -1;
}

static void cell_error(enum bench_kind kind, bool write, unsigned int bs,
		       unsigned int qd, int err)
{
	const char *why = strerror(-err);

	if (err == -ENOSPC)
		why = "the device is smaller than one block";
	else if (err == -ENOENT && kind == KIND_UDMABUF)
		why = dmabuf_rw_exporter_missing(DMABUF_RW_UDMABUF);
	else if (err == -ENOENT && kind == KIND_EXPORTER)
		why = dmabuf_rw_exporter_missing(DMABUF_RW_TEST_EXPORTER);
	fprintf(stderr, "dmabuf_rw_bench: %s %s bs=%u qd=%u: %s\n",
		kind_names[kind], write ? "write" : "read", bs, qd, why);
}

int main(int argc, char **argv)
{
	struct cell_summary *sum;
	unsigned int k, op, b, q, n = 0, i;
	char why[DMABUF_RW_WHY_LEN];
	struct bench_opts o;
	__u64 dev_size;
	int dev_fd, ret;

	if (parse_opts(argc, argv, &o))
		return 2;

	dev_fd = dmabuf_rw_dev_open(o.dev, why, sizeof(why));
	if (dev_fd < 0) {
		fprintf(stderr, "dmabuf_rw_bench: %s\n", why);
		return 1;
	}
	if (ioctl(dev_fd, BLKGETSIZE64, &dev_size)) {
		fprintf(stderr, "dmabuf_rw_bench: %s: BLKGETSIZE64: %s\n",
			o.dev, strerror(errno));
		return 1;
	}
	printf("bench dev=%s size=%llu cpus=%ld seed=%llu reps=%u ios=%lu sec=%g\n",
	       o.dev, (unsigned long long)dev_size,
	       sysconf(_SC_NPROCESSORS_ONLN), (unsigned long long)o.seed,
	       o.reps, o.nr_ios, o.seconds);

	sum = calloc(NR_KINDS * 2 * MAX_LIST * MAX_LIST, sizeof(*sum));
	if (!sum)
		return 1;
	for (op = 0; op < 2; op++) {
		if (!o.ops[op])
			continue;
		for (b = 0; b < o.nr_bs; b++) {
			for (q = 0; q < o.nr_qd; q++) {
				for (k = 0; k < o.nr_kinds; k++) {
					ret = bench_cell(&o, o.kinds[k], op,
							 o.bs[b], o.qd[q],
							 dev_fd, dev_size,
							 &sum[n]);
					if (ret) {
						cell_error(o.kinds[k], op,
							   o.bs[b], o.qd[q],
							   ret);
						return 1;
					}
					n++;
				}
			}
		}
	}

	printf("\n%-8s %-5s %6s %3s %10s %7s %10s %7s %10s %9s %9s\n",
	       "kind", "op", "bs", "qd", "IOPS", "spread", "CPU ns/IO",
	       "spread", "task ns/IO", "p50 us", "p99 us");
	for (i = 0; i < n; i++)
		printf("%-8s %-5s %6u %3u %10.0f %6.1f%% %10.0f %6.1f%% %10.0f %9.1f %9.1f\n",
		       kind_names[sum[i].kind], sum[i].write ? "write" : "read",
		       sum[i].bs, sum[i].qd, sum[i].iops, sum[i].iops_spread,
		       sum[i].cpu_ns, sum[i].cpu_spread, sum[i].task_ns,
		       sum[i].p50, sum[i].p99);
	free(sum);
	close(dev_fd);
	return 0;
}
