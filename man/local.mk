# man/: manual pages.
dist_man_MANS += man/train_topo.8
dist_man_MANS += man/train-topo.1
dist_man_MANS += man/train-run.1
dist_man_MANS += man/trainrt.3 man/trainrt-bench.1
dist_man_MANS += man/train-mlp.1
dist_man_MANS += man/train-sweep.1
