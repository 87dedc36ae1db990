/* SPDX-License-Identifier: MIT */
/* test_idx.c — IDX reading (plain and gzip'd fixture), every way a file can be broken, the data
 * set loader on the fixture and on the real Fashion-MNIST when installed, synthetic data and the
 * seeded shuffle. */
#include "cunit_main.h"
#include "dataset.h"
#include "idx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define FASHION_DIR "/usr/share/datasets/fashion-mnist"

static void fixture(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/tests/fixtures/trainer/%s", tt_test_srcdir(), name);
}

static void test_reads_plain_and_gzip(void)
{
	char path[4096];
	tt_idx t;
	tt_err err;

	fixture(path, sizeof(path), "train-images-idx3-ubyte");
	CU_ASSERT_EQUAL_FATAL(tt_idx_read(path, &t, &err), 0);
	CU_ASSERT_EQUAL(t.n_dims, 3);
	CU_ASSERT_EQUAL(t.dims[0], 3);
	CU_ASSERT_EQUAL(t.n_bytes, 12);
	CU_ASSERT_EQUAL(t.data[1], 255);
	CU_ASSERT_EQUAL(t.data[11], 0);
	tt_idx_free(&t);
	fixture(path, sizeof(path), "t10k-labels-idx1-ubyte.gz");
	CU_ASSERT_EQUAL_FATAL(tt_idx_read(path, &t, &err), 0);
	CU_ASSERT_EQUAL(t.n_dims, 1);
	CU_ASSERT_EQUAL(t.dims[0], 2);
	CU_ASSERT_EQUAL(t.data[0], 1);
	tt_idx_free(&t);
}

/* Writes bytes to a temp file and expects the reader to fail with `want` in the message. */
static void expect_broken(const unsigned char *bytes, size_t len, const char *want)
{
	char path[] = "/tmp/tt-idx-XXXXXX";
	int fd = mkstemp(path);
	tt_idx t;
	tt_err err;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, bytes, len), (ssize_t)len);
	close(fd);
	err.msg[0] = '\0';
	CU_ASSERT_EQUAL(tt_idx_read(path, &t, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, want));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, path));
	CU_ASSERT_PTR_NULL(t.data);
	unlink(path);
}

static void test_rejects_broken_files(void)
{
	const unsigned char bad_magic[] = { 0, 0, 0x0d, 1, 0, 0, 0, 1, 7 };
	const unsigned char truncated_header[] = { 0, 0, 8, 3, 0, 0 };
	const unsigned char truncated_data[] = { 0, 0, 8, 1, 0, 0, 0, 4, 1, 2 };
	const unsigned char trailing[] = { 0, 0, 8, 1, 0, 0, 0, 1, 1, 2 };
	const unsigned char zero_dim[] = { 0, 0, 8, 1, 0, 0, 0, 0 };
	/* One dimension more than tt_idx holds (TT_IDX_MAX_DIMS = 4), each of size 1, one byte of data. */
	const unsigned char five_dims[] = { 0, 0, 8, 5, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1,
					    0, 0, 0, 1, 7 };
	tt_idx t;
	tt_err err;

	expect_broken(bad_magic, sizeof(bad_magic), "not an unsigned-byte IDX");
	expect_broken(truncated_header, sizeof(truncated_header), "truncated");
	expect_broken(truncated_data, sizeof(truncated_data), "ends inside the IDX data");
	expect_broken(trailing, sizeof(trailing), "trailing bytes");
	expect_broken(zero_dim, sizeof(zero_dim), "dimension 0");
	expect_broken(five_dims, sizeof(five_dims), "want 000008 then 1..4 dimensions");
	CU_ASSERT_EQUAL(tt_idx_read("/nonexistent/x.idx", &t, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "/nonexistent/x.idx"));
}

/* Reads path in a child with 1 GiB of address space to spare, where a 16 GiB allocation fails;
 * 1 when the read failed for the data's sake, as it should. ASan and valgrind need address space
 * of their own: there it reads in this process. */
