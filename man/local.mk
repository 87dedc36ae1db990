# man: build rules (filled by its owner)
