/* SPDX-License-Identifier: MIT */
/* fuzz_ckpt.c — checkpoint discovery and loading (runtime/trainer/ckpt): meta.txt and the rank files of
 * one step directory come from the input, which is
 *     byte 0: the loading rank (bits 0-1: data-parallel world-1, 2-3: rank; the model is the one
 *             meta.txt names, when small) and what the harness leaves alone (bit 6: rank
 *             file CRC trailers, bit 7: the meta_crc line),
 *     then meta.txt's lines, then each rank file, each after a line "@@@".
 * Unless told otherwise the harness appends the CRCs a real writer would (meta_crc, one rank_crc
 * line per rank file and each rank file's trailer), so the fuzzer gets past the checksums to the
 * parsers behind them. A checkpoint that validates must name a CRC per rank; loading it as any
 * rank either fills the slices or fails with a message. */
#include "ckpt.h"
#include "mlp.h"
#include "parallel.h"

#include "fuzz_util.h"

#include <sys/stat.h>
#include <zlib.h>

#define MAX_RANK_FILES 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64], stepdir[96];

static void file_path(char *out, size_t len, int rank)
{
	if (rank < 0)
		snprintf(out, len, "%s/meta.txt", stepdir);
	else
		snprintf(out, len, "%s/rank-%05d.bin", stepdir, rank);
}

static void remove_files(void)
{
	char path[128];

	for (int r = -1; r < MAX_RANK_FILES; r++) {
		file_path(path, sizeof(path), r);
		unlink(path);
	}
}

static void remove_root(void)
{
	remove_files();
	rmdir(stepdir);
	rmdir(root);
}

/* The scratch checkpoint root, in memory where /dev/shm exists: ROOT/step-00000001. */
static void make_root(void)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	snprintf(root, sizeof(root), "%s/tt-fuzz-ckpt.XXXXXX", base);
	if (!mkdtemp(root))
		abort();
	tt_ckpt_step_dir(stepdir, sizeof(stepdir), root, 1);
	if (mkdir(stepdir, 0700) != 0)
		abort();
	atexit(remove_root);
}

static void write_file(const char *path, const void *a, size_t alen, const void *b, size_t blen)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(a, 1, alen, f) != alen || fwrite(b, 1, blen, f) != blen || fclose(f) != 0)
		abort();
}

/* The next piece of [*p, end) up to the separator line (with the newline before it when
 * text), and *p past it. */
static size_t next_piece(const uint8_t **p, const uint8_t *end, const uint8_t **piece, int text)
{
	static const char sep[] = "\n@@@\n";
	const uint8_t *q = *p;

	*piece = q;
	for (; q < end; q++)
		if ((size_t)(end - q) >= sizeof(sep) - 1 && memcmp(q, sep, sizeof(sep) - 1) == 0) {
			*p = q + sizeof(sep) - 1;
			return (size_t)(q - *piece) + (text ? 1 : 0);
		}
	*p = end;
	return (size_t)(end - *piece);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static float p[64], m[64], v[64];
	const uint8_t *cur = data + 1, *end = data + size, *meta_text, *piece;
	uint8_t plan_byte;
	size_t meta_len, rank_len;
	char path[128], tail[512 * MAX_RANK_FILES], *t = tail;
	int nranks = 0;
	uLong meta_crc;
	tt_shard_plan plan;
	tt_mlp model;
	tt_ckpt_meta meta;
	tt_err err = { "" };
	int found;

	if (size < 1)
		return 0;
	if (!root[0])
		make_root();
	remove_files();
	plan_byte = data[0];
	meta_len = next_piece(&cur, end, &meta_text, 1);
	while (cur < end && nranks < MAX_RANK_FILES) {
		uint32_t crc;

		rank_len = next_piece(&cur, end, &piece, 0);
		crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), piece, (uInt)rank_len);
		file_path(path, sizeof(path), nranks);
		write_file(path, piece, rank_len, &crc, plan_byte & 0x40 ? 0 : sizeof(crc));
		t += sprintf(t, "rank_crc %d %08x\n", nranks, crc);
		nranks++;
	}
	/* meta.txt: the fuzzer's lines, the rank CRCs, then the CRC of all that. */
	meta_crc = crc32(crc32(crc32(0L, Z_NULL, 0), meta_text, (uInt)meta_len), (const Bytef *)tail,
			 (uInt)(t - tail));
	if (!(plan_byte & 0x80))
		sprintf(t, "meta_crc %08lx\n", meta_crc);
	file_path(path, sizeof(path), -1);
	write_file(path, meta_text, meta_len, tail, strlen(tail));

	found = tt_ckpt_find_latest(root, &meta, NULL, 0, &err);
	FUZZ_CHECK(found == 0 || found == 1);
	if (!found)
		return 0;
	FUZZ_CHECK(meta.world >= 1 && meta.crc != NULL);
	/* Loading as a rank of a data-parallel layout of 1-4 ranks, of the model meta.txt names when
	 * it is small (the trainer compares it with its own --layers first). */
	if (tt_mlp_parse(&model, meta.layers, &err) == 0 && model.param_off[model.n_layers] <= sizeof(p) / sizeof(p[0])) {
		tt_plan3d lay = { 1 + (plan_byte & 3), 1, 1 };
		int rank = (plan_byte >> 2 & 3) % lay.dp;
		tt_part part;

		tt_part_build(&part, &model, &lay, tt_plan3d_coords(&lay, rank));
		if (tt_shard_plan_init(&plan, part.len, part.n_layers, lay.dp, rank, &err) == 0) {
			FUZZ_CHECK(tt_shard_total(&plan) <= sizeof(p) / sizeof(p[0]));
			if (tt_ckpt_load_part(root, &meta, &model, &part, &plan, p, m, v, &err) != 0)
				FUZZ_CHECK(err.msg[0] != '\0');
		}
	}
	tt_ckpt_meta_free(&meta);
	return 0;
}
