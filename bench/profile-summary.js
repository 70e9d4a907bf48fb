'use strict';
/**
 * Summarizes a .cpuprofile (from BENCH_CPU_PROF=<dir> npm run bench, or node --cpu-prof):
 * busy time by category (socket syscalls, node internals, fastify, crypto, hub code, ...) and
 * the hottest functions by self time, optionally per request.
 *
 *   node bench/profile-summary.js <file.cpuprofile> [--from-ms N] [--to-ms N] [--requests N] [--top N]
 *
 * --from-ms/--to-ms cut a window (ms since the profile started), e.g. to leave start-up out.
 */
const { readFileSync } = require('node:fs');

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--') && !/^\d+$/.test(a));
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
if (!file) {
  console.error('usage: node bench/profile-summary.js <file.cpuprofile> [--from-ms N] [--to-ms N] [--requests N] [--top N]');
  process.exit(2);
}
const fromUs = opt('from-ms', 0) * 1000;
const toUs = opt('to-ms', Infinity) * 1000;
const requests = opt('requests', 0);
const topN = opt('top', 25);

const p = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const selfUs = new Map();
let t = 0;
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i] || 0;
  if (t < fromUs || t > toUs) continue;
  selfUs.set(p.samples[i], (selfUs.get(p.samples[i]) || 0) + (p.timeDeltas[i] || 0));
}

const short = (u) => u.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(dist|bench)\//, '$1/');
function category(n) {
  const { functionName: f, url: u } = n.callFrame;
  if (f === '(idle)') return null;
  if (f === '(garbage collector)') return 'GC';
  if (f === '(program)') return '(program)';
  if (['writev', 'writeUtf8String', 'writeBuffer', 'writeLatin1String'].includes(f) && !u) return 'socket writes (syscall)';
  if (/crypto/.test(u) || (!u && ['Hash', 'digest', 'update', 'timingSafeEqual'].includes(f))) return 'crypto';
  if (/@fastify\/cors/.test(u)) return '@fastify/cors';
  if (/node_modules\/(fastify|find-my-way|avvio|fast-querystring|fast-json-stringify|@fastify)\//.test(u)) return 'fastify + router';
  if (/node_modules\/zod\//.test(u)) return 'zod';
  if (/node_modules\//.test(u)) return `other package: ${short(u).split('/')[0]}`;
  if (/\/dist\//.test(u)) return `hub: ${short(u)}`;
  if (/\/bench\//.test(u)) return 'bench scripts';
  if (/^node:/.test(u)) return 'node internals (http, net, streams)';
  return `native: ${f || '(anonymous)'}`;
}

const cats = new Map();
const fns = new Map();
let busy = 0;
for (const [id, us] of selfUs) {
  const n = byId.get(id);
  const c = category(n);
  if (c === null) continue;
  busy += us;
  cats.set(c, (cats.get(c) || 0) + us);
  const k = `${n.callFrame.functionName || '(anonymous)'}  ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
  fns.set(k, (fns.get(k) || 0) + us);
}
const per = (us) => (requests ? `${(us / requests).toFixed(2).padStart(8)} µs/req` : '');
const row = (us, label) => `${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / busy).toFixed(1).padStart(5)}% ${per(us)}  ${label}`;
console.log(`busy ${(busy / 1000).toFixed(0)} ms${requests ? ` over ${requests} requests = ${(busy / requests).toFixed(1)} µs/request` : ''}`);
console.log('\nby category (self time):');
for (const [c, us] of [...cats].sort((a, b) => b[1] - a[1])) console.log(row(us, c));
console.log(`\ntop ${topN} functions (self time):`);
for (const [k, us] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, topN)) console.log(row(us, k));
