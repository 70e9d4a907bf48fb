import { defineEndToEnd } from './e2e-suite';

// Node-RED 5 on Node 24 (installed into .cache/node24 by scripts/install-nodered.sh).
defineEndToEnd(5);
