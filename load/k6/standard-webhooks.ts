// Standard Webhooks deliveries of versioned entities (out of order) for a `handler: project`
// endpoint whose `extract` reads /data/object, /data/id and /data/version.
// k6 run -e SECRET=whsec_... -e SCENARIO=steady -e RATE=200 load/k6/standard-webhooks.ts
import { scriptSettings } from '../lib/settings.ts';
import { makeScript } from './common.ts';

const script = makeScript(scriptSettings(__ENV, 'standard-webhooks', 'things'));
export const options = script.options;
export const setup = script.setup;
export default script.iteration;
