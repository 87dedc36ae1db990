# man: build rules (filled by its owner)
dist_man_MANS += man/trainrt.3 man/trainrt-bench.1
dist_man_MANS += man/train-mlp.1
