import { DISCARDED_STATUS, STUCK_STATUSES } from '../../core/inbox/status.ts';

// The fixed lists that options offer (`--status`), apart from the commands that use them: the
// program names them when it is built, and must not load every command's module to do so.

/** What `hookgate requeue --status` takes: stuck events, and discarded ones when asked by name. */
export const REQUEUE_STATUSES = [...STUCK_STATUSES, DISCARDED_STATUS] as const;

/** A destination delivery's states, as `hookgate deliveries list --status` takes them. */
export const DELIVERY_STATUSES = ['pending', 'sending', 'retrying', 'held', 'delivered', 'dead'] as const;
