import { startHub, type TestHub, TEST_TOKEN } from '../helpers/hub';

describe('methods and validation order', () => {
  let t: TestHub;
  beforeAll(async () => {
    t = await startHub({ speakers: { virtual: { count: 2 } }, tts: { maxTextLength: 50 } });
  });
  afterAll(() => t.close());

  test('HEAD of an operation is refused (405) and does not run it', async () => {
    const res = await fetch(`${t.base}/api/v1/play_tts_party_mode?SessionToken=${t.session}&Text=hello`, {
      method: 'HEAD',
      headers: { Authorization: `Bearer ${TEST_TOKEN}` },
    });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, OPTIONS');
    expect(await t.op('playback_status')).toEqual({ PlaybackState: 'PlayerStateStopped', TimeElapsed: '-1' });
    const post = await fetch(`${t.base}/api/v1/stop_play?SessionToken=${t.session}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TEST_TOKEN}` },
    });
    expect(post.status).toBe(405);
    expect(await post.json()).toMatchObject({ Result: 'false', ErrorCode: 'MethodNotAllowed' });
  });

  test('an over-long Text is TextTooLong (400) even when no speaker is selected', async () => {
    const r = await t.get(`/api/v1/play_tts?SessionToken=${t.session}&Text=${'a'.repeat(51)}`);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ Result: 'false', ErrorCode: 'TextTooLong', Parameter: 'Text' });
    const ok = await t.get(`/api/v1/play_tts?SessionToken=${t.session}&Text=${'a'.repeat(50)}`);
    expect(ok.body).toMatchObject({ ErrorCode: 'NoSpeakerSelected' });
  });
});
