# wrapper: build rules (filled by its owner)
