/* SPDX-License-Identifier: MIT */
/* replay_main.c — main() of the fuzz harnesses where libFuzzer is absent (every build but
 * `configure --enable-fuzzing`): runs LLVMFuzzerTestOneInput once on each input of the target's
 * committed seed corpus and regression inputs, so `make check` keeps every crash found once fixed,
 * with gcc alone (and under check-sanitizers / check-valgrind, with their checkers). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer reports one allocation above its -malloc_limit_mb (= -rss_limit_mb, 2048 in run.sh) as
 * out-of-memory: a size taken from the input without a check. The replay keeps that finding a
 * failure: under ASan through its own limit, elsewhere by wrapping glibc's allocator (valgrind
 * still sees every block: it replaces the __libc_ functions these call). */
#define REPLAY_MALLOC_LIMIT_MB 2048
#ifdef __SANITIZE_ADDRESS__
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "max_allocation_size_mb=2048:allocator_may_return_null=0";
}
#else
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);

static void *too_big(size_t size)
{
	fprintf(stderr, "fuzz replay: out-of-memory: one allocation of %zu bytes is above the %d MiB "
		"limit (libFuzzer's -malloc_limit_mb)\n", size, REPLAY_MALLOC_LIMIT_MB);
	abort();
}

void *malloc(size_t size)
{
	return size > ((size_t)REPLAY_MALLOC_LIMIT_MB << 20) ? too_big(size) : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	if (size && n > ((size_t)REPLAY_MALLOC_LIMIT_MB << 20) / size)
		return too_big(n * size);
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	return size > ((size_t)REPLAY_MALLOC_LIMIT_MB << 20) ? too_big(size) : __libc_realloc(p, size);
}
#endif

/* Runs the harness on one file, in a buffer of exactly its size so a read past the end is caught
 * by ASan or valgrind. 0, or -1 with a message when the file cannot be read. */
static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto fail;
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		goto fail;
	fclose(f);
	printf("replay %s\n", path);
	fflush(stdout); /* the last line of the log names the input when the harness crashes */
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
fail:
	fprintf(stderr, "fuzz replay: cannot read %s: %s\n", path, strerror(errno));
	if (f)
		fclose(f);
	free(buf);
	return -1;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Replays path: a file, or every file of a directory in name order. Returns the number of
 * inputs replayed, or -1 when something could not be read. A missing directory is 0 when
 * optional. */
static long replay_path(const char *path, int optional)
{
	struct dirent **names;
	struct stat st;
	long count = 0;
	int n;

	if (stat(path, &st) != 0) {
		if (optional && errno == ENOENT)
			return 0;
		fprintf(stderr, "fuzz replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(path) == 0 ? 1 : -1;
	n = scandir(path, &names, NULL, by_name);
	if (n < 0) {
		fprintf(stderr, "fuzz replay: cannot list %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char file[PATH_MAX];

		if (names[i]->d_name[0] != '.' && count >= 0) {
			snprintf(file, sizeof(file), "%s/%s", path, names[i]->d_name);
			count = replay_file(file) == 0 ? count + 1 : -1;
		}
		free(names[i]);
	}
	free(names);
	return count;
}

/* The target's name from the program's: fuzz_NAME, or libtool's lt-fuzz_NAME. */
static const char *target_name(const char *argv0)
{
	const char *base = strrchr(argv0, '/');

	base = base ? base + 1 : argv0;
	if (strncmp(base, "lt-", 3) == 0)
		base += 3;
	return strncmp(base, "fuzz_", 5) == 0 ? base + 5 : NULL;
}

int main(int argc, char **argv)
{
	const char *srcdir = getenv("TT_TEST_SRCDIR"), *name = target_name(argv[0]);
	char corpus[PATH_MAX], regress[PATH_MAX];
	long seeds, crashes;

	/* With arguments: replay exactly those files or directories (a crash file to debug). */
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if (replay_path(argv[i], 0) < 0)
				return 1;
		return 0;
	}
	if (!name) {
		fprintf(stderr, "fuzz replay: cannot tell the target from the program name '%s' "
			"(want fuzz_NAME)\n", argv[0]);
		return 1;
	}
	if (!srcdir || !*srcdir)
		srcdir = TT_FUZZ_SRCDIR;
	snprintf(corpus, sizeof(corpus), "%s/tests/fuzz/corpus/%s", srcdir, name);
	snprintf(regress, sizeof(regress), "%s/tests/fuzz/regress/%s", srcdir, name);
	seeds = replay_path(corpus, 0);
	crashes = replay_path(regress, 1);
	if (seeds < 0 || crashes < 0)
		return 1;
	if (seeds == 0) {
		fprintf(stderr, "fuzz replay: %s holds no seed input; commit at least one\n", corpus);
		return 1;
	}
	printf("fuzz_%s: replayed %ld seed inputs and %ld regression inputs without a crash\n", name,
	       seeds, crashes);
	return 0;
}
