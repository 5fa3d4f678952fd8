import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import type { Config } from '../core/config/schema.ts';
import type { Logger } from '../core/logging.ts';
import type { ActionRegistry } from './actions/registry.ts';
import type { EventQueryLimits } from './read-models/events.ts';
import type { EndpointInfo } from './read-models/overview.ts';

/** What every page and action of one console process shares. */
export interface ConsoleContext {
  readonly pool: pg.Pool;
  readonly boss: PgBoss;
  readonly logger: Logger;
  /** The configured endpoints, sorted. */
  readonly endpoints: readonly string[];
  readonly endpointInfo: Readonly<Record<string, EndpointInfo>>;
  readonly limits: EventQueryLimits;
  readonly latencySample: number;
  readonly queryTimeoutMs: number;
  readonly actions: ActionRegistry;
  readonly demo: boolean;
  readonly config: Config;
}
