/**
 * The CLI for people and scripts, against a running hub over real HTTP: speakers, media,
 * status, say, play, stop, volume, token — speakers by name or ID, JSON with --json, one-line
 * failures with exit code 1.
 */
import { createServer, type AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cliResult, ensureBuilt, killAll, runCli, waitForBanner, within } from '../helpers/cli';
import { startHub, TEST_TOKEN, type TestHub } from '../helpers/hub';
import { eventually } from '../helpers/wait';

let h: TestHub;
let env: Record<string, string>;
beforeAll(async () => {
  await ensureBuilt();
  h = await startHub({ speakers: { virtual: { count: 3, names: ['Kitchen', 'Office', 'Living Room'] } } });
  env = { SPEAKERHUB_URL: h.base, SPEAKERHUB_TOKEN: TEST_TOKEN };
}, 120_000);
afterAll(async () => {
  killAll();
  await h?.close();
});

const cli = async (...args: string[]) => {
  const r = await cliResult(args, env);
  if (r.code !== 0) throw new Error(`speakerhub ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
};
const json = async (...args: string[]) => JSON.parse(await cli(...args, '--json'));

test('speakers: a table for people, the device list with --json', async () => {
  const table = await cli('speakers');
  expect(table.split('\n')[0]).toMatch(/^NAME\s+DEVICE ID\s+ACTIVE\s+PLAYING\s+VOLUME/);
  expect(table).toMatch(/Living Room\s+\d{14}\s+yes\s+no\s+20/);
  const list = await json('speakers');
  expect(list.map((d: { DeviceName: string }) => d.DeviceName)).toEqual(['Kitchen', 'Office', 'Living Room']);
});

test('media lists titles and PersistentIDs', async () => {
  const list = await json('media');
  expect(list.length).toBeGreaterThan(0);
  expect(await cli('media')).toContain(list[0].PersistentID);
});

test('say announces on named speakers at a level of its own, waits until done, and puts the music and volumes back', async () => {
  const media = await json('media');
  await cli('play', media[0].PersistentID);
  const out = await cli('say', 'Dinner is ready', '--speakers', 'kitchen', '--volume', '31');
  expect(out).toBe('Said "Dinner is ready" on Kitchen\n');
  // Done means restored: Kitchen has its own level back and plays the music again with the others.
  const devices = (await h.op('device_list')).DeviceList as { DeviceName: string; Volume: number }[];
  expect(devices.find((d) => d.DeviceName === 'Kitchen')!.Volume).toBe(20);
  const status = await json('status');
  expect(status.PlaybackState).toBe('PlayerStatePlaying');
  expect(status.Playing.map((d: { DeviceName: string }) => d.DeviceName).sort()).toEqual(['Kitchen', 'Living Room', 'Office']);
  // --no-wait answers with the AnnouncementID at once.
  const id = JSON.parse(await cli('say', 'Again', '--speakers', 'office', '--no-wait', '--json')).AnnouncementID as string;
  expect((await h.op('announcement_status', { AnnouncementID: id })).State).toMatch(/^(queued|playing|done)$/);
  await cli('stop');
});

test('say --duck asks for ducking; on speakers that cannot mix it interrupts and says why', async () => {
  const out = await cli('say', 'Ducked if it could', '--speakers', 'kitchen', '--duck', '--duck-level', '-20');
  expect(out).toMatch(/^Said "Ducked if it could" on Kitchen\nThe music was interrupted, not ducked: .*Kitchen \(virtual\)/);
  const bad = await cliResult(['say', 'x', '--duck', '--duck-level', '-50'], env);
  expect(bad.code).not.toBe(0);
});

test("play-tts is the spec's TTS play: it replaces the music on the named speakers; status shows where it plays", async () => {
  const out = await cli('play-tts', 'Dinner is ready, and it is a rather long sentence to keep speaking for a while', '--speakers', 'kitchen,office');
  expect(out).toContain('on Kitchen, Office');
  const status = await json('status');
  expect(status.PlaybackState).toBe('PlayerStatePlaying');
  expect(status.Playing.map((d: { DeviceName: string }) => d.DeviceName).sort()).toEqual(['Kitchen', 'Office']);
  expect(await cli('status')).toMatch(/^Playing speech "Dinner is ready, and it is a rather long sentence to keep\.\.\." at /);
  expect(await cli('stop')).toBe('Stopped\n');
  expect((await h.op('playback_status')).PlaybackState).toBe('PlayerStateStopped');
});

test('play by title fragment and by PersistentID', async () => {
  const media = await json('media');
  expect(await cli('play', media[0].Title.slice(-6))).toContain(`Playing "${media[0].Title}"`);
  expect((await h.op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
  await cli('play', media[1].PersistentID);
  expect((await h.op('is_playing')).IsPlaying).toBe('true');
  await cli('stop');
});

test('status names what plays in every zone (the title, the web URL, the spoken text) and where; stop --speakers stops one zone', async () => {
  const media = await json('media');
  await cli('play', media[0].PersistentID, '--speakers', 'kitchen');
  let out = await cli('status');
  expect(out).toMatch(new RegExp(`^Playing "${media[0].Title}" at \\d+:\\d\\d on Kitchen\n`));
  let status = await json('status');
  expect(status).toMatchObject({ Title: media[0].Title, MediaKind: 'hub', PersistentID: media[0].PersistentID });
  const url = `${h.base}/samples/sample-tone-2-little-waltz.wav`;
  await cli('play', url);
  out = await cli('status');
  expect(out.split('\n')[0]).toContain(`Playing ${url}`);
  expect((await json('status')).MediaUrl).toBe(url);
  // Zones: a play on one speaker takes it out of the party; status shows every zone, the latest first.
  const ids = (await h.op('device_list')).DeviceList.map((d: { DeviceID: string }) => d.DeviceID);
  await h.op('play_hub_media_selected_speakers', { PersistentID: media[0].PersistentID, DeviceIDList: ids[0] });
  status = await json('status');
  expect(status.Zones.map((z: { Speakers: { DeviceName: string }[] }) => z.Speakers.map((d) => d.DeviceName))).toEqual([
    ['Kitchen'],
    ids.slice(1).map((id: string) => status.Zones[1].Speakers.find((d: { DeviceID: string }) => d.DeviceID === id).DeviceName),
  ]);
  out = await cli('status');
  expect(out.split('\n')[0]).toMatch(/^Playing ".+" at \d+:\d\d on Kitchen$/);
  expect(out.split('\n')[0]).toContain(`"${media[0].Title}"`);
  expect(out.split('\n')[1]).toContain(`Playing ${url}`);
  // stop --speakers stops that speaker's zone only; the other room plays on.
  expect(await cli('stop', '--speakers', 'Kitchen')).toBe('Stopped on Kitchen\n');
  status = await json('status');
  expect(status.Zones).toHaveLength(1);
  expect(status.MediaUrl).toBe(url);
  await cli('stop');
  out = await cli('status');
  expect(out).toMatch(/^Stopped\nSpeakers: /);
});

test('pause, resume, mute and unmute act per room: --speakers touches only those speakers\u2019 zones', async () => {
  const media = await json('media');
  const ids = Object.fromEntries((await json('speakers')).map((d: { DeviceName: string; DeviceID: string }) => [d.DeviceName, d.DeviceID]));
  await cli('play', media[0].PersistentID, '--speakers', 'Kitchen');
  await cli('play', media[1].PersistentID, '--speakers', 'Office');
  const states = async () =>
    Object.fromEntries(
      (await h.op('playback_list')).PlaybackList.map((z: { DeviceIDList: string[]; PlaybackState: string }) => [
        z.DeviceIDList.join(),
        z.PlaybackState,
      ]),
    );
  expect(await cli('pause', '--speakers', 'Kitchen')).toBe('Paused one zone\n');
  expect(await states()).toEqual({ [ids.Kitchen]: 'PlayerStatePaused', [ids.Office]: 'PlayerStatePlaying' });
  expect(await cli('resume', '--speakers', 'Kitchen')).toBe('Playing again one zone\n');
  expect(await states()).toEqual({ [ids.Kitchen]: 'PlayerStatePlaying', [ids.Office]: 'PlayerStatePlaying' });
  expect(await cli('pause')).toBe('Paused 2 zones\n');
  expect(Object.values(await states())).toEqual(['PlayerStatePaused', 'PlayerStatePaused']);
  // Nothing left to pause: one line, exit 1.
  const again = await cliResult(['pause'], env);
  expect(again.code).toBe(1);
  expect(again.stderr).toMatch(/nothing is playing/);
  expect(await cli('resume')).toBe('Playing again 2 zones\n');
  expect(await cli('mute', '--speakers', 'Office')).toBe('Muted Office\n');
  expect((await h.op('get_mute_device', { DeviceID: ids.Office })).Mute).toBe('true');
  expect((await h.op('get_mute_device', { DeviceID: ids.Kitchen })).Mute).toBe('false');
  expect(await cli('unmute')).toBe('Unmuted Kitchen, Office, Living Room\n');
  expect((await h.op('get_mute_device', { DeviceID: ids.Office })).Mute).toBe('false');
  await cli('stop');
});

test('volume: show, set all, set one by name', async () => {
  await cli('volume', '12');
  expect((await h.op('get_volume')).Volume).toBe('12');
  expect(await cli('volume', 'living', '007')).toBe('Volume 7 on Living Room\n');
  const volumes = await json('volume');
  expect(volumes.map((v: { Volume: number }) => v.Volume)).toEqual([12, 12, 7]);
});

test('failures: one line, exit 1 — unknown speaker, ambiguous name, wrong token, no hub', async () => {
  let r = await cliResult(['volume', 'Garage', '3'], env);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain('no speaker is called "Garage"; there are: Kitchen');
  r = await cliResult(['say', 'x', '--speakers', 'i'], env); // in Kitchen, Office and Living Room
  expect(r.code).toBe(1);
  expect(r.stderr).toContain('matches several speakers');
  r = await cliResult(['speakers'], { ...env, SPEAKERHUB_TOKEN: 'wrong-token-wrong-token' });
  expect(r.code).toBe(1);
  expect(r.stderr).toContain('refused the token');
  const closed = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
  r = await cliResult(['speakers', '--url', `http://127.0.0.1:${closed}`], env);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain(`cannot reach the hub at http://127.0.0.1:${closed}`);
  expect(r.stderr).toContain('ECONNREFUSED');
  r = await cliResult(['volume', '51'], env);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain('the volume must be an integer from 0 to 50');
});

