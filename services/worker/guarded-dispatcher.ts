import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, buildConnector } from 'undici';
import type { AddressPolicy } from '../core/config/address-policy.ts';
import type { ErrorCode } from '../core/error-codes.ts';

// The destination relay's connections under relay.allowedDestinations: every address a
// connection goes to is checked when it connects, after DNS answered (a name is resolved once
// per connection, and the socket is opened to exactly the address checked), so no DNS answer
// can steer a request past the list. Nothing is sent on a refused connection.

/** A connection the policy refused; the relay ends the delivery as dead with its message. */
export class AddressRefusedError extends Error {
  readonly code: ErrorCode = 'destination_address_refused';
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  addresses: LookupAddress[] | string,
  family?: number,
) => void;

export function guardedDispatcher(policy: AddressPolicy): Agent {
  // net.connect asks for every address (`all`, for its happy-eyeballs); with `all` unset it wants
  // one. Either way each address handed back has passed the policy; one refused refuses them all,
  // so the error names it rather than the connection quietly going elsewhere.
  function lookup(host: string, options: LookupAllOptions | { all?: false }, callback: LookupCallback): void {
    dnsLookup(host, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      for (const { address } of addresses) {
        const refusal = policy.refusal(host, address);
        if (refusal) return callback(new AddressRefusedError(refusal), []);
      }
      if (options.all) return callback(null, addresses);
      const [first] = addresses;
      if (!first)
        return callback(Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  }
  const connect = buildConnector({ lookup });
  return new Agent({
    connect(options, callback) {
      // An IP address in the URL is connected to without a lookup: checked here instead.
      const host = options.hostname.replace(/^\[|\]$/g, '');
      if (isIP(host) !== 0) {
        const refusal = policy.refusal(host, host);
        if (refusal) {
          callback(new AddressRefusedError(refusal), null);
          return;
        }
      }
      return connect(options, callback);
    },
  });
}
