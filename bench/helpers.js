'use strict';
/**
 * What several benches share: waiting for a positive signal and the tones they play. The plain
 * JS counterparts of test/helpers/wait.ts and test/helpers/audio.ts (same names, same
 * behaviour): the benches run against dist/ as plain node scripts, without a TypeScript build
 * of test/. CPU accounting is bench/run-children.js's (processCpuS, cpuMeter).
 */
const { createServer } = require('node:net');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls check() until it holds, every stepMs; throws after ms naming what was awaited. */
async function until(check, ms, what, stepMs = 20) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(stepMs);
  }
}

/** Mono 16-bit samples of a sine at `hz` (test/helpers/audio.ts sine). */
function sine(seconds, hz, rate, amplitude = 12000) {
  const s = new Int16Array(Math.round(seconds * rate));
  for (let i = 0; i < s.length; i++) s[i] = Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / rate));
  return s;
}

/** Interleaved s16le stereo with the same samples on both channels. */
function stereo(mono) {
  const b = Buffer.alloc(mono.length * 4);
  for (let i = 0; i < mono.length; i++) {
    b.writeInt16LE(mono[i], i * 4);
    b.writeInt16LE(mono[i], i * 4 + 2);
  }
  return b;
}

/** A free TCP port on loopback (closed again: the caller's server takes it). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

module.exports = { sleep, until, sine, stereo, freePort };
