import { createPrivateKey } from 'node:crypto';
import type { EndpointConfig } from '../config/schema.ts';
import { HookgateError } from '../errors.ts';
import { type GithubWebhook, githubReplaySource } from './github.ts';
import type { ReplaySource } from './types.ts';

type ReplayConfig = NonNullable<EndpointConfig['replay']>;

const API_BASE = 'https://api.github.com';
const TOKEN_ENV = 'GITHUB_TOKEN';
const PRIVATE_KEY_ENV = 'GITHUB_APP_PRIVATE_KEY';

/**
 * A PEM from the environment: real line breaks, or `\n` escapes where the variable had to be
 * one line. Checked here, so a wrong key is one clear line before any request.
 */
function privateKeyFrom(variable: string, text: string): string {
  const pem = text.includes('\\n') && !text.includes('\n') ? text.replaceAll('\\n', '\n') : text;
  try {
    createPrivateKey(pem);
  } catch {
    throw new HookgateError(
      'credentials_invalid',
      `${variable} is not a private key in PEM form (-----BEGIN RSA PRIVATE KEY----- …, as GitHub generates it in the App's settings).`,
    );
  }
  return pem;
}

/**
 * Where `hookgate replay` reads a github endpoint's deliveries back: the repository webhook, the
 * organization webhook or the GitHub App webhook its replay settings name, with the credential
 * each takes (a token for the first two, the App's private key for the third).
 */
export function githubReplaySourceFor(
  name: string,
  replay: ReplayConfig | undefined,
  env: NodeJS.ProcessEnv,
): ReplaySource {
  const { repository, organization, hookId, appId } = replay ?? {};
  const apiBase = replay?.apiBase ?? API_BASE;
  const isApp = appId !== undefined;
  const credentialEnv = replay?.credentialEnv ?? (isApp ? PRIVATE_KEY_ENV : TOKEN_ENV);
  const credential = env[credentialEnv]?.trim();
  if (!credential) {
    throw new HookgateError(
      'credentials_missing',
      isApp
        ? `Set ${credentialEnv} to the private key (PEM) of GitHub App ${appId} (endpoints.${name}.replay.credentialEnv names another variable).`
        : `Set ${credentialEnv} to a token that can read the ${organization === undefined ? "repository's" : "organization's"} webhook deliveries (endpoints.${name}.replay.credentialEnv names another variable).`,
    );
  }
  let webhook: GithubWebhook;
  if (isApp) {
    webhook = { kind: 'app', appId, privateKey: privateKeyFrom(credentialEnv, credential) };
  } else if (repository !== undefined && hookId !== undefined) {
    webhook = { kind: 'repository', repository, hookId };
  } else if (organization !== undefined && hookId !== undefined) {
    webhook = { kind: 'organization', organization, hookId };
  } else {
    throw new HookgateError(
      'config_invalid',
      `endpoints.${name}.replay needs the webhook that delivers here: repository (owner/repo) and hookId, organization and hookId, or appId.`,
    );
  }
  return githubReplaySource({ ...(isApp ? {} : { token: credential }), apiBase, webhook });
}
