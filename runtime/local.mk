# runtime: build rules (filled by its owner)

# libtrainrt, communication part: rendezvous store, backends (shm, tcp, hierarchical, nccl), collectives.
include_HEADERS += runtime/trainrt.h
