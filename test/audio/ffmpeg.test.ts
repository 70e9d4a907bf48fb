/**
 * src/audio/ffmpeg.ts, the one way the hub starts ffmpeg: every decode reads its input the
 * same way (Squeezebox and AirPlay used to miss the URL mapping), and a missing binary is a
 * clear message. Needs no ffmpeg (the decodes themselves are tested in each family's suite).
 */
import { once } from 'node:events';
import { ffmpegInput, startFfmpeg } from '../../src/audio/ffmpeg';

test('an input is read the same way for every decode: scheme mapping, stall timeout for HTTP, start offset', () => {
  expect(ffmpegInput('mms://radio.example/live')).toEqual(['-i', 'mmsh://radio.example/live']);
  expect(ffmpegInput('rstp://cam.example/a', 12.5)).toEqual(['-ss', '12.500', '-i', 'rtsp://cam.example/a']);
  expect(ffmpegInput('http://h/a.mp3', 0)).toEqual(['-rw_timeout', '15000000', '-i', 'http://h/a.mp3']);
  expect(ffmpegInput('/music/a.flac')).toEqual(['-i', '/music/a.flac']);
});

test('a missing ffmpeg binary says which path was tried', async () => {
  const run = startFfmpeg(['-i', '/dev/null'], { ffmpegPath: '/nonexistent/ffmpeg-for-test' });
  const [err] = (await once(run.proc, 'error')) as [Error];
  expect(run.startError(err)).toMatch(/^cannot run ffmpeg \(\/nonexistent\/ffmpeg-for-test\): .*ENOENT/);
  expect(run.lastLine()).toBeUndefined();
});
