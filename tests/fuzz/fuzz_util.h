/* SPDX-License-Identifier: MIT */
/* fuzz_util.h — turning a fuzzer's bytes into what the parsers take: a C string, an argv, an
 * environment of NAME=VALUE lines, a file name. Header-only (static functions), so every harness
 * stays one fuzz_<name>.c linked with the libraries it tests. */
#ifndef TT_FUZZ_UTIL_H
#define TT_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* An invariant a harness checks beyond "no crash": a failure aborts, which libFuzzer and the
 * replay both report as a crash on that input. */
#define FUZZ_CHECK(cond)                                                                        \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                \
		}                                                                               \
	} while (0)

/* The input as a malloc'ed C string; an embedded NUL ends it, as it would end an argument or an
 * environment value. Never NULL (an allocation failure aborts: it is no finding). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* Cuts s in place at every character of seps and returns a malloc'ed NULL-terminated vector of
 * the pieces (empty ones included), after argv0 when it is not NULL; *count gets their number. */
static inline char **fuzz_split(char *s, const char *seps, const char *argv0, int *count)
{
	size_t cap = 2, n = 0;
	char **v;

	for (const char *p = s; *p; p++)
		cap += strchr(seps, *p) != NULL;
	v = malloc((cap + 1) * sizeof(*v));
	if (!v)
		abort();
	if (argv0)
		v[n++] = (char *)argv0;
	v[n++] = s;
	for (char *p = s; *p; p++)
		if (strchr(seps, *p)) {
			*p = '\0';
			v[n++] = p + 1;
		}
	v[n] = NULL;
	*count = (int)n;
	return v;
}

/* A malloc'ed copy of the NULL-terminated vector v of n entries: getopt permutes the vector it
 * parses, so parsing one argument list twice takes two. */
static inline char **fuzz_vector_copy(char **v, int n)
{
	char **copy = malloc(sizeof(*copy) * ((size_t)n + 1));

	if (!copy)
		abort();
	memcpy(copy, v, sizeof(*copy) * ((size_t)n + 1));
	return copy;
}

/* Puts data in an anonymous in-memory file for parsers that open a path: path receives
 * "/proc/self/fd/N". Returns the descriptor (close it when done); aborts when it cannot. */
static inline int fuzz_memfile(const uint8_t *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("fuzz-input", 0);

	if (fd < 0)
		abort();
	for (size_t done = 0; done < size;) {
		ssize_t w = write(fd, data + done, size - done);

		if (w <= 0)
			abort();
		done += (size_t)w;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

#endif
