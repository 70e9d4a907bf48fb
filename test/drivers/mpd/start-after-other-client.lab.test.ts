/**
 * Issue 30's review: a hub play right after another MPD client's clear, add, play (its song
 * played out), stop, clear failed now and then with "MPD could not play the media" (the
 * first-sound bench's floor, then its cached announcement: about 1 in 40). The cause is not the
 * other client's commands but the state they leave: MPD's output drained and idle. Its pipe
 * output (ffmpeg -re here; a fifo output to snapserver alike) then takes ~1.7 s of audio at once
 * (the pipe plus ffmpeg's read-ahead), so a shorter clip is all in the output a few ms after
 * `playid`, and MPD reports the song stopped, without an error, while it is still to be heard.
 * The start confirmation saw the song gone before a status it read showed it decoding. (The
 * bench's cached announcement is 1.73 s: just at that room, hence 1 in 40.)
 *
 * A real mpd; the other client plays a 0.3 s clip and the hub's MpdSpeaker (the driver's own
 * class) a 0.25 s clip straight after its sequence, both from a loopback HTTP server, 12 times.
 * On the code before the fix 18 and 20 of 25 plays failed (two runs): 12 fail it all but surely,
 * in half the CI time (the whole suite is near its 30-minute bound). Every one must start,
 * read as playing when its play resolves, be heard (its tone in the capture), and report its end
 * to a listener that subscribes only once the play resolved (as the announcement scheduler does).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock } from '../../../src/core/clock';
import { MpdSpeaker } from '../../../src/drivers/mpd/speaker';
import type { SpeakerPlayState, StopReason } from '../../../src/drivers/driver';
import { createLogger } from '../../../src/logger';
import { captureFrom, leftChannel, toneWindows } from '../../helpers/audio';
import { labSuite } from '../../helpers/labs';
import { eventually } from '../../helpers/wait';
import { fileSize, mpc, MpdLab, mpdInstalled, mpdStatus, RATE, toneWav } from './harness';

const describeIf = labSuite('the MPD lab', mpdInstalled());

/** Hub plays in a row, each after the other client's sequence (under 1 s each). */
const PLAYS = 12;
/** The other client's song and the hub's two clips, told apart by pitch. */
const OWN_HZ = 330;
const HUB_HZ = [660, 880];
/** A 50 ms window carries a tone when its amplitude reaches this (the tones are 12000 at full volume). */
const HEARD = 3000;

/** Whether `hz` is the loudest of the lab's tones in some 50 ms window of the capture after byte `from`. */
function heard(file: string, from: number, hz: number): boolean {
  const s = leftChannel(captureFrom(file, from, 4), 4);
  return toneWindows(s, RATE, [OWN_HZ, ...HUB_HZ]).some((w) => w[hz] >= HEARD && Object.values(w).every((a) => a <= w[hz]));
}

describeIf("a hub play right after another MPD client's clear, add, play, stop, clear", () => {
  let lab: MpdLab;
  let server: Server;
  let base: string;
  let speaker: MpdSpeaker;

  beforeAll(async () => {
    lab = await MpdLab.create({});
    await lab.start();
    const own = toneWav(0.3, OWN_HZ, 'Own 330');
    const clips = HUB_HZ.map((hz) => toneWav(0.25, hz, `Hub ${hz}`));
    server = createServer((req, res) => {
      const url = req.url ?? '';
      const clip = url.startsWith('/own') ? own : (clips[Number(/^\/clip-(\d+)-/.exec(url)?.[1]) % clips.length] ?? clips[0]);
      res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': clip.length }).end(clip);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    speaker = new MpdSpeaker(
      { host: '127.0.0.1', port: lab.port, name: 'Start MPD', address: `127.0.0.1:${lab.port}` },
      { servers: [], reconnectMinMs: 100, reconnectMaxMs: 1000, requestTimeoutMs: 5000 },
      systemClock,
      createLogger({ level: 'silent' }),
    );
    speaker.start();
    await eventually(() => speaker.available, 10_000, 'the MPD speaker connected');
  }, 30_000);

  afterAll(async () => {
    await speaker?.close();
    await lab?.destroy();
    await new Promise((r) => server?.close(r));
  });

  test(`${PLAYS} plays: each starts, reads as playing, is heard, and reports its end to a listener that came after the play resolved`, async () => {
    const failed: string[] = [];
    for (let i = 0; i < PLAYS; i++) {
      // The other client: its song plays out, then it stops and clears, as the bench's floor does.
      await mpc(lab.port, 'clear', `add ${base}/own-${i}.wav`, 'play');
      await eventually(async () => (await mpdStatus(lab.port)).state === 'stop', 5000, `the other client's song played out (${i})`);
      await mpc(lab.port, 'stop', 'clear');

      const mark = fileSize(lab.out);
      const hz = HUB_HZ[i % HUB_HZ.length];
      try {
        await speaker.play({ url: `${base}/clip-${i}-.wav`, contentType: 'audio/wav' });
      } catch (e) {
        failed.push(`play ${i}: ${(e as Error).message}`);
        continue;
      }
      const atResolve: SpeakerPlayState = speaker.state;
      const end = new Promise<StopReason | undefined>((resolve) => {
        const onState = (state: SpeakerPlayState, reason?: StopReason) => {
          if (state !== 'stopped') return;
          speaker.off('state', onState);
          resolve(reason);
        };
        speaker.on('state', onState);
      });
      expect({ play: i, state: atResolve }).toEqual({ play: i, state: 'playing' });
      await eventually(() => heard(lab.out, mark, hz), 10_000, `the hub's ${hz} Hz clip in the capture (play ${i})`);
      expect({ play: i, end: await end }).toEqual({ play: i, end: 'ended' });
      await speaker.stop();
    }
    expect(failed).toEqual([]);
  }, 90_000);

  test("another client's stop and clear while the hub's song plays is still the speaker stopped by someone else", async () => {
    await mpc(lab.port, 'clear');
    const mark = fileSize(lab.out);
    // Long enough that MPD's output has not taken it all: it is still playing when stopped.
    // Titled as the short clips: with some tag lengths MPD 0.23 reads a tagged WAV over HTTP
    // misaligned (titles 'L' and 'Hub Long' came out as noise here), not what this test is about.
    const long = toneWav(20, HUB_HZ[0], `Hub ${HUB_HZ[0]}`);
    const longServer = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': long.length }).end(long));
    await new Promise<void>((r) => longServer.listen(0, '127.0.0.1', r));
    try {
      await speaker.play({ url: `http://127.0.0.1:${(longServer.address() as AddressInfo).port}/long.wav`, contentType: 'audio/wav' });
      expect(speaker.state).toBe('playing');
      await eventually(
        () => heard(lab.out, mark, HUB_HZ[0]),
        10_000,
        () =>
          `the hub's long tone in the capture (${fileSize(lab.out) - mark} bytes since; ${JSON.stringify(toneWindows(leftChannel(captureFrom(lab.out, mark, 4), 4), RATE, [OWN_HZ, ...HUB_HZ], 500).map((w) => Object.values(w).map(Math.round)))})`,
      );
      const end = new Promise<StopReason | undefined>((resolve) =>
        speaker.on('state', (state, reason) => {
          if (state === 'stopped') resolve(reason);
        }),
      );
      await mpc(lab.port, 'stop', 'clear');
      // As before this change: a stop the hub did not ask for ends the hub's media ('ended'), not a hub stop or an error.
      expect(await end).toBe('ended');
      expect(speaker.state).toBe('stopped');
    } finally {
      speaker.removeAllListeners('state');
      await new Promise((r) => longServer.close(r));
    }
  }, 30_000);
});
