import { defineEndToEnd } from './e2e-suite';

// Node-RED 4 on this machine's Node (>= 20).
defineEndToEnd(4);
