// SPDX-License-Identifier: GPL-2.0
/*
 * Error cases of the dma-buf registration uapi and of fixed I/O through a
 * dma-buf buffer.  Each bad registration must fail with its errno and
 * leave the slot empty; the same slot then takes a good registration.
 * Each bad request must fail with its errno and transfer nothing.
 *
 * The block device is DMABUF_RW_DEV (default /dev/nvme0n1); only the
 * good registration's checks read from it, at offset 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <linux/fs.h>

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
	struct dmabuf_rw_udmabuf ubuf;
};

FIXTURE_SETUP(uapi)
{
	int ret;

	self->dev_fd = -1;
	self->ubuf.fd = -1;
	self->ubuf.memfd = -1;

	self->dev_path = dmabuf_rw_dev_path();
	self->dev_fd = dmabuf_rw_open_dev(self->dev_path);
	if (self->dev_fd == -ENODEV)
		SKIP(return, "no block device at %s (set DMABUF_RW_DEV)",
		     self->dev_path);
	ASSERT_LE(0, self->dev_fd)
		TH_LOG("open %s: %s", self->dev_path, strerror(-self->dev_fd));

	ret = dmabuf_rw_ring_init(&self->ring, 8);
	if (ret == -EOPNOTSUPP)
		SKIP(return, "io_uring not available (CONFIG_IO_URING)");
	if (ret == -EPERM)
		SKIP(return, "io_uring disabled (kernel.io_uring_disabled)");
	ASSERT_EQ(0, ret) TH_LOG("io_uring_queue_init: %s", strerror(-ret));
	self->ring_ready = true;

	ret = udmabuf_create(&self->ubuf, DMABUF_SIZE);
	if (ret == -ENOENT)
		SKIP(return, "no /dev/udmabuf (CONFIG_UDMABUF)");
	ASSERT_EQ(0, ret) TH_LOG("udmabuf_create: %s", strerror(-ret));

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
	udmabuf_destroy(&self->ubuf);
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
 * from it fails with EFAULT, as from any empty slot), and it must take the
 * good registration, which then reads.
 */
static void check_slot_unused(struct __test_metadata *_metadata,
			      struct io_uring *ring, int dev_fd, int dmabuf_fd)
{
	int ret;

	ret = dmabuf_rw_fixed_io(ring, false, dev_fd, SLOT, 0, IO_LEN, 0);
	EXPECT_EQ(-EFAULT, ret)
		TH_LOG("fixed read from the slot after a failed registration: %s",
		       ret < 0 ? strerror(-ret) : "it transferred data");

	ret = dmabuf_rw_register_dmabuf(ring, SLOT, dev_fd, dmabuf_fd);
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

TEST_F(uapi, target_not_o_direct)
{
	int fd, ret;

	fd = open(self->dev_path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ret = dmabuf_rw_register_dmabuf(&self->ring, SLOT, fd, self->ubuf.fd);
	expect_errno(_metadata, EINVAL, ret, "block device opened without O_DIRECT");
	close(fd);
	check_slot_unused(_metadata, &self->ring, self->dev_fd, self->ubuf.fd);
}

TEST_F(uapi, target_regular_file)
{
	int fd, ret;

	fd = memfd_create("dmabuf-rw-target", MFD_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, DMABUF_SIZE));
	ret = dmabuf_rw_register_dmabuf(&self->ring, SLOT, fd, self->ubuf.fd);
	expect_errno(_metadata, EOPNOTSUPP, ret, "a regular file as the target");
	close(fd);
	check_slot_unused(_metadata, &self->ring, self->dev_fd, self->ubuf.fd);
}

TEST_F(uapi, target_pipe)
{
	int fds[2], ret;

	ASSERT_EQ(0, pipe2(fds, O_CLOEXEC));
	ret = dmabuf_rw_register_dmabuf(&self->ring, SLOT, fds[0], self->ubuf.fd);
	expect_errno(_metadata, EOPNOTSUPP, ret, "a pipe as the target");
	close(fds[0]);
	close(fds[1]);
	check_slot_unused(_metadata, &self->ring, self->dev_fd, self->ubuf.fd);
}

TEST_F(uapi, target_closed)
{
	int ret;

	ret = dmabuf_rw_register_dmabuf(&self->ring, SLOT, closed_fd(),
					self->ubuf.fd);
	expect_errno(_metadata, EBADF, ret, "a closed target fd");
	check_slot_unused(_metadata, &self->ring, self->dev_fd, self->ubuf.fd);
}

TEST_F(uapi, target_missing)
{
	int ret;

	ret = dmabuf_rw_register_dmabuf(&self->ring, SLOT, -1, self->ubuf.fd);
	expect_errno(_metadata, EBADF, ret, "a dma-buf without a target fd");
	check_slot_unused(_metadata, &self->ring, self->dev_fd, self->ubuf.fd);
}

TEST_F(uapi, dmabuf_not_a_dmabuf)
{
	int ret;

	/* The memfd behind the udmabuf: a file, not a dma-buf. */
	ret = dmabuf_rw_register_dmabuf(&self->ring, SLOT, self->dev_fd,
					self->ubuf.memfd);
	expect_errno(_metadata, EINVAL, ret, "a memfd as the dma-buf");
	check_slot_unused(_metadata, &self->ring, self->dev_fd, self->ubuf.fd);
}

TEST_F(uapi, dmabuf_closed)
{
	int ret;

	ret = dmabuf_rw_register_dmabuf(&self->ring, SLOT, self->dev_fd,
					closed_fd());
	expect_errno(_metadata, EBADF, ret, "a closed dma-buf fd");
	check_slot_unused(_metadata, &self->ring, self->dev_fd, self->ubuf.fd);
}

TEST_F(uapi, dmabuf_with_iovec)
{
	static char buf[IO_LEN];
	int ret;

	ret = register_entry(&self->ring, buf, sizeof(buf), self->dev_fd,
			     self->ubuf.fd);
	expect_errno(_metadata, EFAULT, ret, "a dma-buf entry with a non-empty iovec");
	check_slot_unused(_metadata, &self->ring, self->dev_fd, self->ubuf.fd);
}

TEST_F(uapi, unknown_update_flags)
{
	struct iovec iov = {};
	struct io_uring_reg_buffer rb = {
		.iov_uaddr = (__u64)(uintptr_t)&iov,
		.target_fd = self->dev_fd,
		.dmabuf_fd = self->ubuf.fd,
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
	check_slot_unused(_metadata, &self->ring, self->dev_fd, self->ubuf.fd);
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
					       self->ubuf.fd));
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
					       self->ubuf.fd));
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
					       self->ubuf.fd));
	expect_bad_io(_metadata, &self->ring, self->dev_fd, bad,
		      ARRAY_SIZE(bad), EINVAL);
}

TEST_HARNESS_MAIN
