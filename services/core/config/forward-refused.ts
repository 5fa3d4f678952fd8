import { stringify } from 'yaml';

// `handler: forward` was a second way out of hookgate, beside destinations. It is refused at load
// with the configuration to write instead, computed from the endpoint's own options: its `url`
// and `timeout` become a destination of a `record` endpoint (docs/design-notes.md says why it
// is refused rather than read as a shorthand).

type Document = { endpoints?: Record<string, unknown> } | null | undefined;

const asRecord = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

/** A name for the new destination that the endpoint's own destinations do not use. */
function freeName(taken: Record<string, unknown>): string {
  if (!Object.hasOwn(taken, 'forward')) return 'forward';
  let n = 2;
  while (Object.hasOwn(taken, `forward-${n}`)) n += 1;
  return `forward-${n}`;
}

/**
 * One problem line per endpoint that says `handler: forward`, with the YAML to write instead.
 * `written` is the document as the file wrote it: a `${NAME}` in the URL is shown as written,
 * never its value.
 */
export function forwardProblems(written: unknown): string[] {
  const lines: string[] = [];
  for (const [name, value] of Object.entries(asRecord((written as Document)?.endpoints))) {
    const endpoint = asRecord(value);
    if (endpoint.handler !== 'forward') continue;
    const options = asRecord(endpoint.options);
    const destination: Record<string, unknown> = {
      url: typeof options.url === 'string' ? options.url : '<the URL to POST each event to>',
    };
    if (typeof options.timeout === 'string' || typeof options.timeout === 'number')
      destination.timeout = options.timeout;
    const instead = {
      endpoints: {
        [name]: {
          handler: 'record',
          destinations: { [freeName(asRecord(endpoint.destinations))]: destination },
        },
      },
    };
    const yaml = stringify(instead, { lineWidth: 0 }).trimEnd().split('\n');
    lines.push(
      [
        `endpoints.${name}.handler: forward is not a handler: events leave hookgate through destinations only (docs/destinations.md), and its receiver gets each event with a webhook-id (also sent as Idempotency-Key) in place of <endpoint>:<event id>. Replace the endpoint's handler and options with this, beside any destinations it has:`,
        ...yaml.map((line) => `    ${line}`),
      ].join('\n  '),
    );
  }
  return lines;
}

/** The document with each `handler: forward` read as `record` without options, so the rest is still checked. */
export function withoutForward(document: unknown): unknown {
  const endpoints = asRecord((document as Document)?.endpoints);
  if (!Object.values(endpoints).some((endpoint) => asRecord(endpoint).handler === 'forward')) return document;
  const replaced = Object.fromEntries(
    Object.entries(endpoints).map(([name, value]) => {
      const endpoint = asRecord(value);
      if (endpoint.handler !== 'forward') return [name, value];
      const { options: _options, ...rest } = endpoint;
      return [name, { ...rest, handler: 'record' }];
    }),
  );
  return { ...asRecord(document), endpoints: replaced };
}
