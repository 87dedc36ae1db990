# man: build rules (filled by its owner)
dist_man_MANS += man/train-mlp.1
