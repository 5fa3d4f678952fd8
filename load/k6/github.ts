// GitHub-signed `issues` deliveries (X-GitHub-Delivery ids) for any handler, e.g. `record`.
// k6 run -e SECRET=... -e SCENARIO=steady -e RATE=200 load/k6/github.ts
import { scriptSettings } from '../lib/settings.ts';
import { makeScript } from './common.ts';

const script = makeScript(scriptSettings(__ENV, 'github', 'github'));
export const options = script.options;
export const setup = script.setup;
export default script.iteration;
