// SPDX-License-Identifier: GPL-2.0
/*
 * Error cases of the dma-buf registration uapi and of fixed I/O through a
 * dma-buf buffer.  Each bad registration must fail with its errno and
 * leave the slot empty; the same slot then takes a good registration.
 * Each bad request must fail with its errno and transfer nothing.
 *
 * The block device is the one named in DMABUF_RW_DEV; without it the test
 * skips. Only the good registration's checks read from it, at offset 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <linux/nvme_ioctl.h>

#include "dmabuf_rw.h"
#include "kselftest_harness.h"

#define DMABUF_SIZE		(64 * 1024)
#define NR_BUF_SLOTS		4
#define SLOT			1
#define IO_LEN			4096

FIXTURE(uapi) {
	const char *dev_path;
	int dev_fd;
	struct io_uring ring;
	bool ring_ready;
	bool buffers_registered;
	struct dmabuf_rw_buf dbuf;
};

FIXTURE_VARIANT(uapi) {
	enum dmabuf_rw_exporter exporter;
};

FIXTURE_VARIANT_ADD(uapi, udmabuf) {
	.exporter = DMABUF_RW_UDMABUF,
};

/* The test exporter's counters show what a failed registration left. */
FIXTURE_VARIANT_ADD(uapi, texp) {
	.exporter = DMABUF_RW_TEST_EXPORTER,
};

FIXTURE_SETUP(uapi)
{
	char why[DMABUF_RW_WHY_LEN];
	int ret;

	self->dev_fd = -1;
	dmabuf_rw_buf_init(&self->dbuf);

	self->dev_path = dmabuf_rw_dev_path();
	self->dev_fd = dmabuf_rw_dev_open(self->dev_path, why, sizeof(why));
	if (self->dev_fd == -ENODEV)
		SKIP(return, "%s", why);
	ASSERT_LE(0, self->dev_fd) TH_LOG("%s", why);

	ret = dmabuf_rw_ring_init(&self->ring, 8);
	if (dmabuf_rw_ring_skip(ret))
		SKIP(return, "%s", dmabuf_rw_ring_skip(ret));
	ASSERT_EQ(0, ret) TH_LOG("io_uring_queue_init: %s", strerror(-ret));
	self->ring_ready = true;

	ret = dmabuf_rw_buf_create(&self->dbuf, variant->exporter, DMABUF_SIZE);
	if (ret == -ENOENT)
		SKIP(return, "%s", dmabuf_rw_exporter_missing(variant->exporter));
	ASSERT_EQ(0, ret) TH_LOG("creating the dma-buf: %s", strerror(-ret));

	ret = io_uring_register_buffers_sparse(&self->ring, NR_BUF_SLOTS);
	ASSERT_EQ(0, ret)
		TH_LOG("io_uring_register_buffers_sparse: %s", strerror(-ret));
	self->buffers_registered = true;
}

FIXTURE_TEARDOWN(uapi)
{
	if (self->buffers_registered)
		EXPECT_EQ(0, io_uring_unregister_buffers(&self->ring));
	if (self->ring_ready)
		io_uring_queue_exit(&self->ring);
	if (self->dbuf.fd >= 0 &&
	    self->dbuf.exporter == DMABUF_RW_TEST_EXPORTER)
		DMABUF_RW_EXPECT_SETTLED(self->dbuf.fd, "after unregistering");
	dmabuf_rw_buf_destroy(&self->dbuf);
	if (self->dev_fd >= 0)
		close(self->dev_fd);
}

/* A file descriptor number that is not open. */
static int closed_fd(void)
{
	int fd = dup(0);

	if (fd >= 0)
		close(fd);
	return fd;
}

/* Register with an explicit entry, for the cases the helper cannot build. */
static int register_entry(struct io_uring *ring, void *iov_base, size_t iov_len,
			  int target_fd, int dmabuf_fd)
{
	struct iovec iov = { .iov_base = iov_base, .iov_len = iov_len };
	struct io_uring_reg_buffer rb = {
		.iov_uaddr = (__u64)(uintptr_t)&iov,
		.target_fd = target_fd,
		.dmabuf_fd = dmabuf_fd,
	};

	return dmabuf_rw_update_buffers(ring, SLOT, &rb, 1);
}