static int read_fails_in_little_space(const char *path, const char *want)
{
	tt_idx t;
	tt_err err;
	int status = -1;
	pid_t pid;

#ifndef __SANITIZE_ADDRESS__
	if (!(getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload"))) {
		pid = fork();
		if (pid == 0) {
			struct rlimit rl;

			rl.rlim_cur = rl.rlim_max = (rlim_t)(tt_test_proc_kib(0, "VmSize") + (1L << 20)) * 1024;
			setrlimit(RLIMIT_AS, &rl);
			_exit(tt_idx_read(path, &t, &err) == -1 && strstr(err.msg, want) ? 0 : 1);
		}
		return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
#endif
	(void)status;
	(void)pid;
	return tt_idx_read(path, &t, &err) == -1 && strstr(err.msg, want);
}

/* A 16-byte header announcing 16 GiB made the reader allocate 16 GiB before reading anything:
 * a plain file is now checked against its size first, and a gzip'd one (whose size says nothing)
 * is read into a buffer that grows with the data. */
/* Four dimensions, the most tt_idx holds, are read. */
static void test_four_dimensions_are_read(void)
{
	const unsigned char four[] = { 0, 0, 8, 4, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 5, 6 };
	char path[] = "/tmp/tt-idx-XXXXXX";
	int fd = mkstemp(path);
	tt_idx t;
	tt_err err;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, four, sizeof(four)), (ssize_t)sizeof(four));
	close(fd);
	CU_ASSERT_EQUAL_FATAL(tt_idx_read(path, &t, &err), 0);
	CU_ASSERT_EQUAL(t.n_dims, 4);
	CU_ASSERT_EQUAL(t.dims[1], 2);
	CU_ASSERT_EQUAL(t.n_bytes, 2);
	CU_ASSERT_EQUAL(t.data[1], 6);
	tt_idx_free(&t);
	unlink(path);
}

static void test_header_claims_are_checked_first(void)
{
	const unsigned char huge[] = { 0, 0, 8, 3, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 2, 0 }; /* 65536x512x512 */
	char path[] = "/tmp/tt-idx-gz-XXXXXX";
	int fd = mkstemp(path);
	gzFile gz;

	expect_broken(huge, sizeof(huge), "the header announces 17179869184 bytes, the file holds 0");
	CU_ASSERT_FATAL(fd >= 0);
	gz = gzdopen(fd, "wb");
	CU_ASSERT_FATAL(gz != NULL);
	CU_ASSERT_EQUAL(gzwrite(gz, huge, sizeof(huge)), (int)sizeof(huge));
	CU_ASSERT_EQUAL(gzwrite(gz, "abc", 3), 3);
	gzclose(gz);
	CU_ASSERT(read_fails_in_little_space(path, "ends inside the IDX data"));
	unlink(path);
}

