/* SPDX-License-Identifier: MIT */
/* test_ckpt.c — checkpoints: write/validate/load round trip, resharding between 3D layouts (data,
 * tensor and pipeline parallel sizes), torn and corrupt directories skipped with a reason,
 * keep-last-K pruning, pruning and removal of torn directories that never follow a symbolic link,
 * files created under the umask, and checkpoint directories another user could plant or redirect
 * refused (tests run as root, so "another user" is made by chown to nobody, uid 65534). */
#include "ckpt.h"
#include "cunit_main.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define NOBODY 65534

/* 4 layers: 4->6, 6->2, 2->4, 4->3; tensor parallelism of 2 splits the 6 and 4 outputs. */
static tt_mlp model;

static int setup(void)
{
	return tt_mlp_parse(&model, "4,6,2,4,3", NULL);
}

/* Value of element g of model layer l in "array" a (0 params, 1 m, 2 v): what every layout holds
 * there, wherever the element lives. */
static float val(int a, int l, size_t g)
{
	return (float)(a * 1000 + l * 100) + (float)g * 0.5f;
}

/* The slices a rank at c of layout lay holds (padding zero). */
static void fill_slices(const tt_plan3d *lay, tt_coords c, tt_part *part, tt_shard_plan *p, float *arr[3])
{
	size_t blocks[TT_MLP_MAX_LAYERS];

	tt_part_build(part, &model, lay, c);
	for (int b = 0; b < part->n_layers; b++)
		blocks[b] = part->len[b];
	tt_shard_plan_init(p, blocks, part->n_layers, lay->dp, c.dp, NULL);
	CU_ASSERT_FATAL(tt_shard_total(p) <= 128);
	for (int a = 0; a < 3; a++) {
		memset(arr[a], 0, sizeof(float) * tt_shard_total(p));
		for (int b = 0; b < p->n_blocks; b++) {
			size_t begin, n = tt_shard_valid(p, b, p->rank, &begin);

			for (size_t i = 0; i < n; i++)
				arr[a][p->shard_off[b] + i] =
					val(a, part->layer[b].global, tt_part_to_model(&model, part, b, begin + i));
		}
	}
}

/* Writes a complete checkpoint of `step` under layout lay (D x T x P ranks) below root, every
 * value plus shift (another step's values are other values). */
static void write_ckpt_shifted(const char *root, long step, tt_plan3d lay, float shift)
{
	int world = lay.dp * lay.tp * lay.pp;
	tt_ckpt_meta meta = { .step = step, .world = world, .zero = 1, .seed = 5, .batch = 12, .layout = lay };
	uint32_t crc[8];
	tt_err err;

	strcpy(meta.layers, "4,6,2,4,3");
	meta.crc = crc;
	CU_ASSERT_EQUAL_FATAL(tt_ckpt_prepare(root, step, &err), 0);
	for (int r = 0; r < world; r++) {
		tt_part part;
		tt_shard_plan p;
		float a0[128], a1[128], a2[128], *arr[3] = { a0, a1, a2 };

		fill_slices(&lay, tt_plan3d_coords(&lay, r), &part, &p, arr);
		for (size_t i = 0; i < tt_shard_total(&p); i++) {
			a0[i] += shift;
			a1[i] += shift;
			a2[i] += shift;
		}
		CU_ASSERT_EQUAL(tt_ckpt_write_rank(root, step, r, &p, a0, a1, a2, &crc[r], &err), 0);
	}
	CU_ASSERT_EQUAL(tt_ckpt_write_meta(root, &meta, &err), 0);
}

static void write_ckpt(const char *root, long step, tt_plan3d lay)
{
	write_ckpt_shifted(root, step, lay, 0.0f);
}

static void make_root(char *root)
{
	strcpy(root, "/tmp/tt-ckpt-XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(root));
}

static void rm_rf(const char *root)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CU_ASSERT_EQUAL(system(cmd), 0);
}

