/** Exit codes every command shares: scripts and on-call runbooks rely on them. */
export const EXIT_OK = 0;
/** Something operational failed: the database is down, a check failed, a gateway refused. */
export const EXIT_FAILURE = 1;
/** The command was used wrongly: a flag, a value, an endpoint, or there was nothing to do. */
export const EXIT_USAGE = 2;