static void test_loads_fixture_dir(void)
{
	char dir[4096];
	tt_dataset train, test;
	tt_err err;

	snprintf(dir, sizeof(dir), "%s/tests/fixtures/trainer", tt_test_srcdir());
	CU_ASSERT_EQUAL_FATAL(tt_dataset_load_dir(&train, &test, dir, &err), 0);
	CU_ASSERT_EQUAL(train.n, 3);
	CU_ASSERT_EQUAL(train.dim, 4);
	CU_ASSERT_EQUAL(train.classes, 3);
	CU_ASSERT_EQUAL(test.classes, 3);
	CU_ASSERT_DOUBLE_EQUAL(train.x[1], 1.0, 1e-7);
	CU_ASSERT_DOUBLE_EQUAL(train.x[2], 0.2, 1e-7);
	CU_ASSERT_EQUAL(train.y[0], 2);
	CU_ASSERT_EQUAL(test.n, 2);
	CU_ASSERT_EQUAL(test.y[1], 1);
	tt_dataset_free(&train);
	tt_dataset_free(&test);
	CU_ASSERT_EQUAL(tt_dataset_load_dir(&train, &test, "/nonexistent", &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--data /nonexistent"));
}

static void test_loads_fashion_mnist_when_installed(void)
{
	tt_dataset train, test;
	tt_err err;
	long hist[10] = { 0 };

	if (access(FASHION_DIR, R_OK) != 0) {
		tt_test_skip("%s missing: apt-get install dataset-fashion-mnist (scripts/install-deps.sh)",
			     FASHION_DIR);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(tt_dataset_load_dir(&train, &test, FASHION_DIR, &err), 0);
	CU_ASSERT_EQUAL(train.n, 60000);
	CU_ASSERT_EQUAL(test.n, 10000);
	CU_ASSERT_EQUAL(train.dim, 784);
	CU_ASSERT_EQUAL(train.classes, 10);
	for (size_t i = 0; i < test.n; i++)
		hist[test.y[i]]++;
	for (int c = 0; c < 10; c++)
		CU_ASSERT_EQUAL(hist[c], 1000); /* Fashion-MNIST's test split is balanced */
	tt_dataset_free(&train);
	tt_dataset_free(&test);
}

static void test_synthetic_is_deterministic_and_learnable(void)
{
	tt_dataset a, at, b, bt;
	tt_err err;
	long hist[4] = { 0 };

	CU_ASSERT_EQUAL_FATAL(tt_dataset_synthetic(&a, &at, 8, 4, 400, 50, 9, &err), 0);
	CU_ASSERT_EQUAL_FATAL(tt_dataset_synthetic(&b, &bt, 8, 4, 400, 50, 9, &err), 0);
	CU_ASSERT_EQUAL(memcmp(a.x, b.x, sizeof(float) * 400 * 8), 0);
	CU_ASSERT_EQUAL(memcmp(a.y, b.y, sizeof(int32_t) * 400), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(a.x, at.x, sizeof(float) * 50 * 8), 0);
	for (size_t i = 0; i < a.n; i++)
		hist[a.y[i]]++;
	for (int c = 0; c < 4; c++)
		CU_ASSERT(hist[c] > 20); /* every class occurs */
	tt_dataset_free(&a);
	tt_dataset_free(&at);
	tt_dataset_free(&b);
	tt_dataset_free(&bt);
	CU_ASSERT_EQUAL(tt_dataset_synthetic(&a, &at, 8, 1, 10, 10, 9, &err), -1);
}

static void test_shuffle_is_a_seeded_permutation(void)
{
	enum { N = 1000 };
	uint32_t p[N], q[N];
	char seen[N] = { 0 };
	int moved = 0;

	tt_dataset_shuffle(p, N, 1, 0);
	tt_dataset_shuffle(q, N, 1, 0);
	CU_ASSERT_EQUAL(memcmp(p, q, sizeof(p)), 0);
	for (int i = 0; i < N; i++) {
		CU_ASSERT_FATAL(p[i] < N);
		seen[p[i]]++;
		moved += p[i] != (uint32_t)i;
	}
	for (int i = 0; i < N; i++)
		CU_ASSERT_EQUAL(seen[i], 1);
	CU_ASSERT(moved > N / 2);
	tt_dataset_shuffle(q, N, 1, 1);
	CU_ASSERT_NOT_EQUAL(memcmp(p, q, sizeof(p)), 0);
	tt_dataset_shuffle(q, N, 2, 0);
	CU_ASSERT_NOT_EQUAL(memcmp(p, q, sizeof(p)), 0);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("idx+dataset", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "reads plain and gzip", test_reads_plain_and_gzip);
	CU_add_test(s, "rejects broken files", test_rejects_broken_files);
	CU_add_test(s, "four dimensions are read", test_four_dimensions_are_read);
	CU_add_test(s, "header claims are checked first", test_header_claims_are_checked_first);
	CU_add_test(s, "loads fixture dir", test_loads_fixture_dir);
	CU_add_test(s, "loads Fashion-MNIST when installed", test_loads_fashion_mnist_when_installed);
	CU_add_test(s, "synthetic deterministic and learnable", test_synthetic_is_deterministic_and_learnable);
	CU_add_test(s, "shuffle is a seeded permutation", test_shuffle_is_a_seeded_permutation);
	return 0;
}