/*
 * After a failed registration: the slot must still be empty (a fixed read
 * from it fails with EFAULT, as from any empty slot), the test exporter's
 * dma-buf must be neither attached nor mapped, and the slot must take the
 * good registration, which then reads.
 */
static void check_slot_unused(struct __test_metadata *_metadata,
			      struct io_uring *ring, int dev_fd,
			      const struct dmabuf_rw_buf *dbuf)
{
	struct test_dmabuf_exp_counters c;
	char why[DMABUF_RW_COUNTERS_STR];
	int ret;

	ret = dmabuf_rw_fixed_io(ring, false, dev_fd, SLOT, 0, IO_LEN, 0);
	EXPECT_EQ(-EFAULT, ret)
		TH_LOG("fixed read from the slot after a failed registration: %s",
		       ret < 0 ? strerror(-ret) : "it transferred data");

	if (dbuf->exporter == DMABUF_RW_TEST_EXPORTER) {
		ret = test_dmabuf_exp_settle(dbuf->fd, &c);
		EXPECT_EQ(0, ret)
			TH_LOG("failed registration left %s: %s",
			       test_dmabuf_exp_str(&c, why, sizeof(why)),
			       strerror(-ret));
	}

	ret = dmabuf_rw_register_dmabuf(ring, SLOT, dev_fd, dbuf->fd);
	ASSERT_EQ(1, ret)
		TH_LOG("good registration after the failed one: %s",
		       ret < 0 ? strerror(-ret) : "no slot updated");
	ret = dmabuf_rw_fixed_io(ring, false, dev_fd, SLOT, 0, IO_LEN, 0);
	EXPECT_EQ(IO_LEN, ret)
		TH_LOG("READ_FIXED after the good registration: %s",
		       ret < 0 ? strerror(-ret) : "short read");
}

/* Expect @ret to be -@err; @what says what was tried. */
static void expect_errno(struct __test_metadata *_metadata, int err, int ret,
			 const char *what)
{
	EXPECT_EQ(-err, ret)
		TH_LOG("%s: expected %s, got %s", what, strerror(err),
		       ret < 0 ? strerror(-ret) : "success");
}

/*
 * Register the dma-buf for @fd, which must fail with @err and leave the
 * slot as it was; @fd is closed.
 */
static void expect_target_refused(struct __test_metadata *_metadata,
				  struct io_uring *ring, int dev_fd,
				  const struct dmabuf_rw_buf *dbuf, int fd,
				  int err, const char *what)
{
	int ret;

	ret = dmabuf_rw_register_dmabuf(ring, SLOT, fd, dbuf->fd);
	expect_errno(_metadata, err, ret, what);
	close(fd);
	check_slot_unused(_metadata, ring, dev_fd, dbuf);
}

TEST_F(uapi, target_not_o_direct)
{
	int fd;

	fd = open(self->dev_path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	expect_target_refused(_metadata, &self->ring, self->dev_fd,
			      &self->dbuf, fd, EINVAL,
			      "block device opened without O_DIRECT");
}

TEST_F(uapi, target_regular_file)
{
	int fd;

	fd = memfd_create("dmabuf-rw-target", MFD_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, DMABUF_SIZE));
	expect_target_refused(_metadata, &self->ring, self->dev_fd,
			      &self->dbuf, fd, EOPNOTSUPP,
			      "a regular file as the target");
}

TEST_F(uapi, target_pipe)
{
	int fds[2];

	ASSERT_EQ(0, pipe2(fds, O_CLOEXEC));
	close(fds[1]);
	expect_target_refused(_metadata, &self->ring, self->dev_fd,
			      &self->dbuf, fds[0], EOPNOTSUPP,
			      "a pipe as the target");
}

TEST_F(uapi, target_closed)
{
	int ret;

	ret = dmabuf_rw_register_dmabuf(&self->ring, SLOT, closed_fd(),
					self->dbuf.fd);
	expect_errno(_metadata, EBADF, ret, "a closed target fd");
	check_slot_unused(_metadata, &self->ring, self->dev_fd, &self->dbuf);
}

