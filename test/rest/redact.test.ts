/**
 * The one redaction rule (src/redact.ts) on the shapes secrets take in the wild.
 */
import { clip, redactText } from '../../src/redact';

test.each([
  ['http://alice:s3cret@radio.example/live.mp3', 'http://[redacted]@radio.example/live.mp3'],
  ['https://token@host/x', 'https://[redacted]@host/x'],
  ['http://h/a.mp3?token=abc&x=1', 'http://h/a.mp3?token=[redacted]&x=1'],
  ['http://h/a.mp3?x=1&key=abc', 'http://h/a.mp3?x=1&key=[redacted]'],
  ['/api/v1/events?access_token=abc', '/api/v1/events?access_token=[redacted]'],
  ['GET /v1/device_count?SessionID=abc HTTP/1.1', 'GET /v1/device_count?SessionID=[redacted] HTTP/1.1'],
  ['x?SessionToken=abc&SesssionToken=def', 'x?SessionToken=[redacted]&SesssionToken=[redacted]'],
  ['s3?X-Amz-Signature=abc&X-Amz-Security-Token=def&X-Amz-Date=1', 's3?X-Amz-Signature=[redacted]&X-Amz-Security-Token=[redacted]&X-Amz-Date=1'],
  ['cdn?sig=abc;apikey=def', 'cdn?sig=[redacted];apikey=[redacted]'],
  ['q?Session%54oken=abc', 'q?Session%54oken=[redacted]'],
  ['Authorization: Bearer abc.def-ghi', 'Authorization: Bearer [redacted]'],
  ['{"url":"http://u:p@h/a?token=t","msg":"play failed"}', '{"url":"http://[redacted]@h/a?token=[redacted]","msg":"play failed"}'],
  ['http://10.0.0.2:8091/media/AbCdEfGhIjKlMnOpQrStUv/song.mp3', 'http://10.0.0.2:8091/media/[redacted]/song.mp3'],
  ['ERROR: key=abc&src=Hello', 'ERROR: key=[redacted]&src=Hello'],
  ['Volume=20 and DeviceID=12345678901234', 'Volume=20 and DeviceID=12345678901234'],
  ['http://h/a.mp3?title=Token%20Ring', 'http://h/a.mp3?title=Token%20Ring'],
])('%s', (input, expected) => {
  expect(redactText(input)).toBe(expected);
});

test('clip() redacts, then cuts untrusted input short and says how long it was', () => {
  const long = `/api/v1/${'x'.repeat(15_000)}?token=abc`;
  const c = clip(long, 100);
  expect(c.length).toBeLessThan(130);
  expect(c.endsWith(`…(${long.length} chars)`)).toBe(true);
  expect(clip('http://u:p@h/', 100)).toBe('http://[redacted]@h/');
});

test.each([
  ['{"msg":"token=abc","x":"a,key=def"}', '{"msg":"token=[redacted]","x":"a,key=[redacted]"}'],
  ['{"msg":"said \\"token=abc\\" twice"}', '{"msg":"said \\"token=[redacted]\\" twice"}'],
  ['failed (key=abc)', 'failed (key=[redacted])'],
])('inside JSON and prose: %s', (input, expected) => {
  expect(redactText(input)).toBe(expected);
  if (input.startsWith('{')) expect(() => JSON.parse(redactText(input))).not.toThrow();
});
