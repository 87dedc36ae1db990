# sbatch-templates/: job scripts users copy; installed as examples.
templatesdir = $(pkgdatadir)/sbatch-templates
dist_templates_SCRIPTS = sbatch-templates/job.sh