TEST_F(uapi, target_missing)
{
	int ret;

	ret = dmabuf_rw_register_dmabuf(&self->ring, SLOT, -1, self->dbuf.fd);
	expect_errno(_metadata, EBADF, ret, "a dma-buf without a target fd");
	check_slot_unused(_metadata, &self->ring, self->dev_fd, &self->dbuf);
}

TEST_F(uapi, dmabuf_not_a_dmabuf)
{
	int memfd, ret;

	/* A file, but not a dma-buf. */
	memfd = memfd_create("dmabuf-rw-not-a-dmabuf", MFD_CLOEXEC);
	ASSERT_LE(0, memfd);
	ASSERT_EQ(0, ftruncate(memfd, DMABUF_SIZE));
	ret = dmabuf_rw_register_dmabuf(&self->ring, SLOT, self->dev_fd, memfd);
	expect_errno(_metadata, EINVAL, ret, "a memfd as the dma-buf");
	close(memfd);
	check_slot_unused(_metadata, &self->ring, self->dev_fd, &self->dbuf);
}

TEST_F(uapi, dmabuf_closed)
{
	int ret;

	ret = dmabuf_rw_register_dmabuf(&self->ring, SLOT, self->dev_fd,
					closed_fd());
	expect_errno(_metadata, EBADF, ret, "a closed dma-buf fd");
	check_slot_unused(_metadata, &self->ring, self->dev_fd, &self->dbuf);
}

/*
 * A loop device over a memfd: a blk-mq driver without the dma-buf
 * operations. Its fd, opened O_DIRECT, is returned in *@loop_fd; the loop
 * device detaches when that fd is closed. Returns 0 or a negative errno;
 * -ENOENT means there is no loop driver.
 */
static int loop_over_memfd(int *loop_fd)
{
	struct loop_config cfg = { .info.lo_flags = LO_FLAGS_AUTOCLEAR };
	int ctl, nr, memfd, ret = 0;
	char path[32];

	*loop_fd = -1;
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return -errno;
	nr = ioctl(ctl, LOOP_CTL_GET_FREE);
	close(ctl);
	if (nr < 0)
		return -errno;

	memfd = memfd_create("dmabuf-rw-loop", MFD_CLOEXEC);
	if (memfd < 0)
		return -errno;
	cfg.fd = memfd;
	snprintf(path, sizeof(path), "/dev/loop%d", nr);
	if (ftruncate(memfd, DMABUF_SIZE)) {
		ret = -errno;
	} else {
		*loop_fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
		if (*loop_fd < 0)
			ret = errno == ENOENT ? -EIO : -errno;
		else if (ioctl(*loop_fd, LOOP_CONFIGURE, &cfg))
			ret = -errno;
	}
	close(memfd);
	if (ret && *loop_fd >= 0) {
		close(*loop_fd);
		*loop_fd = -1;
	}
	return ret;
}

/* A block device other than an NVMe namespace: blk-mq, but no dma_map. */
TEST_F(uapi, target_loop_device)
{
	int fd, ret;

	ret = loop_over_memfd(&fd);
	if (ret == -ENOENT)
		SKIP(return, "no /dev/loop-control (CONFIG_BLK_DEV_LOOP)");
	ASSERT_EQ(0, ret) TH_LOG("a loop device over a memfd: %s", strerror(-ret));
	expect_target_refused(_metadata, &self->ring, self->dev_fd,
			      &self->dbuf, fd, EINVAL,
			      "a loop device as the target");
}