/* Every rank of layout `to` loads what it holds under `to`, bit for bit. */
static void check_loads_under(const char *root, const tt_ckpt_meta *meta, tt_plan3d to)
{
	tt_err err;

	for (int r = 0; r < to.dp * to.tp * to.pp; r++) {
		tt_part part;
		tt_shard_plan p;
		float want0[128], want1[128], want2[128], *want[3] = { want0, want1, want2 };
		float got0[128], got1[128], got2[128];

		fill_slices(&to, tt_plan3d_coords(&to, r), &part, &p, want);
		CU_ASSERT_EQUAL_FATAL(tt_ckpt_load_part(root, meta, &model, &part, &p, got0, got1, got2, &err), 0);
		if (memcmp(got0, want0, sizeof(float) * tt_shard_total(&p)) ||
		    memcmp(got1, want1, sizeof(float) * tt_shard_total(&p)) ||
		    memcmp(got2, want2, sizeof(float) * tt_shard_total(&p)))
			CU_FAIL("loaded slices differ");
	}
}

/* Written under each layout, loaded under each: the same world, another data-parallel size, and
 * other tensor and pipeline splits (resharding). */
static void test_round_trip_and_reshard(void)
{
	static const tt_plan3d layouts[] = { { 1, 1, 1 }, { 2, 1, 1 }, { 3, 1, 1 }, { 1, 2, 1 }, { 2, 2, 1 },
					     { 1, 1, 2 }, { 2, 1, 2 }, { 1, 2, 2 }, { 1, 1, 4 } };
	int n = (int)(sizeof(layouts) / sizeof(layouts[0]));

	for (int from = 0; from < n; from++) {
		char root[64], warn[1024];
		tt_ckpt_meta meta;
		tt_err err;

		make_root(root);
		write_ckpt(root, 7, layouts[from]);
		CU_ASSERT_EQUAL_FATAL(tt_ckpt_find_latest(root, &meta, warn, sizeof(warn), &err), 1);
		CU_ASSERT_EQUAL(meta.step, 7);
		CU_ASSERT_EQUAL(meta.world, layouts[from].dp * layouts[from].tp * layouts[from].pp);
		CU_ASSERT_EQUAL(meta.layout.dp, layouts[from].dp);
		CU_ASSERT_EQUAL(meta.layout.tp, layouts[from].tp);
		CU_ASSERT_EQUAL(meta.layout.pp, layouts[from].pp);
		CU_ASSERT_EQUAL(meta.zero, 1);
		CU_ASSERT_EQUAL(meta.seed, 5);
		CU_ASSERT_EQUAL(meta.batch, 12);
		CU_ASSERT_STRING_EQUAL(meta.layers, "4,6,2,4,3");
		CU_ASSERT_STRING_EQUAL(warn, "");
		for (int to = 0; to < n; to++)
			check_loads_under(root, &meta, layouts[to]);
		tt_ckpt_meta_free(&meta);
		rm_rf(root);
	}
}

