import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { findDrmProtection, protectedCodec } from '../../src/media/drm';
import { metadataReader } from '../../src/media/metadata-reader';
import { MediaLibrary } from '../../src/media/library';
import { ensureSampleMedia } from '../../src/media/samples';
import { FIXTURES, WARN, captureLogger, noise, renameSampleEntry, tempDir } from './helpers';

/** ASF object GUIDs in their on-disk byte order. */
const ASF_HEADER = Buffer.from('3026b2758e66cf11a6d900aa0062ce6c', 'hex');
const ASF_CONTENT_ENCRYPTION = Buffer.from('fbb3112223bdd211b4b700a0c955fc6e', 'hex');
const ASF_FILE_PROPERTIES = Buffer.from('a1dcab8c47a9cf118ee400c00c205365', 'hex');

/** A minimal ASF header object holding one child object, followed by junk "packets". */
function asfFile(child: Buffer): Buffer {
  const childObject = Buffer.concat([child, Buffer.alloc(8), Buffer.alloc(16)]);
  childObject.writeBigUInt64LE(BigInt(childObject.length), 16);
  const header = Buffer.concat([ASF_HEADER, Buffer.alloc(8), Buffer.from([1, 0, 0, 0, 1, 2]), childObject]);
  header.writeBigUInt64LE(BigInt(header.length), 16);
  return Buffer.concat([header, noise(2048, 'asf')]);
}

describe('DRM detection', () => {
  const tmp = tempDir();
  const dir = path.join(tmp.dir, 'music');
  const plain = path.join(FIXTURES, 'tone.m4a');
  const file = (name: string) => path.join(dir, name);

  beforeAll(() => {
    mkdirSync(dir, { recursive: true });
    const m4a = readFileSync(plain);
    const cenc = readFileSync(path.join(FIXTURES, 'tone-cenc.m4a'));
    copyFileSync(plain, file('plain.m4a'));
    // FairPlay: the AAC sample entry type becomes 'drms'.
    writeFileSync(file('fairplay.m4a'), renameSampleEntry(m4a, 'mp4a', 'drms'));
    writeFileSync(file('fairplay.m4p'), renameSampleEntry(m4a, 'mp4a', 'drms'));
    // A real CENC-encrypted file ('enca' entry with a 'sinf' box), as ffmpeg wrote it.
    copyFileSync(path.join(FIXTURES, 'tone-cenc.m4a'), file('cenc.m4a'));
    // The same with the entry type restored to 'mp4a': only the 'sinf' box tells.
    writeFileSync(file('sinf-only.m4a'), renameSampleEntry(cenc, 'enca', 'mp4a'));
    // .m4p is refused on its name even when the content is not protected.
    copyFileSync(plain, file('renamed.m4p'));
    writeFileSync(file('protected.wma'), asfFile(ASF_CONTENT_ENCRYPTION));
  });
  afterAll(() => tmp.cleanup());

  it('finds no protection in plain files', async () => {
    expect(await findDrmProtection(file('plain.m4a'))).toBeUndefined();
    expect(await findDrmProtection(path.join(FIXTURES, 'untagged-tone.mp3'))).toBeUndefined();
    const [wav] = await ensureSampleMedia(path.join(tmp.dir, 'samples'));
    expect(await findDrmProtection(wav)).toBeUndefined();
    const unprotectedAsf = path.join(tmp.dir, 'plain.wma');
    writeFileSync(unprotectedAsf, asfFile(ASF_FILE_PROPERTIES));
    expect(await findDrmProtection(unprotectedAsf)).toBeUndefined();
    const junk = path.join(tmp.dir, 'junk.m4a');
    writeFileSync(junk, noise(10_000, 'junk'));
    expect(await findDrmProtection(junk)).toBeUndefined();
  });

  it('names the protection it finds', async () => {
    expect(await findDrmProtection(file('fairplay.m4a'))).toBe("MP4 sample entry 'drms' (Apple FairPlay)");
    expect(await findDrmProtection(file('fairplay.m4p'))).toMatch(/\.m4p extension/);
    expect(await findDrmProtection(file('renamed.m4p'))).toMatch(/\.m4p extension/);
    expect(await findDrmProtection(file('cenc.m4a'))).toBe("MP4 sample entry 'enca' (Common Encryption)");
    expect(await findDrmProtection(file('sinf-only.m4a'))).toBe("protection scheme box 'sinf' in MP4 sample entry 'mp4a'");
    expect(await findDrmProtection(file('protected.wma'))).toMatch(/Windows Media DRM/);
  });

  it("reads music-metadata's view of protected sample entries (through the metadata reader process)", async () => {
    const codecs = async (name: string) => (await metadataReader.read(file(name))).codecNames;
    expect(protectedCodec(await codecs('plain.m4a'))).toBeUndefined();
    expect(protectedCodec(await codecs('fairplay.m4a'))).toMatch(/'drms'/);
    expect(protectedCodec(await codecs('cenc.m4a'))).toMatch(/'enca'/);
    // music-metadata does not see the 'sinf' box; that is why the raw check exists.
    expect(protectedCodec(await codecs('sinf-only.m4a'))).toBeUndefined();
  });

  it('the library refuses every protected file with one warning line each and never lists it', async () => {
    const log = captureLogger();
    const library = new MediaLibrary({ folders: [dir], logger: log.logger });
    await library.scan();
    expect(library.list().map((i) => path.basename(i.file))).toEqual(['plain.m4a']);

    const refused = ['cenc.m4a', 'fairplay.m4a', 'fairplay.m4p', 'protected.wma', 'renamed.m4p', 'sinf-only.m4a'];
    const warnings = log.entries().filter((e) => e.level === WARN);
    expect(warnings).toHaveLength(refused.length);
    for (const name of refused) {
      const lines = warnings.filter((w) => w.msg.startsWith(`refused DRM-protected file ${file(name)}: `));
      expect(lines).toHaveLength(1);
      expect(lines[0].file).toBe(file(name));
    }
  });
});