/* A bio-based block device: brd has no request queue to map for. */
TEST_F(uapi, target_ram_disk)
{
	int fd;

	fd = open("/dev/ram0", O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		SKIP(return, "no /dev/ram0 (CONFIG_BLK_DEV_RAM)");
	ASSERT_LE(0, fd) TH_LOG("open /dev/ram0: %s", strerror(errno));
	expect_target_refused(_metadata, &self->ring, self->dev_fd,
			      &self->dbuf, fd, EINVAL,
			      "a ram disk (brd) as the target");
}

/* A dma-buf entry needs both fds (target_missing is the reverse). */
TEST_F(uapi, target_without_dmabuf)
{
	int ret;

	ret = register_entry(&self->ring, NULL, 0, self->dev_fd, -1);
	expect_errno(_metadata, EBADF, ret, "a target fd without a dma-buf fd");
	check_slot_unused(_metadata, &self->ring, self->dev_fd, &self->dbuf);
}

/* Whether @found holds the IO_LEN bytes of @expect; log where not. */
static bool same_as_device(struct __test_metadata *_metadata,
			   const void *found, const __u8 *expect,
			   const char *what)
{
	size_t nr_diff;
	ssize_t i;

	i = dmabuf_rw_first_diff(found, expect, IO_LEN, &nr_diff);
	if (i >= 0)
		TH_LOG("READ_FIXED through the %s: %zu of %d bytes differ, the first at %zd",
		       what, nr_diff, IO_LEN, i);
	return i < 0;
}

/*
 * One update of three slots: a plain buffer, the dma-buf, and a dma-buf
 * entry whose target is not open. As for any IORING_REGISTER_BUFFERS_UPDATE
 * that fails part way, the first two take, the update stops at the third
 * and returns 2, and the third slot stays empty. Both registered slots
 * then read the device's bytes into their own buffer.
 */
TEST_F(uapi, mixed_update)
{
	struct io_uring_reg_buffer rb[3];
	struct iovec iov[3] = {};
	__u8 *plain, *expect;
	int ret, poison = 0xa5;
	bool cpu_check;
	size_t i;

	ASSERT_EQ(0, posix_memalign((void **)&plain, 4096, IO_LEN));
	ASSERT_EQ(0, posix_memalign((void **)&expect, 4096, IO_LEN));
	ASSERT_EQ(IO_LEN, pread(self->dev_fd, expect, IO_LEN, 0));
	/* A poison that the device's bytes are not, all of them. */
	for (i = 0; i < IO_LEN && expect[i] == poison; i++)
		;
	if (i == IO_LEN)
		poison ^= 0xff;

	iov[0] = (struct iovec) { .iov_base = plain, .iov_len = IO_LEN };
	rb[0] = (struct io_uring_reg_buffer) {
		.iov_uaddr = (__u64)(uintptr_t)&iov[0],
		.target_fd = -1, .dmabuf_fd = -1,
	};
	rb[1] = (struct io_uring_reg_buffer) {
		.iov_uaddr = (__u64)(uintptr_t)&iov[1],
		.target_fd = self->dev_fd, .dmabuf_fd = self->dbuf.fd,
	};
	rb[2] = (struct io_uring_reg_buffer) {
		.iov_uaddr = (__u64)(uintptr_t)&iov[2],
		.target_fd = closed_fd(), .dmabuf_fd = self->dbuf.fd,
	};
	ret = dmabuf_rw_update_buffers(&self->ring, 0, rb, 3);
	ASSERT_EQ(2, ret)
		TH_LOG("updating slots 0-2 (plain, dma-buf, closed target): %s",
		       ret < 0 ? strerror(-ret) : "not 2 slots updated");
	ret = dmabuf_rw_fixed_io(&self->ring, false, self->dev_fd, 2, 0, IO_LEN, 0);
	expect_errno(_metadata, EFAULT, ret, "READ_FIXED from the slot whose entry failed");

	memset(plain, poison, IO_LEN);
	ret = dmabuf_rw_fixed_io(&self->ring, false, self->dev_fd, 0,
				 (__u64)(uintptr_t)plain, IO_LEN, 0);
	ASSERT_EQ(IO_LEN, ret)
		TH_LOG("READ_FIXED through the plain slot: %s",
		       ret < 0 ? strerror(-ret) : "short read");
	EXPECT_TRUE(same_as_device(_metadata, plain, expect, "plain slot"));

	/* udmabuf's own syncs bounce its pages with swiotlb=force. */
	cpu_check = self->dbuf.exporter == DMABUF_RW_TEST_EXPORTER ||
		    !dmabuf_rw_swiotlb_forced();
	if (cpu_check) {
		ASSERT_EQ(0, dmabuf_cpu_begin(self->dbuf.fd, DMA_BUF_SYNC_WRITE));
		memset(self->dbuf.map, poison, IO_LEN);
		ASSERT_EQ(0, dmabuf_cpu_end(self->dbuf.fd, DMA_BUF_SYNC_WRITE));
	}
	ret = dmabuf_rw_fixed_io(&self->ring, false, self->dev_fd, 1, 0,
				 IO_LEN, 0);
	ASSERT_EQ(IO_LEN, ret)
		TH_LOG("READ_FIXED through the dma-buf slot: %s",
		       ret < 0 ? strerror(-ret) : "short read");
	if (cpu_check) {
		ASSERT_EQ(0, dmabuf_cpu_begin(self->dbuf.fd, DMA_BUF_SYNC_READ));
		EXPECT_TRUE(same_as_device(_metadata, self->dbuf.map, expect,
					   "dma-buf slot"));
		ASSERT_EQ(0, dmabuf_cpu_end(self->dbuf.fd, DMA_BUF_SYNC_READ));
	}
	free(expect);
	free(plain);
}

TEST_F(uapi, dmabuf_with_iovec)
{
	static char buf[IO_LEN];
	int ret;

	ret = register_entry(&self->ring, buf, sizeof(buf), self->dev_fd,
			     self->dbuf.fd);
	expect_errno(_metadata, EFAULT, ret, "a dma-buf entry with a non-empty iovec");
	check_slot_unused(_metadata, &self->ring, self->dev_fd, &self->dbuf);
}

TEST_F(uapi, unknown_update_flags)
{
	struct iovec iov = {};
	struct io_uring_reg_buffer rb = {
		.iov_uaddr = (__u64)(uintptr_t)&iov,
		.target_fd = self->dev_fd,
		.dmabuf_fd = self->dbuf.fd,
	};
	struct io_uring_rsrc_update2 up = {
		.offset = SLOT,
		.data = (__u64)(uintptr_t)&rb,
		.nr = 1,
	};
	unsigned int bit;
	long ret;

	for (bit = 0; bit < 32; bit++) {
		if ((1U << bit) == IORING_RSRC_F_EXTENDED_UPDATE)
			continue;
		up.flags = IORING_RSRC_F_EXTENDED_UPDATE | (1U << bit);
		ret = syscall(__NR_io_uring_register, self->ring.ring_fd,
			      IORING_REGISTER_BUFFERS_UPDATE, &up, sizeof(up));
		EXPECT_EQ(-1, ret) TH_LOG("flags %#x accepted", up.flags);
		EXPECT_EQ(EINVAL, errno)
			TH_LOG("flags %#x: %s", up.flags, strerror(errno));
	}
	check_slot_unused(_metadata, &self->ring, self->dev_fd, &self->dbuf);
}

TEST_F(uapi, extended_flag_on_file_update)
{
	struct io_uring_rsrc_update2 up = {
		.offset = 0,
		.flags = IORING_RSRC_F_EXTENDED_UPDATE,
		.nr = 1,
	};
	int fd = self->dev_fd;
	long ret;

	ASSERT_EQ(0, io_uring_register_files_sparse(&self->ring, 1));
	up.data = (__u64)(uintptr_t)&fd;
	ret = syscall(__NR_io_uring_register, self->ring.ring_fd,
		      IORING_REGISTER_FILES_UPDATE2, &up, sizeof(up));
	EXPECT_EQ(-1, ret) TH_LOG("extended flag accepted on a file table update");
	EXPECT_EQ(EINVAL, errno) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(0, io_uring_unregister_files(&self->ring));
}

/* The token belongs to the registered file: another file gets EBADF. */
TEST_F(uapi, fixed_io_on_another_file)
{
	int other, ret;

	ASSERT_EQ(1, dmabuf_rw_register_dmabuf(&self->ring, SLOT, self->dev_fd,
					       self->dbuf.fd));
	/* The same device, opened again: another struct file. */
	other = open(self->dev_path, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, other);
	ret = dmabuf_rw_fixed_io(&self->ring, false, other, SLOT, 0, IO_LEN, 0);
	expect_errno(_metadata, EBADF, ret, "READ_FIXED on another file");
	ret = dmabuf_rw_fixed_io(&self->ring, true, other, SLOT, 0, IO_LEN, 0);
	expect_errno(_metadata, EBADF, ret, "WRITE_FIXED on another file");
	close(other);
}

/* A fixed transfer through slot SLOT that must fail. */
struct bad_io {
	__u64 off;
	unsigned int len;
	const char *what;
};

/* Each of @bad, as a READ_FIXED and as a WRITE_FIXED, fails with -@err. */
static void expect_bad_io(struct __test_metadata *_metadata,
			  struct io_uring *ring, int dev_fd,
			  const struct bad_io *bad, size_t nr, int err)
{
	size_t i;
	int ret;

	for (i = 0; i < nr; i++) {
		ret = dmabuf_rw_fixed_io(ring, false, dev_fd, SLOT, bad[i].off,
					 bad[i].len, 0);
		expect_errno(_metadata, err, ret, bad[i].what);
		ret = dmabuf_rw_fixed_io(ring, true, dev_fd, SLOT, bad[i].off,
					 bad[i].len, 0);
		expect_errno(_metadata, err, ret, bad[i].what);
	}
}

TEST_F(uapi, fixed_io_out_of_range)
{
	static const struct bad_io bad[] = {
		{ DMABUF_SIZE - IO_LEN, 2 * IO_LEN, "past the end" },
		{ DMABUF_SIZE, IO_LEN, "starting at the end" },
		{ 0, DMABUF_SIZE + IO_LEN, "longer than the dma-buf" },
	};
	int ret;

	ASSERT_EQ(1, dmabuf_rw_register_dmabuf(&self->ring, SLOT, self->dev_fd,
					       self->dbuf.fd));
	expect_bad_io(_metadata, &self->ring, self->dev_fd, bad,
		      ARRAY_SIZE(bad), EFAULT);
	ret = dmabuf_rw_fixed_io(&self->ring, false, self->dev_fd, NR_BUF_SLOTS,
				 0, IO_LEN, 0);
	expect_errno(_metadata, EFAULT, ret, "buffer index past the table");
}

TEST_F(uapi, fixed_io_misaligned)
{
	static const struct bad_io bad[] = {
		/* nvme-pci's dma_alignment is 3: dword-aligned offsets are valid */
		{ 1, IO_LEN, "offset 1 in the dma-buf" },
		{ 2, IO_LEN, "offset 2 in the dma-buf" },
		{ 0, IO_LEN - 1, "length not a multiple of the block size" },
		{ 0, 256, "length below the block size" },
	};

	ASSERT_EQ(1, dmabuf_rw_register_dmabuf(&self->ring, SLOT, self->dev_fd,
					       self->dbuf.fd));
	expect_bad_io(_metadata, &self->ring, self->dev_fd, bad,
		      ARRAY_SIZE(bad), EINVAL);
}

/* Nothing to transfer is not an error: 0 bytes, as with any buffer. */
TEST_F(uapi, fixed_io_zero_length)
{
	static const __u64 offsets[] = { 0, IO_LEN, DMABUF_SIZE };
	unsigned int i, write;
	int ret;

	ASSERT_EQ(1, dmabuf_rw_register_dmabuf(&self->ring, SLOT, self->dev_fd,
					       self->dbuf.fd));
	for (i = 0; i < ARRAY_SIZE(offsets); i++) {
		for (write = 0; write < 2; write++) {
			ret = dmabuf_rw_fixed_io(&self->ring, write,
						 self->dev_fd, SLOT,
						 offsets[i], 0, 0);
			EXPECT_EQ(0, ret)
				TH_LOG("%s of 0 bytes at dma-buf offset %llu: %s",
				       write ? "WRITE_FIXED" : "READ_FIXED",
				       (unsigned long long)offsets[i],
				       ret < 0 ? strerror(-ret) : "bytes moved");
		}
	}
}

/*
 * READV_FIXED and WRITEV_FIXED address iovecs inside a registered
 * buffer's user memory. A dma-buf buffer has none: EFAULT, as for every
 * import of a fixed buffer that does not take a dma-buf.
 */
TEST_F(uapi, vectored_fixed_io)
{
	static const __u8 ops[] = { IORING_OP_READV_FIXED,
				    IORING_OP_WRITEV_FIXED };
	struct iovec iov[2] = {
		{ .iov_base = (void *)0, .iov_len = IO_LEN },
		{ .iov_base = (void *)(2 * IO_LEN), .iov_len = IO_LEN },
	};
	struct io_uring_sqe *sqe;
	unsigned int i;
	int ret;

	ASSERT_EQ(1, dmabuf_rw_register_dmabuf(&self->ring, SLOT, self->dev_fd,
					       self->dbuf.fd));
	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		sqe = io_uring_get_sqe(&self->ring);
		ASSERT_NE(NULL, sqe);
		io_uring_prep_rw(ops[i], sqe, self->dev_fd, iov,
				 ARRAY_SIZE(iov), 0);
		sqe->buf_index = SLOT;
		ret = dmabuf_rw_submit_one(&self->ring);
		expect_errno(_metadata, EFAULT, ret,
			     ops[i] == IORING_OP_READV_FIXED ?
			     "READV_FIXED with a dma-buf buffer" :
			     "WRITEV_FIXED with a dma-buf buffer");
	}
}

