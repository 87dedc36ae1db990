# sbatch-templates: build rules (filled by its owner)
