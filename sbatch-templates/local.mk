# sbatch-templates/: job scripts users copy; installed as examples.
templatesdir = $(pkgdatadir)/sbatch-templates
dist_templates_SCRIPTS = sbatch-templates/job.sh
dist_templates_SCRIPTS += sbatch-templates/sweep.sh sbatch-templates/requeue.sh
dist_templates_DATA = sbatch-templates/example.sweep
