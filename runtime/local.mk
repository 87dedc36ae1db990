# runtime: build rules (filled by its owner)