/*
 * NVMe passthrough (IORING_OP_URING_CMD on the namespace's generic char
 * device) with a fixed buffer imports it for its own request, not through
 * the block device the dma-buf was registered for: EFAULT.
 */
TEST_F(uapi, nvme_passthrough_fixed)
{
	struct nvme_uring_cmd *cmd;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	char ng_path[64];
	unsigned int ctrl, ns;
	int ng_fd, nsid, lbs, ret;

	if (sscanf(self->dev_path, "/dev/nvme%un%u", &ctrl, &ns) != 2)
		SKIP(return, "%s is not an NVMe namespace", self->dev_path);
	snprintf(ng_path, sizeof(ng_path), "/dev/ng%un%u", ctrl, ns);
	ng_fd = open(ng_path, O_RDONLY | O_CLOEXEC);
	if (ng_fd < 0 && errno == ENOENT)
		SKIP(return, "no NVMe generic char device %s", ng_path);
	ASSERT_LE(0, ng_fd) TH_LOG("open %s: %s", ng_path, strerror(errno));
	nsid = ioctl(self->dev_fd, NVME_IOCTL_ID);
	ASSERT_LT(0, nsid);
	ASSERT_EQ(0, ioctl(self->dev_fd, BLKSSZGET, &lbs));

	/* NVMe passthrough needs big SQEs and CQEs. */
	ret = io_uring_queue_init(4, &ring, IORING_SETUP_SQE128 |
				  IORING_SETUP_CQE32);
	ASSERT_EQ(0, ret) TH_LOG("SQE128|CQE32 ring: %s", strerror(-ret));
	ASSERT_EQ(0, io_uring_register_buffers_sparse(&ring, 1));
	ASSERT_EQ(1, dmabuf_rw_register_dmabuf(&ring, 0, self->dev_fd,
					       self->dbuf.fd));

	sqe = io_uring_get_sqe(&ring);
	ASSERT_NE(NULL, sqe);
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, ng_fd, NULL, 0, 0);
	sqe->cmd_op = NVME_URING_CMD_IO;
	sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
	sqe->buf_index = 0;
	cmd = (struct nvme_uring_cmd *)sqe->cmd;
	memset(cmd, 0, sizeof(*cmd));
	cmd->opcode = 0x02;	/* Read */
	cmd->nsid = nsid;
	cmd->addr = 0;		/* offset in the dma-buf */
	cmd->data_len = IO_LEN;
	cmd->cdw12 = IO_LEN / lbs - 1;	/* 0's based block count */
	ret = dmabuf_rw_submit_one(&ring);
	expect_errno(_metadata, EFAULT, ret,
		     "NVMe passthrough read into a dma-buf buffer");

	EXPECT_EQ(0, io_uring_unregister_buffers(&ring));
	io_uring_queue_exit(&ring);
	close(ng_fd);
}