/* A checkpoint of another model is refused, naming --layers. */
static void test_other_model_refused(void)
{
	char root[64], warn[1024];
	tt_ckpt_meta meta;
	tt_mlp other;
	tt_part part;
	tt_shard_plan p;
	size_t blocks[TT_MLP_MAX_LAYERS];
	float x[128], y[128], z[128];
	tt_plan3d one = { 1, 1, 1 };
	tt_err err;

	make_root(root);
	write_ckpt(root, 3, one);
	CU_ASSERT_EQUAL_FATAL(tt_ckpt_find_latest(root, &meta, warn, sizeof(warn), &err), 1);
	CU_ASSERT_EQUAL_FATAL(tt_mlp_parse(&other, "4,6,2,4,2", &err), 0);
	tt_part_build(&part, &other, &one, (tt_coords){ 0, 0, 0 });
	for (int b = 0; b < part.n_layers; b++)
		blocks[b] = part.len[b];
	tt_shard_plan_init(&p, blocks, part.n_layers, 1, 0, &err);
	CU_ASSERT_EQUAL(tt_ckpt_load_part(root, &meta, &other, &part, &p, x, y, z, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--layers"));
	tt_ckpt_meta_free(&meta);
	rm_rf(root);
}

/* A metadata file whose layout does not make its world is refused with both numbers. */
static void test_bad_layout_line_refused(void)
{
	char root[64], path[256];
	tt_ckpt_meta meta = { .step = 5, .world = 2, .zero = 0, .seed = 5, .batch = 12, .layout = { 2, 2, 1 } };
	uint32_t crc[2] = { 0, 0 };
	tt_err err;

	make_root(root);
	strcpy(meta.layers, "4,6,2,4,3");
	meta.crc = crc;
	CU_ASSERT_EQUAL_FATAL(tt_ckpt_prepare(root, 5, &err), 0);
	CU_ASSERT_EQUAL(tt_ckpt_write_meta(root, &meta, &err), 0);
	snprintf(path, sizeof(path), "%s/step-00000005", root);
	CU_ASSERT_EQUAL(tt_ckpt_validate(root, 5, &meta, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "layout 2x2x1 does not make its world of 2 ranks"));
	rm_rf(root);
}

static void corrupt_byte(const char *path, long off)
{
	FILE *f = fopen(path, "r+b");
	int c;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fseek(f, off, off < 0 ? SEEK_END : SEEK_SET);
	c = fgetc(f);
	fseek(f, off, off < 0 ? SEEK_END : SEEK_SET);
	fputc(c ^ 0x40, f);
	fclose(f);
}

static void test_torn_and_corrupt_are_skipped(void)
{
	char root[64], warn[4096], path[256];
	tt_ckpt_meta meta;
	tt_err err;

	make_root(root);
	write_ckpt(root, 1, (tt_plan3d){ 2, 1, 1 });
	write_ckpt(root, 2, (tt_plan3d){ 2, 1, 1 });
	write_ckpt(root, 3, (tt_plan3d){ 2, 1, 1 });
	write_ckpt(root, 4, (tt_plan3d){ 2, 1, 1 });
	/* step 4: a rank file flipped by one bit; step 3: meta.txt edited; step 2: meta never written */
	snprintf(path, sizeof(path), "%s/step-00000004/rank-00001.bin", root);
	corrupt_byte(path, 40);
	snprintf(path, sizeof(path), "%s/step-00000003/meta.txt", root);
	corrupt_byte(path, 30);
	snprintf(path, sizeof(path), "%s/step-00000002/meta.txt", root);
	CU_ASSERT_EQUAL(unlink(path), 0);
	/* a step directory only just created, and a stray non-checkpoint entry */
	snprintf(path, sizeof(path), "%s/step-00000009", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/notes", root);
	mkdir(path, 0755);
	CU_ASSERT_EQUAL_FATAL(tt_ckpt_find_latest(root, &meta, warn, sizeof(warn), &err), 1);
	CU_ASSERT_EQUAL(meta.step, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(warn, "step-00000009: cannot open"));
	CU_ASSERT_PTR_NOT_NULL(strstr(warn, "rank-00001.bin fails its CRC"));
	CU_ASSERT_PTR_NOT_NULL(strstr(warn, "meta.txt fails its CRC"));
	CU_ASSERT_PTR_NOT_NULL(strstr(warn, "step-00000002: cannot open"));
	tt_ckpt_meta_free(&meta);
	/* truncated rank file */
	snprintf(path, sizeof(path), "%s/step-00000001/rank-00000.bin", root);
	CU_ASSERT_EQUAL(truncate(path, 20), 0);
	CU_ASSERT_EQUAL(tt_ckpt_find_latest(root, &meta, warn, sizeof(warn), &err), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(warn, "truncated"));
	CU_ASSERT_EQUAL(tt_ckpt_find_latest("/nonexistent/ckpt", &meta, warn, sizeof(warn), &err), 0);
	rm_rf(root);
}

/* A rank file whole in itself (its own CRC holds) but from another step: meta.txt's CRC of that
 * rank tells, and the step is skipped for the older intact one. */
static void test_rank_file_of_another_step_refused(void)
{
	char root[64], warn[4096], from[256], to[256], cmd[600];
	tt_ckpt_meta meta;
	tt_err err;

	make_root(root);
	write_ckpt(root, 3, (tt_plan3d){ 2, 1, 1 });
	write_ckpt(root, 4, (tt_plan3d){ 2, 1, 1 });
	write_ckpt_shifted(root, 5, (tt_plan3d){ 2, 1, 1 }, 0.5f);
	snprintf(from, sizeof(from), "%s/step-00000005/rank-00001.bin", root);
	snprintf(to, sizeof(to), "%s/step-00000004/rank-00001.bin", root);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "rm -r '%s/step-00000005'", root);
	CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
	err.msg[0] = '\0';
	CU_ASSERT_EQUAL(tt_ckpt_validate(root, 4, &meta, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "rank-00001.bin fails its CRC check"));
	CU_ASSERT_EQUAL_FATAL(tt_ckpt_find_latest(root, &meta, warn, sizeof(warn), &err), 1);
	CU_ASSERT_EQUAL(meta.step, 3);
	tt_ckpt_meta_free(&meta);
	rm_rf(root);
}

/* A rank file too short for its header is refused as truncated even when its CRC and meta.txt's
 * agree (a forged step: meta.txt written again with that CRC), not taken as valid. */
static void test_headerless_rank_file_refused_even_with_matching_crcs(void)
{
	char root[64], path[256];
	unsigned char forged[8] = "abcd";
	uint32_t crc[2], c = (uint32_t)crc32(0L, forged, 4);
	tt_ckpt_meta meta = { .step = 6, .world = 2, .zero = 1, .seed = 5, .batch = 12,
			      .layout = (tt_plan3d){ 2, 1, 1 } };
	FILE *f;
	tt_err err;

	make_root(root);
	write_ckpt(root, 6, (tt_plan3d){ 2, 1, 1 });
	/* rank 0 stays as written: its CRC is its trailer */
	snprintf(path, sizeof(path), "%s/step-00000006/rank-00000.bin", root);
	f = fopen(path, "rb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(fseek(f, -4, SEEK_END), 0);
	CU_ASSERT_EQUAL(fread(&crc[0], 4, 1, f), 1);
	fclose(f);
	snprintf(path, sizeof(path), "%s/step-00000006/rank-00001.bin", root);
	memcpy(forged + 4, &c, 4);
	f = fopen(path, "wb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(fwrite(forged, 1, sizeof(forged), f), sizeof(forged));
	fclose(f);
	crc[1] = c;
	strcpy(meta.layers, "4,6,2,4,3");
	meta.crc = crc;
	CU_ASSERT_EQUAL_FATAL(tt_ckpt_write_meta(root, &meta, &err), 0);
	err.msg[0] = '\0';
	CU_ASSERT_EQUAL(tt_ckpt_validate(root, 6, &meta, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "rank-00001.bin is truncated"));
	rm_rf(root);
}

static void test_prune_keeps_newest_valid(void)
{
	char root[64], path[256];
	struct stat st;
	tt_err err;

	make_root(root);
	for (long s = 10; s <= 50; s += 10)
		write_ckpt(root, s, (tt_plan3d){ 1, 1, 1 });
	snprintf(path, sizeof(path), "%s/step-00000050/meta.txt", root);
	unlink(path); /* 50 is torn (e.g. still being written): kept, not counted */
	CU_ASSERT_EQUAL(tt_ckpt_prune(root, 2, &err), 0);
	snprintf(path, sizeof(path), "%s/step-00000050", root);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/step-00000040", root);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/step-00000030", root);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/step-00000020", root);
	CU_ASSERT_NOT_EQUAL(stat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/step-00000010", root);
	CU_ASSERT_NOT_EQUAL(stat(path, &st), 0);
	rm_rf(root);
}

static int exists(const char *root, const char *rel)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return lstat(path, &st) == 0;
}

static void put_file(const char *root, const char *rel)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("precious\n", f);
	fclose(f);
}

static void link_at(const char *target, const char *root, const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	CU_ASSERT_EQUAL_FATAL(symlink(target, path), 0);
}

/* `ln -s ~/victim ck/step-00000000` and --keep 1 deleted the victim's files: a step-* link is
 * removed as a link, a link inside a step directory is removed as a link, targets stay. */
static void test_prune_never_follows_links(void)
{
	char root[64], victim[64], target[600];
	tt_err err;

	make_root(root);
	make_root(victim);
	put_file(victim, "thesis.tex");
	put_file(victim, "data.bin");
	link_at(victim, root, "step-00000000");
	write_ckpt(root, 10, (tt_plan3d){ 1, 1, 1 });
	snprintf(target, sizeof(target), "%s/data.bin", victim);
	link_at(target, root, "step-00000010/extra-link");
	write_ckpt(root, 20, (tt_plan3d){ 1, 1, 1 });
	CU_ASSERT_EQUAL(tt_ckpt_prune(root, 1, &err), 0);
	CU_ASSERT(exists(victim, "thesis.tex"));
	CU_ASSERT(exists(victim, "data.bin"));
	CU_ASSERT(!exists(root, "step-00000000"));
	CU_ASSERT(!exists(root, "step-00000010"));
	CU_ASSERT(exists(root, "step-00000020/meta.txt"));
	/* A directory inside a step directory means it is not ours: left alone, with a reason. */
	write_ckpt(root, 30, (tt_plan3d){ 1, 1, 1 });
	write_ckpt(root, 40, (tt_plan3d){ 1, 1, 1 });
	snprintf(target, sizeof(target), "%s/step-00000030/sub", root);
	mkdir(target, 0755);
	CU_ASSERT_EQUAL(tt_ckpt_prune(root, 1, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not a checkpoint"));
	CU_ASSERT(exists(root, "step-00000030/sub"));
	rm_rf(root);
	rm_rf(victim);
}

/* A run killed while writing, or a write that failed (disk full), leaves a torn step directory:
 * tt_ckpt_remove_torn removes those from a step on, keeps valid ones, follows no link. */
static void test_remove_torn(void)
{
	char root[64], victim[64], note[2048], path[256];
	tt_err err;

	make_root(root);
	make_root(victim);
	put_file(victim, "keep.txt");
	write_ckpt(root, 10, (tt_plan3d){ 2, 1, 1 });
	write_ckpt(root, 20, (tt_plan3d){ 2, 1, 1 });
	write_ckpt(root, 30, (tt_plan3d){ 2, 1, 1 });
	snprintf(path, sizeof(path), "%s/step-00000020/meta.txt", root);
	unlink(path);
	put_file(root, "step-00000030/rank-00001.bin.tmp.1234abcd");
	snprintf(path, sizeof(path), "%s/step-00000030/rank-00001.bin", root);
	unlink(path);
	snprintf(path, sizeof(path), "%s/step-00000030/meta.txt", root);
	unlink(path);
	link_at(victim, root, "step-00000040");
	/* Not before the step given. */
	CU_ASSERT_EQUAL(tt_ckpt_remove_torn(root, 35, note, sizeof(note), &err), 0);
	CU_ASSERT(exists(root, "step-00000030"));
	CU_ASSERT(!exists(root, "step-00000040"));
	CU_ASSERT(exists(victim, "keep.txt"));
	CU_ASSERT_EQUAL(tt_ckpt_remove_torn(root, 11, note, sizeof(note), &err), 0);
	CU_ASSERT(exists(root, "step-00000010/meta.txt"));
	CU_ASSERT(!exists(root, "step-00000020"));
	CU_ASSERT(!exists(root, "step-00000030"));
	CU_ASSERT_PTR_NOT_NULL(strstr(note, "removed torn checkpoint"));
	CU_ASSERT_PTR_NOT_NULL(strstr(note, "step-00000020: "));
	CU_ASSERT_PTR_NOT_NULL(strstr(note, "step-00000030: "));
	rm_rf(root);
	rm_rf(victim);
}

/* Files used to be forced to 0644: under umask 077 checkpoints must come out 0600. */
static void test_files_honour_umask(void)
{
	static const struct {
		mode_t mask, want;
	} cases[] = { { 077, 0600 }, { 022, 0644 }, { 027, 0640 } };
	char root[64], path[256];
	mode_t saved = umask(022);
	struct stat st;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		make_root(root);
		umask(cases[i].mask);
		write_ckpt(root, 1, (tt_plan3d){ 1, 1, 1 });
		snprintf(path, sizeof(path), "%s/step-00000001/rank-00000.bin", root);
		CU_ASSERT_EQUAL(stat(path, &st), 0);
		CU_ASSERT_EQUAL(st.st_mode & 0777, cases[i].want);
		snprintf(path, sizeof(path), "%s/step-00000001/meta.txt", root);
		CU_ASSERT_EQUAL(stat(path, &st), 0);
		CU_ASSERT_EQUAL(st.st_mode & 0777, cases[i].want);
		umask(022);
		rm_rf(root);
	}
	umask(saved);
}

/* No temporary file is left next to the files of a step directory. */
static int count_temps(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((e = readdir(d)))
		n += strstr(e->d_name, ".tmp.") != NULL;
	closedir(d);
	return n;
}

/* Writing a step again replaces its files whole (rename through the step's descriptor). */
static void test_rewrite_is_atomic(void)
{
	char root[64], path[256];
	tt_ckpt_meta meta;
	tt_err err;

	make_root(root);
	write_ckpt(root, 4, (tt_plan3d){ 2, 1, 1 });
	write_ckpt(root, 4, (tt_plan3d){ 2, 1, 1 });
	CU_ASSERT_EQUAL(tt_ckpt_validate(root, 4, &meta, &err), 0);
	tt_ckpt_meta_free(&meta);
	snprintf(path, sizeof(path), "%s/step-00000004", root);
	CU_ASSERT_EQUAL(count_temps(path), 0);
	rm_rf(root);
}

/* Every entry point refuses root with a message containing want (and the path). */
static void assert_refused(const char *root, const char *want)
{
	tt_ckpt_meta meta;
	char warn[1024];
	tt_err err;

	err.msg[0] = '\0';
	CU_ASSERT_EQUAL(tt_ckpt_find_latest(root, &meta, warn, sizeof(warn), &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, want));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, root));
	CU_ASSERT_EQUAL(tt_ckpt_check_root(root, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, want));
	CU_ASSERT_EQUAL(tt_ckpt_prepare(root, 99, &err), -1);
	CU_ASSERT_EQUAL(tt_ckpt_validate(root, 10, &meta, &err), -1);
	CU_ASSERT_EQUAL(tt_ckpt_prune(root, 1, &err), -1);
	CU_ASSERT_EQUAL(tt_ckpt_remove_torn(root, 0, NULL, 0, &err), -1);
}

/* The attack: another user prepares the checkpoint root (theirs, or world-writable) holding their
 * step; the victim must neither resume from it nor prune in it. */
static void test_foreign_root_refused(void)
{
	char root[64];

	make_root(root);
	write_ckpt(root, 10, (tt_plan3d){ 1, 1, 1 });
	write_ckpt(root, 20, (tt_plan3d){ 1, 1, 1 });
	CU_ASSERT_EQUAL_FATAL(chown(root, NOBODY, NOBODY), 0);
	assert_refused(root, "uid 65534), not to you");
	assert_refused(root, "give a --ckpt-dir of your own");
	CU_ASSERT(exists(root, "step-00000010/meta.txt")); /* prune removed nothing */
	CU_ASSERT(!exists(root, "step-00000099"));
	CU_ASSERT_EQUAL(chown(root, geteuid(), getegid()), 0);
	CU_ASSERT_EQUAL(chmod(root, 0777), 0);
	assert_refused(root, "is writable by everyone");
	assert_refused(root, "chmod go-w");
	CU_ASSERT_EQUAL(chmod(root, 0770), 0);
	assert_refused(root, "is writable by its group");
	CU_ASSERT(exists(root, "step-00000010/meta.txt"));
	CU_ASSERT_EQUAL(chmod(root, 0700), 0);
	rm_rf(root);
}

/* The root named as a link (anyone's) is refused; a link on the way to it only when another user
 * owns it. */
static void test_linked_root_refused(void)
{
	char root[64], base[64], link[128], via[256];
	tt_ckpt_meta meta;
	tt_err err;

	make_root(root);
	make_root(base);
	write_ckpt(root, 1, (tt_plan3d){ 1, 1, 1 });
	write_ckpt(root, 2, (tt_plan3d){ 1, 1, 1 });
	snprintf(link, sizeof(link), "%s/ck", base);
	CU_ASSERT_EQUAL_FATAL(symlink(root, link), 0);
	assert_refused(link, "is a symbolic link");
	CU_ASSERT(exists(root, "step-00000001/meta.txt"));
	/* as a directory on the way: ours is followed, another user's is not */
	snprintf(link, sizeof(link), "%s/up", base);
	CU_ASSERT_EQUAL_FATAL(symlink("/tmp", link), 0);
	snprintf(via, sizeof(via), "%s/%s", link, root + strlen("/tmp/"));
	CU_ASSERT_EQUAL(tt_ckpt_find_latest(via, &meta, NULL, 0, &err), 1);
	tt_ckpt_meta_free(&meta);
	CU_ASSERT_EQUAL_FATAL(lchown(link, NOBODY, NOBODY), 0);
	assert_refused(via, "uid 65534): refusing to follow another user's link");
	CU_ASSERT(exists(root, "step-00000001/meta.txt"));
	rm_rf(root);
	rm_rf(base);
}

/* A step directory that is a link to another checkpoint (the attacker's weights, or the victim's
 * other run) or belongs to another user is refused on resume, never followed when pruning. */
static void test_foreign_step_refused(void)
{
	char root[64], victim[64], target[128], path[256];
	tt_ckpt_meta meta;
	tt_err err;

	make_root(root);
	make_root(victim);
	write_ckpt(victim, 50, (tt_plan3d){ 1, 1, 1 });
	write_ckpt(root, 10, (tt_plan3d){ 1, 1, 1 });
	snprintf(target, sizeof(target), "%s/step-00000050", victim);
	link_at(target, root, "step-00000050");
	CU_ASSERT_EQUAL(tt_ckpt_find_latest(root, &meta, NULL, 0, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "step-00000050 is a symbolic link"));
	CU_ASSERT_EQUAL(tt_ckpt_validate(root, 50, &meta, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "symbolic link"));
	/* pruning removes an old link itself, nothing behind it */
	snprintf(path, sizeof(path), "%s/step-00000050", root);
	CU_ASSERT_EQUAL(unlink(path), 0);
	link_at(target, root, "step-00000005");
	write_ckpt(root, 20, (tt_plan3d){ 1, 1, 1 });
	CU_ASSERT_EQUAL(tt_ckpt_prune(root, 2, &err), 0);
	CU_ASSERT(!exists(root, "step-00000005"));
	CU_ASSERT(exists(victim, "step-00000050/meta.txt"));
	CU_ASSERT(exists(victim, "step-00000050/rank-00000.bin"));
	CU_ASSERT(exists(root, "step-00000010/meta.txt"));
	/* another user's step directory inside our root */
	write_ckpt(root, 30, (tt_plan3d){ 1, 1, 1 });
	snprintf(path, sizeof(path), "%s/step-00000030", root);
	CU_ASSERT_EQUAL_FATAL(chown(path, NOBODY, NOBODY), 0);
	CU_ASSERT_EQUAL(tt_ckpt_find_latest(root, &meta, NULL, 0, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "step-00000030 belongs to"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "uid 65534)"));
	CU_ASSERT_EQUAL(tt_ckpt_remove_torn(root, 0, NULL, 0, &err), -1);
	CU_ASSERT(exists(root, "step-00000030/meta.txt"));
	rm_rf(root);
	rm_rf(victim);
}

/* The same seen by a real second user: a child that setuid()s to nobody finds a root that root
 * (another user to it) made, and one of its own that is world-writable, and refuses both. */
static void test_as_unprivileged_user(void)
{
	char mine[64], open_dir[64];
	int status;
	pid_t pid;

	make_root(mine);
	make_root(open_dir);
	write_ckpt(mine, 1, (tt_plan3d){ 1, 1, 1 });
	CU_ASSERT_EQUAL(chmod(mine, 0755), 0);
	CU_ASSERT_EQUAL(chown(open_dir, NOBODY, NOBODY), 0);
	CU_ASSERT_EQUAL(chmod(open_dir, 0777), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		tt_ckpt_meta meta;
		tt_err err;
		int bad = 0;

		if (setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
			_exit(3);
		bad |= tt_ckpt_find_latest(mine, &meta, NULL, 0, &err) != -1 || !strstr(err.msg, "belongs to root");
		bad |= (tt_ckpt_check_root(open_dir, &err) != -1 || !strstr(err.msg, "writable by everyone")) << 1;
		_exit(bad);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status));
	CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
	rm_rf(mine);
	rm_rf(open_dir);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("ckpt", setup, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "round trip and reshard between layouts", test_round_trip_and_reshard);
	CU_add_test(s, "another model refused", test_other_model_refused);
	CU_add_test(s, "bad layout line refused", test_bad_layout_line_refused);
	CU_add_test(s, "torn and corrupt are skipped", test_torn_and_corrupt_are_skipped);
	CU_add_test(s, "a rank file of another step refused", test_rank_file_of_another_step_refused);
	CU_add_test(s, "a header-less rank file refused though CRCs agree",
		    test_headerless_rank_file_refused_even_with_matching_crcs);
	CU_add_test(s, "prune keeps newest valid", test_prune_keeps_newest_valid);
	CU_add_test(s, "prune never follows links", test_prune_never_follows_links);
	CU_add_test(s, "torn directories are removed", test_remove_torn);
	CU_add_test(s, "files honour the umask", test_files_honour_umask);
	CU_add_test(s, "rewriting a step is atomic", test_rewrite_is_atomic);
	CU_add_test(s, "another user's or a world-writable root refused", test_foreign_root_refused);
	CU_add_test(s, "a linked root refused", test_linked_root_refused);
	CU_add_test(s, "a linked or foreign step refused", test_foreign_step_refused);
	CU_add_test(s, "refused as an unprivileged user", test_as_unprivileged_user);
	return 0;
}
