/* SPDX-License-Identifier: MIT */
/* sweep_io.c — whole-file reads for train-sweep (see sweep_io.h). */
#include "sweep_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

char *sweep_read_file(const char *path, size_t max, tt_err *err)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len;
	int saved;

	if (!f)
		goto fail_errno;
	text = malloc(max + 1);
	if (!text)
		goto fail_errno;
	len = fread(text, 1, max + 1, f);
	if (ferror(f))
		goto fail_errno;
	if (len > max) {
		tt_err_set(err, "'%s' is larger than %zu bytes; is it the right file?", path, max);
		goto fail;
	}
	text[len] = '\0';
	fclose(f);
	return text;
fail_errno:
	saved = errno;
	tt_err_errno(err, "cannot read '%s'", path);
	errno = saved;
fail:
	saved = errno;
	free(text);
	if (f)
		fclose(f);
	errno = saved;
	return NULL;
}
