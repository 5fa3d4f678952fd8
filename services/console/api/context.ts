import type { ConsoleContext } from '../context.ts';
import type { ConsoleSettings } from '../settings.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { TokenUseRecorder } from './token-use.ts';

/** What every API route of one console process shares: the console's, plus the API's own. */
export interface ApiContext extends ConsoleContext {
  readonly settings: ConsoleSettings;
  readonly limiter: RateLimiter;
  readonly tokenUse: TokenUseRecorder;
  readonly now: () => number;
}
