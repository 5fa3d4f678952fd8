import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import type { Config } from '../../core/config/schema.ts';
import type { Logger } from '../../core/logging.ts';
import type { Viewer } from '../security/viewer.ts';

/**
 * An operator action the console offers. Each goes through the same function as its CLI command
 * (the console adds no behaviour of its own), shows what it would do (a dry run with a count)
 * before asking to confirm, and is logged with the console user. Adding one (discard, pause,
 * resume, redeliver, quarantine release…) is one file that exports an action and one line below.
 */
export interface ActionContext {
  readonly pool: pg.Pool;
  readonly boss: PgBoss;
  readonly logger: Logger;
  readonly viewer: Viewer;
  /** Endpoints the configuration names; an action on any other is refused. */
  readonly endpoints: readonly string[];
  /** The console's configuration: a quarantine release claims with it. */
  readonly config: Config;
}

export interface ActionPreview {
  /** How many things the action would change now. */
  readonly count: number;
  /** A sentence saying what it would do, in the operator's words. */
  readonly summary: string;
  /** The confirmation button's text (default: "<title> <count> event(s)"). */
  readonly confirmLabel?: string;
  /** Some of them, for the confirmation page: [label, link] pairs. */
  readonly sample: ReadonlyArray<{
    readonly label: string;
    readonly endpoint: string;
    readonly eventId: string;
    readonly note: string;
  }>;
}

export interface ActionResult {
  readonly changed: number;
  readonly message: string;
  /** Where to show the result (a console path). */
  readonly back: string;
}

export interface ConsoleAction<Target> {
  /** The URL segment: /actions/<id>. */
  readonly id: string;
  readonly title: string;
  /** The target from the form's fields; a sentence (shown as 400) when they do not name one. */
  parse(fields: Readonly<Record<string, unknown>>, endpoints: readonly string[]): Target | string;
  /** The hidden fields that name this target again on the confirmation form. */
  fields(target: Target): Record<string, string>;
  preview(context: ActionContext, target: Target): Promise<ActionPreview>;
  run(context: ActionContext, target: Target): Promise<ActionResult>;
}

// biome-ignore lint/suspicious/noExplicitAny: the registry holds actions of every target type; each checks its own
export type AnyAction = ConsoleAction<any>;

export class ActionRegistry {
  private readonly actions = new Map<string, AnyAction>();

  register(action: AnyAction): this {
    if (this.actions.has(action.id)) throw new Error(`console action ${action.id} registered twice`);
    this.actions.set(action.id, action);
    return this;
  }

  get(id: string): AnyAction | undefined {
    return this.actions.get(id);
  }

  ids(): string[] {
    return [...this.actions.keys()];
  }
}
