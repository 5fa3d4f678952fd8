import type { EndpointConfig } from '../config/schema.ts';
import { HookgateError } from '../errors.ts';
import { githubReplaySourceFor } from './github-target.ts';
import { paddleReplaySource } from './paddle.ts';
import { stripeReplaySource } from './stripe.ts';
import type { ReplaySource } from './types.ts';

const STRIPE = { apiBase: 'https://api.stripe.com', credentialEnv: 'STRIPE_API_KEY' } as const;
const PADDLE = { apiBase: 'https://api.paddle.com', credentialEnv: 'PADDLE_API_KEY' } as const;

/** The provider API an endpoint's events can be pulled back from, with its credential. */
export function replaySourceFor(
  name: string,
  endpoint: EndpointConfig,
  env: NodeJS.ProcessEnv = process.env,
): ReplaySource {
  if (endpoint.provider !== 'stripe' && endpoint.provider !== 'github' && endpoint.provider !== 'paddle') {
    throw new HookgateError(
      'usage_invalid',
      `Endpoint ${name} uses ${endpoint.provider}: replay pulls events from the Stripe, GitHub and Paddle APIs only.`,
    );
  }
  // GitHub: a repository, organization or App webhook, each with its own credential.
  if (endpoint.provider === 'github') return githubReplaySourceFor(name, endpoint.replay, env);
  const api = endpoint.provider === 'paddle' ? PADDLE : STRIPE;
  const credentialEnv = endpoint.replay?.credentialEnv ?? api.credentialEnv;
  const credential = env[credentialEnv]?.trim();
  if (!credential) {
    throw new HookgateError(
      'credentials_missing',
      `Set ${credentialEnv} to an API key that can read events (endpoints.${name}.replay.credentialEnv names another variable).`,
    );
  }
  const settings = { apiKey: credential, apiBase: endpoint.replay?.apiBase ?? api.apiBase };
  return endpoint.provider === 'paddle' ? paddleReplaySource(settings) : stripeReplaySource(settings);
}
