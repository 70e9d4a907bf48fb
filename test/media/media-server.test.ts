import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { MediaServer } from '../../src/media/media-server';
import { captureLogger, http, noise, tempDir } from './helpers';

describe('MediaServer', () => {
  const tmp = tempDir();
  const log = captureLogger('debug');
  const server = new MediaServer({ logger: log.logger });
  const content = noise(5000, 'track');
  const track = path.join(tmp.dir, 'Sample Track #1.mp3');
  const other = path.join(tmp.dir, 'other.wav');
  let url: string;

  beforeAll(async () => {
    writeFileSync(track, content);
    writeFileSync(other, noise(300, 'other'));
    await server.start();
    url = server.publish(track, 'audio/mpeg');
  });
  afterAll(async () => {
    await server.stop();
    tmp.cleanup();
  });

  const idOf = (u: string) => new URL(u).pathname.split('/')[2];

  it('publishes under an unguessable id, one URL per file', () => {
    expect(server.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(url).toMatch(new RegExp(`^${server.baseUrl}/media/[A-Za-z0-9_-]{22}/Sample%20Track%20%231\\.mp3$`));
    expect(server.publish(track, 'audio/mpeg')).toBe(url);
    expect(server.publish(path.join(tmp.dir, 'x', '..', 'Sample Track #1.mp3'), 'audio/mpeg')).toBe(url);
    const otherUrl = server.publish(other, 'audio/wav');
    expect(idOf(otherUrl)).not.toBe(idOf(url));
  });

  it('serves the whole file with its type, length and DLNA headers', async () => {
    const res = await http(url);
    expect(res.status).toBe(200);
    expect(res.body.equals(content)).toBe(true);
    expect(res.headers['content-type']).toBe('audio/mpeg');
    expect(res.headers['content-length']).toBe('5000');
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(res.headers['contentfeatures.dlna.org']).toBe('DLNA.ORG_OP=01;DLNA.ORG_CI=0;DLNA.ORG_FLAGS=01700000000000000000000000000000');
    expect(res.headers['transfermode.dlna.org']).toBeUndefined();
  });

  it('answers the DLNA transfer mode a renderer asks for', async () => {
    const res = await http(url, { headers: { 'transferMode.dlna.org': 'Streaming', 'getcontentFeatures.dlna.org': '1' } });
    expect(res.status).toBe(200);
    expect(res.headers['transfermode.dlna.org']).toBe('Streaming');
  });

  it('answers HEAD with the headers and no body', async () => {
    const res = await http(url, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBe('5000');
    expect(res.headers['content-type']).toBe('audio/mpeg');
    expect(res.body).toHaveLength(0);
  });

  it('serves a byte range', async () => {
    const res = await http(url, { headers: { Range: 'bytes=100-199' } });
    expect(res.status).toBe(206);
    expect(res.headers['content-range']).toBe('bytes 100-199/5000');
    expect(res.headers['content-length']).toBe('100');
    expect(res.body.equals(content.subarray(100, 200))).toBe(true);
  });

  it('serves a suffix range and an open range', async () => {
    const suffix = await http(url, { headers: { Range: 'bytes=-50' } });
    expect(suffix.status).toBe(206);
    expect(suffix.headers['content-range']).toBe('bytes 4950-4999/5000');
    expect(suffix.body.equals(content.subarray(4950))).toBe(true);

    const open = await http(url, { headers: { Range: 'bytes=4990-' } });
    expect(open.status).toBe(206);
    expect(open.body.equals(content.subarray(4990))).toBe(true);
  });

  it('answers HEAD with a range like GET, without a body', async () => {
    const res = await http(url, { method: 'HEAD', headers: { Range: 'bytes=0-9' } });
    expect(res.status).toBe(206);
    expect(res.headers['content-length']).toBe('10');
    expect(res.body).toHaveLength(0);
  });

  it('answers 416 for an unsatisfiable range', async () => {
    const res = await http(url, { headers: { Range: 'bytes=5000-' } });
    expect(res.status).toBe(416);
    expect(res.headers['content-range']).toBe('bytes */5000');
    expect(res.body).toHaveLength(0);
  });

  it('sends the whole file when If-Range does not match', async () => {
    const stale = await http(url, { headers: { Range: 'bytes=0-9', 'If-Range': '"stale"' } });
    expect(stale.status).toBe(200);
    expect(stale.body).toHaveLength(5000);
    const { headers } = await http(url, { method: 'HEAD' });
    const fresh = await http(url, { headers: { Range: 'bytes=0-9', 'If-Range': String(headers.etag) } });
    expect(fresh.status).toBe(206);
  });

  it('answers an unknown id and any other path with the same bare 404', async () => {
    const unknownId = await http(`${server.baseUrl}/media/${randomBytes(16).toString('base64url')}/Sample%20Track%20%231.mp3`);
    const root = await http(`${server.baseUrl}/`);
    const encoded = await http(server.baseUrl, { rawPath: '/media/..%2F..%2Fetc%2Fpasswd' });
    const dotted = await http(server.baseUrl, { rawPath: `/media/${idOf(url)}/../../etc/passwd` });
    const deeper = await http(server.baseUrl, { rawPath: `/media/${idOf(url)}/x/${encodeURIComponent(path.basename(track))}` });
    for (const res of [unknownId, root, encoded, dotted, deeper]) {
      expect(res.status).toBe(404);
      expect(res.body.toString()).toBe('Not Found\n');
      expect(res.headers['content-type']).toBe('text/plain');
    }
  });

  it('refuses other methods with 405', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS']) {
      const res = await http(url, { method });
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD');
    }
  });

  it('answers 404 when a published file has gone', async () => {
    const gone = path.join(tmp.dir, 'gone.mp3');
    writeFileSync(gone, 'x');
    const goneUrl = server.publish(gone, 'audio/mpeg');
    rmSync(gone);
    expect((await http(goneUrl)).status).toBe(404);
  });

  it('logs requests without the capability ids', () => {
    const requests = log.entries().filter((e) => e.msg === 'media request');
    expect(requests.length).toBeGreaterThan(5);
    expect(requests.some((e) => e.status === 206)).toBe(true);
    const all = log.raw.join('');
    expect(all).not.toContain(idOf(url));
    expect(all).not.toContain(idOf(server.publish(other, 'audio/wav')));
  });
});

describe('MediaServer lifecycle', () => {
  it('advertises the configured host and refuses to publish when stopped', async () => {
    const server = new MediaServer({ advertiseHost: 'speakerhub.local', logger: captureLogger().logger });
    expect(() => server.publish('/tmp/x.mp3', 'audio/mpeg')).toThrow(/not started/);
    await server.start();
    try {
      expect(server.baseUrl).toMatch(/^http:\/\/speakerhub\.local:\d+$/);
      expect(server.publish('/tmp/x.mp3', 'audio/mpeg')).toMatch(/^http:\/\/speakerhub\.local:\d+\/media\/[\w-]{22}\/x\.mp3$/);
    } finally {
      await server.stop();
      await server.stop(); // idempotent
    }
    expect(() => server.baseUrl).toThrow(/not started/);
  });

  it('stops while a client holds a connection open', async () => {
    const tmp = tempDir();
    const server = new MediaServer({ logger: captureLogger().logger });
    await server.start();
    try {
      const file = path.join(tmp.dir, 'a.mp3');
      writeFileSync(file, noise(100, 'a'));
      const res = await fetch(server.publish(file, 'audio/mpeg')); // keep-alive agent
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    } finally {
      await server.stop();
      tmp.cleanup();
    }
  });
});
