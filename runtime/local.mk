# runtime: build rules (filled by its owner)

# libtrainrt, communication part: rendezvous store, backends (shm, tcp, hierarchical, nccl), collectives.
include_HEADERS += runtime/trainrt.h

# ---- trainer: model, optimizer, data, DDP/ZeRO math, checkpoints (libtrainmodel) and train-mlp ----
# libtrainmodel is a convenience library so unit tests link the model code without the comm layer.
noinst_LTLIBRARIES += libtrainmodel.la
libtrainmodel_la_SOURCES = \
	runtime/rng.h \
	runtime/mlp.h runtime/mlp.c \
	runtime/adamw.h runtime/adamw.c \
	runtime/idx.h runtime/idx.c \
	runtime/dataset.h runtime/dataset.c \
	runtime/bucket.h runtime/bucket.c \
	runtime/shard.h runtime/shard.c \
	runtime/atomic_file.h runtime/atomic_file.c \
	runtime/ckpt.h runtime/ckpt.c \
	runtime/train_opts.h runtime/train_opts.c
libtrainmodel_la_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
libtrainmodel_la_LIBADD = $(OPENBLAS_LIBS) -lz -lm