/*
 * nvme-pci maps a dma-buf in whole controller pages (4 KiB): a dma-buf
 * of another size is refused with EINVAL when registering, and leaves no
 * attachment behind. Only the test exporter makes such a dma-buf (a
 * udmabuf is whole pages); the variant's dma-buf then takes the slot.
 */
TEST_F(uapi, dmabuf_size_not_ctrl_page_multiple)
{
	struct test_dmabuf_exp_counters c;
	char why[DMABUF_RW_COUNTERS_STR];
	int fd, ret;

	fd = test_dmabuf_exp_create(IO_LEN + 512);
	if (fd == -ENOENT)
		SKIP(return, "%s",
		     dmabuf_rw_exporter_missing(DMABUF_RW_TEST_EXPORTER));
	ASSERT_LE(0, fd) TH_LOG("test exporter: %s", strerror(-fd));
	ret = dmabuf_rw_register_dmabuf(&self->ring, SLOT, self->dev_fd, fd);
	expect_errno(_metadata, EINVAL, ret, "a dma-buf of 4.5 KiB");
	ret = test_dmabuf_exp_settle(fd, &c);
	EXPECT_EQ(0, ret)
		TH_LOG("failed registration left %s: %s",
		       test_dmabuf_exp_str(&c, why, sizeof(why)),
		       strerror(-ret));
	close(fd);
	check_slot_unused(_metadata, &self->ring, self->dev_fd, &self->dbuf);
}

