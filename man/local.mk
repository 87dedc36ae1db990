# man: build rules (filled by its owner)
dist_man_MANS += man/train-run.1
dist_man_MANS += man/train-topo.1
