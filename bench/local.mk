# bench: build rules (filled by its owner)
