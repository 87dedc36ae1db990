/* tt_signal.h — the checkpoint signals a user may name (USR1, USR2, TERM, INT, HUP, URG; with or
 * without "SIG", any case): one table for the plugin's signal= and train-mlp's --signal. */
#ifndef TT_SIGNAL_H
#define TT_SIGNAL_H

/* The signal number for name, or -1 when it is not one of the names above. */
int tt_signal_by_name(const char *name);

#endif
