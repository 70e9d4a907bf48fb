/**
 * Every relative link in README.md and docs/**\/*.md resolves: the file exists, and an anchor
 * (`page.md#section`, `#section`) names a heading of that page, by GitHub's rule for heading
 * ids. Links out (http, https, mailto) are not followed: nothing leaves this machine.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ROOT, codeBlocks, docFiles, readDoc } from './helpers/docs';

/** GitHub's heading id: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2 … */
export function headingIds(markdown: string): Set<string> {
  const ids = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutCode(markdown).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const text = m[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link in a heading counts by its text
      .replace(/<[^>]+>/g, '');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    ids.add(n === 0 ? base : `${base}-${n}`);
  }
  return ids;
}

/** The text without its fenced code blocks and inline code (a `[x](y)` there is not a link). */
function withoutCode(markdown: string): string {
  const blocks = codeBlocks(markdown);
  const lines = markdown.split('\n');
  for (const b of blocks) for (let i = b.line - 1; i <= b.line + b.code.split('\n').length && i < lines.length; i++) lines[i] = '';
  return lines.join('\n').replace(/`[^`\n]*`/g, '');
}

/** The relative link targets of a page: [text](target), ![alt](target), and <a href>/<img src>. */
export function links(markdown: string): string[] {
  const text = withoutCode(markdown);
  const found = [...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]);
  found.push(...[...text.matchAll(/<(?:a|img)\s[^>]*(?:href|src)="([^"]+)"/g)].map((m) => m[1]));
  return found.filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

const files = docFiles();

test('the docs tree is there: the front door and its pages', () => {
  expect(files[0]).toBe('README.md');
  expect(files.length).toBeGreaterThan(10);
});

test.each(files.map((f) => [f]))('every relative link in %s resolves (file and anchor)', (file) => {
  const text = readDoc(file);
  const broken: string[] = [];
  for (const link of links(text)) {
    const [target, anchor] = link.split('#') as [string, string | undefined];
    const resolved = target ? path.posix.normalize(path.posix.join(path.posix.dirname(file), decodeURIComponent(target))) : file;
    if (!existsSync(path.join(ROOT, resolved))) {
      broken.push(`${link}: no file ${resolved}`);
      continue;
    }
    if (anchor && resolved.endsWith('.md') && !headingIds(readDoc(resolved)).has(decodeURIComponent(anchor)))
      broken.push(`${link}: ${resolved} has no heading #${anchor}`);
  }
  expect(broken).toEqual([]);
});

test("the heading ids are GitHub's", () => {
  const ids = headingIds(
    "# Zones: every room plays its own thing\n## The hub's link\n## ESPHome / Home Assistant\n## Figures\n### Figures\n```\n# not a heading\n```",
  );
  expect([...ids]).toEqual(['zones-every-room-plays-its-own-thing', 'the-hubs-link', 'esphome--home-assistant', 'figures', 'figures-1']);
});

test('links are found outside code only', () => {
  expect(links('[a](x.md) `[b](y.md)` [c](https://example.org)\n```\n[d](z.md)\n```\n![e](images/p.png)')).toEqual(['x.md', 'images/p.png']);
});
