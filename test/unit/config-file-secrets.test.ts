import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';

// `${file:/path}`: secrets from mounted files (Vault agent, the Secrets Store CSI driver, a
// Kubernetes Secret volume), next to `${ENV}`.
let dir: string;
let stripeFile: string;
const SECRET = 'whsec_from_a_mounted_file';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'hookgate-file-secrets-'));
  stripeFile = join(dir, 'stripe');
  // As Kubernetes and Vault agent templates write them: with a trailing newline.
  writeFileSync(stripeFile, `${SECRET}\n`);
  writeFileSync(join(dir, 'crlf'), 'crlf_secret\r\n');
  writeFileSync(join(dir, 'looks-like-env'), 'abc${HOME}def');
  writeFileSync(join(dir, 'empty'), '');
  writeFileSync(join(dir, 'not-whsec'), 'whsec_!!not*base64!!\n');
});

const endpoint = (secrets: string[], extra: Record<string, unknown> = {}) => ({
  endpoints: { pay: { provider: 'stripe', secrets, ...extra } },
});

function problems(document: unknown, env: Record<string, string> = {}): string {
  try {
    parseConfig(document, env);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected the configuration to be refused');
}

describe('${file:/path}', () => {
  it('reads the file, without its trailing line break, beside env references', () => {
    const config = parseConfig(
      endpoint([`\${file:${stripeFile}}`, `\${file:${join(dir, 'crlf')}}`, '${OLD}']),
      { OLD: 'whsec_old' },
    );
    expect(config.endpoints.pay!.secrets).toEqual([SECRET, 'crlf_secret', 'whsec_old']);
  });

  it("takes a file's content as it is: a ${NAME} inside it is not looked up", () => {
    const config = parseConfig(endpoint([`\${file:${join(dir, 'looks-like-env')}}`]), { HOME: '/root' });
    expect(config.endpoints.pay!.secrets).toEqual(['abc${HOME}def']);
  });

  it('never reads a file an environment value names', () => {
    const read: string[] = [];
    const config = parseConfig(endpoint(['${SNEAKY}']), { SNEAKY: `\${file:${stripeFile}}` }, (file) => {
      read.push(file);
      return 'read';
    });
    expect(read).toEqual([]);
    expect(config.endpoints.pay!.secrets).toEqual([`\${file:${stripeFile}}`]);
  });

  it('$${file:…} is a literal, and a sql: statement keeps its text', () => {
    const config = parseConfig(
      {
        endpoints: {
          pay: { provider: 'stripe', secrets: ['$${file:/etc/x}'] },
          q: { provider: 'stripe', secrets: ['s'], handler: `sql:SELECT '\${file:${stripeFile}}'` },
        },
      },
      {},
    );
    expect(config.endpoints.pay!.secrets).toEqual(['${file:/etc/x}']);
    expect(config.endpoints.q!.handler).toBe(`sql:SELECT '\${file:${stripeFile}}'`);
  });

  it('a missing, empty or relative file is refused naming the key and the file, never a content', () => {
    const message = problems({
      endpoints: {
        a: { provider: 'stripe', secrets: [`\${file:${join(dir, 'missing')}}`] },
        b: { provider: 'stripe', secrets: [`\${file:${join(dir, 'empty')}}`] },
        c: { provider: 'stripe', secrets: ['${file:secrets/stripe}'] },
        d: { provider: 'stripe', secrets: [`\${file:${stripeFile}}`], tolerance: 'soon' },
      },
    });
    expect(message).toContain(
      `endpoints.a.secrets[0]: secret file ${join(dir, 'missing')} cannot be read (ENOENT)`,
    );
    expect(message).toContain(`endpoints.b.secrets[0]: secret file ${join(dir, 'empty')} is empty`);
    expect(message).toContain('endpoints.c.secrets[0]: secret file secrets/stripe is not an absolute path');
    // The validator's own complaint about the empty string left behind is not repeated.
    expect(message).not.toMatch(/endpoints\.[abc]\.secrets\[0\]: must not be empty/);
    expect(message).toContain('endpoints.d.tolerance');
    expect(message).not.toContain(SECRET);
  });

  it('in a destination URL is read at load like any value; a refused forward handler shows it as written, never its content', () => {
    const config = parseConfig(
      {
        endpoints: {
          out: {
            provider: 'stripe',
            secrets: ['s'],
            destinations: { down: { url: `https://hooks.example.com/in?token=\${file:${stripeFile}}` } },
          },
        },
      },
      {},
    );
    expect(config.endpoints.out?.destinations?.down?.url).toBe(
      `https://hooks.example.com/in?token=${SECRET}`,
    );
    const message = problems({
      endpoints: {
        fwd: {
          provider: 'stripe',
          secrets: ['s'],
          handler: 'forward',
          options: { url: `https://hooks.example.com/in?token=\${file:${stripeFile}}` },
        },
      },
    });
    expect(message).toContain(`url: https://hooks.example.com/in?token=\${file:${stripeFile}}`);
    expect(message).not.toContain(SECRET);
  });

  it('a file secret the provider refuses is named by its key, never by its content', () => {
    const message = problems({
      endpoints: { sw: { provider: 'standard-webhooks', secrets: [`\${file:${join(dir, 'not-whsec')}}`] } },
    });
    expect(message).toContain('endpoints.sw.secrets[0]: is not a Standard Webhooks secret');
    expect(message).not.toContain('not*base64');
  });
});
