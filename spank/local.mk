# spank: build rules (filled by its owner)
