/**
 * Planted secrets never come back out (issue 7 item 7): a hub runs a realistic set of
 * operations — sessions, plays of web media whose URLs carry credentials and tokens (one
 * that plays, ones that fail), TTS through a VoiceRSS endpoint that echoes its key, refused
 * requests with a wrong token, an event stream — and every byte it wrote is searched: the
 * log stream, every HTTP answer, every SSE event.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startHub, TEST_TOKEN, type TestHub, virtualOf } from '../helpers/hub';
import { makeWav } from './util';
import { eventually } from '../helpers/wait';

const PASSWORD = 'PlantedPassw0rd';
const URL_TOKEN = 'PlantedUrlTok3n';
const URL_KEY = 'PlantedUrlK3y';
const SIG = 'PlantedS1gnature';
const AWS_SESSION = 'PlantedAwsSess10n';
const VOICERSS_KEY = 'PlantedVoiceRssK3y';
const WRONG_BEARER = 'PlantedWrongBearer0123456789';

describe('planted secrets never appear in logs, answers or events', () => {
  let h: TestHub;
  let media: Server;
  let voicerss: Server;
  let mediaBase: string;
  const answers: string[] = [];
  let sse = '';
  let sseReq: ReturnType<typeof request> | undefined;
  const sessions: string[] = [];

  beforeAll(async () => {
    const wav = makeWav(30);
    media = createServer((req, res) => {
      // A web server that wants its token (and does not mind the rest).
      if (!req.url?.includes(URL_TOKEN)) {
        res.writeHead(403).end(`forbidden: ${req.url}`);
        return;
      }
      res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': wav.length });
      res.end(wav);
    });
    // A VoiceRSS endpoint that echoes what it got (the key included) in its error text.
    voicerss = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => res.writeHead(200, { 'Content-Type': 'text/plain' }).end(`ERROR: The API key is not available! (${body})`));
    });
    await Promise.all([media, voicerss].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
    mediaBase = `http://127.0.0.1:${(media.address() as AddressInfo).port}`;
    h = await startHub({
      speakers: { virtual: { count: 3 } },
      tts: { provider: 'voicerss', voicerss: { key: VOICERSS_KEY, baseUrl: `http://127.0.0.1:${(voicerss.address() as AddressInfo).port}/` } },
    });
    sessions.push(h.session);
  });

  afterAll(async () => {
    sseReq?.destroy();
    await h.close();
    for (const s of [media, voicerss]) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  async function call(path: string, headers: Record<string, string> = { Authorization: `Bearer ${TEST_TOKEN}` }): Promise<any> {
    const res = await fetch(h.base + path, { headers, signal: AbortSignal.timeout(20_000) });
    const text = await res.text();
    answers.push(text);
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }

  test('a realistic run', async () => {
    // An event stream, authorized the EventSource way (access_token in the query).
    sseReq = request(`${h.base}/api/v1/events?access_token=${TEST_TOKEN}`, (res) => {
      res.setEncoding('utf8');
      res.on('data', (d: string) => (sse += d));
    });
    sseReq.on('error', () => undefined);
    sseReq.end();
    await eventually(() => sse.includes('event: playbackState'), 5000, 'the event stream');

    // More sessions; their tokens appear only in init_session's own answer.
    const extra = await call('/api/v1/init_session');
    sessions.push(extra.SessionToken);
    const s = encodeURIComponent(h.session);
    await call(`/api/v1/set_party_mode?SessionToken=${s}`);
    await call(`/api/v1/set_volume?SessionToken=${s}&Volume=21`);

    // Web media with a token: it plays (the playbackState event carries its URL).
    const good = `${mediaBase}/live.wav?token=${URL_TOKEN}&key=${URL_KEY}`;
    expect(await call(`/api/v1/play_web_media_party_mode?SessionToken=${s}&MediaUrl=${encodeURIComponent(good)}`)).toEqual({ Result: 'true' });
    await eventually(() => sse.includes('PlayerStatePlaying'), 5000, 'playing');
    await call(`/api/v1/playback_status?SessionToken=${s}`);
    await call(`/api/v1/stop_play?SessionToken=${s}`);

    // Credentials in the URL: fetch refuses them; the failure (message, DeviceError events, warn lines) names the URL.
    const withUser = `http://alice:${PASSWORD}@127.0.0.1:${new URL(mediaBase).port}/a.wav?X-Amz-Signature=${SIG}&X-Amz-Security-Token=${AWS_SESSION}`;
    const failed = await call(`/api/v1/play_web_media_party_mode?SessionToken=${s}&MediaUrl=${encodeURIComponent(withUser)}`);
    expect(failed.Result).toBe('false');
    // Forbidden (no token in the URL, a sig instead) and a closed port, sent unencoded.
    await call(`/api/v1/play_web_media_party_mode?SessionToken=${s}&MediaUrl=${mediaBase}/b.wav?sig=${SIG}&access_token=${URL_TOKEN}`);
    await call(`/api/v1/play_web_media_party_mode?SessionToken=${s}&MediaUrl=http://u:${PASSWORD}@127.0.0.1:9/c.wav?token=${URL_TOKEN}`);

    // TTS through the echoing VoiceRSS endpoint: TtsFailed quoting its answer.
    const tts = await call(`/api/v1/play_tts_party_mode?SessionToken=${s}&Text=Hello`);
    expect(tts).toMatchObject({ Result: 'false', ErrorCode: 'TtsFailed' });

    // Refusals: a wrong bearer token; a wrong SessionToken that looks like a real one.
    await call(`/api/v1/device_count?SessionToken=${s}`, { Authorization: `Bearer ${WRONG_BEARER}` });
    await call(`/api/v1/device_count?SessionToken=${s}&token=${URL_TOKEN}`, { Authorization: `Bearer ${WRONG_BEARER}` });
    await call(`/api/v1/nope?SessionToken=${s}`);
    await call(`/v1/device_count?SessionID=${encodeURIComponent(extra.SessionToken)}x`);
    await call(`/api/v1/close_session?SessionToken=${encodeURIComponent(extra.SessionToken)}`);
    await eventually(() => sse.includes('reason":"stopped'), 5000, 'the stop event');

    // A driver reporting a fault whose text quotes the URL (as ffmpeg and renderers do):
    // the DeviceError event's detail is redacted.
    const speaker = virtualOf(h.hub).speakers()[0];
    speaker.emit('state', 'stopped', 'error', `ffmpeg: ${withUser}: Server returned 403 Forbidden (token=${URL_TOKEN})`);
    await eventually(() => sse.includes('DeviceError'), 5000, 'a DeviceError event');
  }, 60_000);

  test('no planted secret appears anywhere', async () => {
    const planted = [TEST_TOKEN, PASSWORD, URL_TOKEN, URL_KEY, SIG, AWS_SESSION, VOICERSS_KEY, WRONG_BEARER, ...sessions];
    const initAnswers = answers.filter((a) => a.includes('"SessionToken"'));
    const outputs: Record<string, string> = {
      log: h.logs.join(''),
      answers: answers.filter((a) => !initAnswers.includes(a)).join('\n'),
      events: sse,
    };
    // The run did produce the output searched: failures were logged, events were sent.
    expect(outputs.log).toMatch(/playback/);
    expect(outputs.events).toMatch(/PlayerStatePlaying.*live\.wav/);
    expect(outputs.events).toMatch(/DeviceError.*Server returned 403/);
    expect(outputs.answers).toMatch(/TtsFailed/);
    const found: string[] = [];
    for (const [where, text] of Object.entries(outputs)) {
      for (const secret of planted) {
        if (text.includes(secret) || text.includes(encodeURIComponent(secret)))
          found.push(`${where}: ${secret} …${text.slice(Math.max(0, text.indexOf(secret) - 120), text.indexOf(secret) + 40)}`);
      }
    }
    expect(found).toEqual([]);
    // What is left is still useful: the host of a failed URL is named, the secret part is not.
    expect(outputs.answers + outputs.log).toContain('[redacted]');
  });
});
