// Stripe-signed billing events (invoice created / paid / voided) for a `handler: billing`
// endpoint. k6 run -e SECRET=whsec_... -e SCENARIO=steady -e RATE=200 load/k6/stripe.ts
import { scriptSettings } from '../lib/settings.ts';
import { makeScript } from './common.ts';

const script = makeScript(scriptSettings(__ENV, 'stripe', 'stripe'));
export const options = script.options;
export const setup = script.setup;
export default script.iteration;
