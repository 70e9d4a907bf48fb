/**
 * Sessions survive restarts (issue 8): a SessionToken from before a restart keeps working
 * until it expires or is closed; the file holds only token hashes, is private, and is
 * bounded by the table.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { ManualClock } from '../../src/core/clock';
import { createHub, type SpeakerHub } from '../../src/hub';
import type { HubConfigInput } from '../../src/hub-config';
import { createLogger } from '../../src/logger';
import { SHARED_SAMPLES, TEST_TOKEN } from '../helpers/hub';
import { ensureSampleMedia } from '../../src/media/samples';

const dataDir = mkdtempSync(path.join(tmpdir(), 'speakerhub-sessions-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const clock = new ManualClock();
const logs: string[] = [];

async function start(extra: HubConfigInput = {}): Promise<{ hub: SpeakerHub; get: (p: string) => Promise<any> }> {
  await ensureSampleMedia(SHARED_SAMPLES);
  const stream = new Writable({ write: (c, _e, cb) => (logs.push(String(c)), cb()) });
  const hub = createHub(
    {
      dataDir,
      media: { samples: false, folders: [SHARED_SAMPLES], watch: false },
      server: { host: '127.0.0.1', port: 0, token: TEST_TOKEN },
      speakers: { virtual: { count: 1 } },
      ...extra,
    },
    { clock, logger: createLogger({ level: 'debug', stream }) },
  );
  await hub.start();
  const get = async (p: string) => (await fetch(hub.url + p, { headers: { Authorization: `Bearer ${TEST_TOKEN}` } })).json();
  return { hub, get };
}

test('a session opened before a restart works after it; a closed one does not; expiry still applies', async () => {
  let { hub, get } = await start({ sessions: { idleMinutes: 60, maxSessions: 100 } });
  const kept: string = (await get('/api/v1/init_session')).SessionToken;
  const closed: string = (await get('/api/v1/init_session')).SessionToken;
  const expiring: string = (await get('/api/v1/init_session')).SessionToken;
  expect(await get(`/api/v1/close_session?SessionToken=${closed}`)).toEqual({ Result: 'true' });
  clock.advance(30 * 60_000);
  expect(await get(`/api/v1/device_count?SessionToken=${kept}`)).toEqual({ DeviceCount: '1' }); // renewed at 30 min
  await hub.stop();

  // Only hashes in the file, readable by the owner only.
  const file = path.join(dataDir, 'sessions.json');
  const text = readFileSync(file, 'utf8');
  for (const t of [kept, closed, expiring]) expect(text).not.toContain(t);
  expect(JSON.parse(text).sessions).toHaveLength(2);
  expect(statSync(file).mode & 0o077).toBe(0);

  ({ hub, get } = await start({ sessions: { idleMinutes: 60, maxSessions: 100 } }));
  try {
    expect(await get(`/api/v1/device_count?SessionToken=${kept}`)).toEqual({ DeviceCount: '1' });
    expect((await get(`/api/v1/device_count?SessionToken=${closed}`)).ErrorCode).toBe('SessionNotFound');
    clock.advance(31 * 60_000); // `expiring` was last used 61 minutes ago, `kept` 31
    expect((await get(`/api/v1/device_count?SessionToken=${expiring}`)).ErrorCode).toBe('SessionNotFound');
    expect(await get(`/api/v1/device_count?SessionToken=${kept}`)).toEqual({ DeviceCount: '1' });
  } finally {
    await hub.stop();
  }
});

test('the saved table is bounded by maxSessions (the most recently used are kept)', async () => {
  let { hub, get } = await start({ sessions: { idleMinutes: 60, maxSessions: 50 } });
  const tokens: string[] = [];
  for (let i = 0; i < 60; i++) {
    tokens.push((await get('/api/v1/init_session')).SessionToken);
    clock.advance(1000);
  }
  await hub.stop();
  expect(JSON.parse(readFileSync(path.join(dataDir, 'sessions.json'), 'utf8')).sessions.length).toBeLessThanOrEqual(50);
  ({ hub, get } = await start({ sessions: { idleMinutes: 60, maxSessions: 5 } }));
  try {
    // A smaller table after the restart keeps the newest five.
    for (const t of tokens.slice(-5)) expect(await get(`/api/v1/device_count?SessionToken=${t}`)).toEqual({ DeviceCount: '1' });
    expect((await get(`/api/v1/device_count?SessionToken=${tokens[54]}`)).ErrorCode).toBe('SessionNotFound');
  } finally {
    await hub.stop();
  }
});

test('a new session is saved soon, without a clean stop (the file follows the table)', async () => {
  const { hub, get } = await start();
  try {
    const t: string = (await get('/api/v1/init_session')).SessionToken;
    const { createHash } = await import('node:crypto');
    const h = createHash('sha256').update(t).digest('base64url');
    const file = path.join(dataDir, 'sessions.json');
    const deadline = Date.now() + 10_000;
    while (!readFileSync(file, 'utf8').includes(h)) {
      if (Date.now() > deadline) throw new Error('the new session was not saved');
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await hub.stop();
  }
});

test('a corrupt file is ignored with a warning; sessions.persist false writes nothing', async () => {
  writeFileSync(path.join(dataDir, 'sessions.json'), '{ not json');
  const first = await start();
  await first.hub.stop();
  expect(logs.join('')).toContain('sessions: ignoring');
  rmSync(path.join(dataDir, 'sessions.json'));
  const { hub, get } = await start({ sessions: { persist: false } });
  await get('/api/v1/init_session');
  await hub.stop();
  expect(() => statSync(path.join(dataDir, 'sessions.json'))).toThrow();
});