/*
 * io_uring charges a user without CAP_IPC_LOCK for the pages of the
 * buffers it registers (RLIMIT_MEMLOCK) and uncharges them when they go.
 * A dma-buf buffer pins no user page: registering and unregistering one
 * must leave the charge as it was. The previous slot's buffer, one plain
 * page, makes the mistake visible: the dma-buf buffer may reuse its
 * bookkeeping, and uncharging a page it never charged would let the user
 * go past the limit.
 *
 * Runs in a child that becomes an unprivileged user; the exit status says
 * what went wrong.
 */
enum memlock_child_status {
	MEMLOCK_OK,
	MEMLOCK_SETUP,		/* rlimit, setresuid, ring, buffers */
	MEMLOCK_REGISTER,	/* the dma-buf registration failed */
	MEMLOCK_OVER_LIMIT,	/* a buffer past RLIMIT_MEMLOCK was accepted */
};

static int memlock_child(int dev_fd, int dmabuf_fd, void *pages)
{
	struct rlimit one_page = { .rlim_cur = 4096, .rlim_max = 4096 };
	struct iovec iov = { .iov_base = pages, .iov_len = 4096 };
	struct io_uring ring;
	int ret;

	if (setrlimit(RLIMIT_MEMLOCK, &one_page) ||
	    setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return MEMLOCK_SETUP;
	if (io_uring_queue_init(4, &ring, 0) ||
	    io_uring_register_buffers_sparse(&ring, 2))
		return MEMLOCK_SETUP;

	/* One plain page: the whole allowance, then given back. */
	if (io_uring_register_buffers_update_tag(&ring, 0, &iov, NULL, 1) != 1)
		return MEMLOCK_SETUP;
	iov.iov_base = NULL;
	iov.iov_len = 0;
	if (io_uring_register_buffers_update_tag(&ring, 0, &iov, NULL, 1) != 1)
		return MEMLOCK_SETUP;

	ret = dmabuf_rw_register_dmabuf(&ring, 1, dev_fd, dmabuf_fd);
	if (ret != 1)
		return MEMLOCK_REGISTER;
	if (io_uring_unregister_buffers(&ring) ||
	    io_uring_register_buffers_sparse(&ring, 2))
		return MEMLOCK_SETUP;

	/* Two pages are over the limit, unless the charge went wrong. */
	iov.iov_base = pages;
	iov.iov_len = 2 * 4096;
	ret = io_uring_register_buffers_update_tag(&ring, 0, &iov, NULL, 1);
	io_uring_queue_exit(&ring);
	return ret == -ENOMEM ? MEMLOCK_OK : MEMLOCK_OVER_LIMIT;
}

TEST_F(uapi, unprivileged_memlock_charge)
{
	static const char * const what[] = {
		[MEMLOCK_SETUP] = "setting up the unprivileged user's ring",
		[MEMLOCK_REGISTER] = "registering the dma-buf",
		/* after a dma-buf buffer came and went */
		[MEMLOCK_OVER_LIMIT] = "a buffer past RLIMIT_MEMLOCK was accepted",
	};
	void *pages;
	int status;
	pid_t pid;

	pages = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, pages);
	memset(pages, 0, 2 * 4096);

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(memlock_child(self->dev_fd, self->dbuf.fd, pages));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	munmap(pages, 2 * 4096);
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child: status %#x", status);
	EXPECT_EQ(MEMLOCK_OK, WEXITSTATUS(status))
		TH_LOG("%s", WEXITSTATUS(status) < ARRAY_SIZE(what) ?
		       what[WEXITSTATUS(status)] : "unexpected exit status");
}

TEST_HARNESS_MAIN
