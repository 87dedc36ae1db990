# SPDX-License-Identifier: MIT
# sbatch-templates/: job scripts users copy; installed as examples with the commands (train-run).
templatesdir = $(pkgdatadir)/sbatch-templates
if BUILD_LAUNCHER
dist_templates_SCRIPTS = sbatch-templates/job.sh
dist_templates_SCRIPTS += sbatch-templates/sweep.sh sbatch-templates/requeue.sh
dist_templates_DATA = sbatch-templates/example.sweep
endif
EXTRA_DIST += sbatch-templates/job.sh sbatch-templates/sweep.sh sbatch-templates/requeue.sh \
	sbatch-templates/example.sweep