test('a hub address without http:// is a usage error (exit 2) that says what it should be, from the flag or the variable', async () => {
  let r = await cliResult(['speakers', '--url', '127.0.0.1:8090'], env);
  expect(r.code).toBe(2);
  expect(r.stderr).toBe(
    'speakerhub: --url must be the hub\'s http:// or https:// address, e.g. http://127.0.0.1:8090; got "127.0.0.1:8090" (did you mean http://127.0.0.1:8090?).\n',
  );
  r = await cliResult(['speakers'], { ...env, SPEAKERHUB_URL: 'ftp://hub.local' });
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("SPEAKERHUB_URL must be the hub's http:// or https:// address");
});

test('token prints the data folder token; --rotate switches the running hub to a new one', async () => {
  const data = mkdtempSync(path.join(tmpdir(), 'speakerhub-token-'));
  try {
    const hub = runCli([
      'hub',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--data',
      data,
      '--no-samples',
      '--virtual-speakers',
      '1',
      '--log-level',
      'warn',
    ]);
    const { base } = await waitForBanner(hub);
    const old = (await cli('token', '--data', data)).trim();
    expect(old).toBe(readFileSync(path.join(data, 'api-token'), 'utf8').trim());
    // The token comes from the data folder when neither --token nor SPEAKERHUB_TOKEN is given.
    const viaData = await cliResult(['speakers', '--json', '--url', base, '--data', data]);
    expect(JSON.parse(viaData.stdout)).toHaveLength(1);

    const fresh = (await cli('token', '--rotate', '--data', data)).trim();
    expect(fresh).not.toBe(old);
    expect(fresh.length).toBeGreaterThanOrEqual(43);
    const status = async (token: string) => (await fetch(`${base}/api/v1/init_session`, { headers: { Authorization: `Bearer ${token}` } })).status;
    await eventually(async () => (await status(old)) === 401, 10_000, 'the old token to be refused');
    expect(await status(fresh)).toBe(200);
    hub.child.kill('SIGTERM');
    expect((await within(hub.exit, 10_000, 'hub exit')).code).toBe(0);
  } finally {
    rmSync(data, { recursive: true, force: true });
  }
});
