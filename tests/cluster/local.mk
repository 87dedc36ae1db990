# tests/cluster: build rules (filled by its owner)
